import { useState } from 'preact/hooks';
import { useAction } from '../lib/use-action';
import { json, send } from '../api/client';
import type { Entry, JsonSchema } from '../api/types';
import { asText } from './entry-view';

/** "Approve" / "Deny" (with "Reason") for the tool call a run waits on. */
export function ApprovalPanel({ runPath, approval, onDone }: { runPath: string; approval: NonNullable<Entry['approval']>; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const { busy, problem, act } = useAction();
  const decide = (approve: boolean) =>
    act(async () => {
      // The field as it is now, whatever the last render saw.
      const given = ((document.getElementById('deny-reason') as HTMLInputElement | null)?.value ?? reason).trim();
      await json(await send('POST', `${runPath}/approvals/${encodeURIComponent(approval.id)}`, { approve, ...(given ? { reason: given } : {}) }));
      onDone();
    });
  return (
    <section class="ask-panel" aria-labelledby="approval-heading">
      <h2 id="approval-heading">Approval needed: {approval.tool}</h2>
      <p>The model wants to call this tool with these arguments:</p>
      <pre class="content">{asText(approval.arguments)}</pre>
      <p>
        <label for="deny-reason">Reason</label>
        <input id="deny-reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} maxLength={2000} />
      </p>
      {problem && <p role="alert">{problem}</p>}
      <button type="button" disabled={busy} onClick={() => decide(true)}>Approve</button>{' '}
      <button type="button" disabled={busy} onClick={() => decide(false)}>Deny</button>
    </section>
  );
}

type Value = string | number | boolean | string[];

/** A form field for each property of a (flat) MCP input schema. */
function Field({ name, schema, required, value, set }: { name: string; schema: JsonSchema; required: boolean; value: Value | undefined; set: (v: Value | undefined) => void }) {
  const id = `input-${name}`;
  const label = `${schema.title ?? name}${required ? ' (required)' : ''}`;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const options = schema.enum ?? (schema as { oneOf?: Array<{ const: unknown }> }).oneOf?.map((o) => o.const);
  const hint = schema.description ? <small id={`${id}-hint`}>{schema.description}</small> : null;
  if (type === 'boolean') {
    return (
      <p>
        <input id={id} type="checkbox" checked={value === true} onChange={(e) => set(e.currentTarget.checked)} aria-describedby={hint ? `${id}-hint` : undefined} />
        <label for={id}>{label}</label> {hint}
      </p>
    );
  }
  if (type === 'array') {
    const items = (schema.items?.enum ?? (schema.items as { anyOf?: Array<{ const: unknown }> } | undefined)?.anyOf?.map((o) => o.const) ?? []).map(String);
    const chosen = Array.isArray(value) ? value : [];
    return (
      <fieldset>
        <legend>{label}</legend>
        {hint}
        {items.map((item) => (
          <p key={item}>
            <input id={`${id}-${item}`} type="checkbox" checked={chosen.includes(item)} onChange={(e) => set(e.currentTarget.checked ? [...chosen, item] : chosen.filter((c) => c !== item))} />
            <label for={`${id}-${item}`}>{item}</label>
          </p>
        ))}
      </fieldset>
    );
  }
  if (options) {
    return (
      <p>
        <label for={id}>{label}</label>
        <select id={id} required={required} value={value === undefined ? '' : String(value)} onChange={(e) => set(e.currentTarget.value || undefined)}>
          <option value="">(choose)</option>
          {options.map((o) => <option key={String(o)} value={String(o)}>{String(o)}</option>)}
        </select>
        {hint}
      </p>
    );
  }
  const numeric = type === 'number' || type === 'integer';
  const common = {
    id,
    required,
    value: value === undefined ? '' : String(value),
    'aria-describedby': hint ? `${id}-hint` : undefined,
    onInput: (e: Event) => {
      const raw = (e.currentTarget as HTMLInputElement).value;
      set(raw === '' ? undefined : numeric ? Number(raw) : raw);
    },
  };
  return (
    <p>
      <label for={id}>{label}</label>
      {numeric ? <input type="number" step={type === 'integer' ? 1 : 'any'} {...common} /> : <input type="text" {...common} />}
      {hint}
    </p>
  );
}

/** An MCP server's question (docs/mcp.md, "Inputs"): a form from its schema, or the address it sends the person to. */
export function InputPanel({ runPath, input, onDone }: { runPath: string; input: NonNullable<Entry['input']>; onDone: () => void }) {
  const schema = input.schema ?? {};
  const properties = Object.entries(schema.properties ?? {});
  const [values, setValues] = useState<Record<string, Value | undefined>>(() =>
    Object.fromEntries(properties.filter(([, s]) => s.default !== undefined).map(([name, s]) => [name, s.default as Value])),
  );
  const { busy, problem, act } = useAction();
  const answer = (action: 'accept' | 'decline' | 'cancel') =>
    act(async () => {
      const content = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
      await json(await send('POST', `${runPath}/inputs/${encodeURIComponent(input.id)}`, action === 'accept' && input.schema ? { action, content } : { action }));
      onDone();
    });
  return (
    <section class="ask-panel" aria-labelledby="input-heading">
      <h2 id="input-heading">Input needed: {input.tool}</h2>
      <p>{input.message}</p>
      <form
        aria-label="Answer"
        onSubmit={(e) => {
          e.preventDefault();
          void answer('accept');
        }}
      >
        {input.url !== undefined && (
          <p>
            The server asks you to go to this address (copy it; check it first): <code>{input.url}</code>
          </p>
        )}
        {properties.map(([name, s]) => (
          <Field key={name} name={name} schema={s} required={schema.required?.includes(name) ?? false} value={values[name]} set={(v) => setValues((now) => ({ ...now, [name]: v }))} />
        ))}
        {problem && <p role="alert">{problem}</p>}
        <button type="submit" disabled={busy}>Send answer</button>{' '}
        <button type="button" disabled={busy} onClick={() => answer('decline')}>Decline</button>{' '}
        <button type="button" disabled={busy} onClick={() => answer('cancel')}>Cancel question</button>
      </form>
    </section>
  );
}
