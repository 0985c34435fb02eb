import { api, ok } from '../api/client';
import type { components } from '../api/schema';
import { duration } from '../lib/forms';
import { useLoad } from '../lib/use-load';
import { Link, seg } from '../router';
import { asText } from './entry-view';

type RunDiff = components['schemas']['RunDiff'];
type Side = RunDiff['original'];

const CHANGES: Record<RunDiff['tool_calls'][number]['change'], string> = { same: 'Same', added: 'Added', removed: 'Removed', changed: 'Arguments changed' };

/** A line of a unified diff, classed by what it is (added, removed, a hunk's header, context). */
function lineClass(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('===') || line.startsWith('Index:')) return 'diff-file';
  if (line.startsWith('@@')) return 'diff-hunk';
  if (line.startsWith('+')) return 'diff-add';
  if (line.startsWith('-')) return 'diff-del';
  return 'diff-same';
}

const tokens = (side: Side) => `${side.usage.input_tokens} in, ${side.usage.output_tokens} out`;

/**
 * A closed replay against its original (GET <replay path>/diff): each run's status, usage and duration, the answers'
 * unified diff, and their tool calls side by side. Text nodes only: an answer's markup is shown, never run.
 */
export function RunDiffView({ profile, task, run }: { profile: string; task: string; run: string }) {
  const loaded = useLoad(() => ok(api.GET('/api/runs/{user}/{profile}/{task}/{run}/diff', { params: { path: { user: '~', profile, task, run } } })), [profile, task, run]);
  if (loaded.error) return <p role="alert">{loaded.error}</p>;
  const diff = loaded.data;
  if (!diff) return <p role="status">Loading the difference…</p>;
  const sides: Array<[string, Side]> = [
    ['Original', diff.original],
    ['Replay', diff.replay],
  ];
  return (
    <>
      <table class="diff-sides">
        <caption>The two runs</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Status</th>
            <th scope="col">Tokens</th>
            <th scope="col">Tool calls</th>
            <th scope="col">Duration</th>
          </tr>
        </thead>
        <tbody>
          {sides.map(([label, side]) => (
            <tr key={label}>
              <th scope="row">
                {label}: <Link to={`/runs/${seg(profile)}/${seg(task)}/${seg(side.name)}`}>{side.name}</Link>
              </th>
              <td>{side.status}</td>
              <td>{tokens(side)}</td>
              <td>{side.usage.tool_calls}</td>
              <td>{duration(side.duration_ms)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Answer</h3>
      {diff.answer_diff === null ? (
        <p>The answers differ too much to compare line by line.</p>
      ) : diff.original.answer === diff.replay.answer ? (
        <p>The same answer.</p>
      ) : (
        <pre class="content diff" aria-label="The answers' unified diff">
          {diff.answer_diff.split('\n').map((line, i) => (
            <span key={i} class={lineClass(line)}>
              {line}
              {'\n'}
            </span>
          ))}
        </pre>
      )}
      <h3>Tool calls</h3>
      {diff.tool_calls.length === 0 ? (
        <p>Neither run called a tool.</p>
      ) : (
        <table class="diff-calls">
          <thead>
            <tr>
              <th scope="col">Tool</th>
              <th scope="col">Change</th>
              <th scope="col">Original's arguments</th>
              <th scope="col">Replay's arguments</th>
            </tr>
          </thead>
          <tbody>
            {diff.tool_calls.map((call, i) => (
              <tr key={i} class={`change-${call.change}`}>
                <td>{call.tool}</td>
                <td>
                  {CHANGES[call.change]}
                  {call.replayed ? ' (recorded result)' : ''}
                </td>
                <td>{call.original_arguments === undefined ? '' : <code>{asText(call.original_arguments)}</code>}</td>
                <td>{call.replay_arguments === undefined ? '' : <code>{asText(call.replay_arguments)}</code>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
