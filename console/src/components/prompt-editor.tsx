import { useState } from 'preact/hooks';
import { placeholders, preview } from '../lib/placeholders';

/** The prompt's text area, the placeholders it uses, sample values for them and the prompt they give. */
export function PromptEditor({ initial }: { initial: string }) {
  const [prompt, setPrompt] = useState(initial);
  const [samples, setSamples] = useState<Record<string, string>>({});
  const names = placeholders(prompt);
  const shown = preview(prompt, samples);
  return (
    <fieldset>
      <legend>Prompt</legend>
      <label for="task-prompt">Prompt template (Mustache)</label>
      <textarea id="task-prompt" name="prompt" rows={8} required value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
      <p id="placeholders">
        Placeholders:{' '}
        {names === undefined ? 'the template does not parse' : names.length === 0 ? 'none' : names.map((n, i) => <code key={n}>{`${i ? ', ' : ''}{{${n}}}`}</code>)}
      </p>
      {names && names.length > 0 && (
        <div class="samples">
          {names.map((name) => (
            <p key={name}>
              <label for={`sample-${name}`}>Sample value for {name}</label>
              <input
                id={`sample-${name}`}
                value={samples[name] ?? ''}
                onInput={(e) => {
                  const value = e.currentTarget.value;
                  setSamples((now) => ({ ...now, [name]: value }));
                }}
              />
            </p>
          ))}
        </div>
      )}
      <h3 id="preview-heading">Preview</h3>
      {'text' in shown ? (
        <pre class="preview" aria-labelledby="preview-heading">{shown.text}</pre>
      ) : (
        <p role="alert">The template does not parse: {shown.error}</p>
      )}
    </fieldset>
  );
}
