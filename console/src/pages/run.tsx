import { useEffect, useState } from 'preact/hooks';
import { api, json, ok, send } from '../api/client';
import { workflowUrl, type ConsoleSettings } from '../api/session';
import { LIVE, type Entry, type Run } from '../api/types';
import { ApprovalPanel, InputPanel } from '../components/ask-panels';
import { EntryView } from '../components/entry-view';
import { ReplayForm } from '../components/replay-form';
import { RunDiffView } from '../components/run-diff';
import { duration, when } from '../lib/forms';
import { useAction } from '../lib/use-action';
import { useLoad } from '../lib/use-load';
import { useRunStream } from '../lib/run-stream';
import { BASE, Link, navigate, seg } from '../router';

interface Props {
  profile: string;
  task: string;
  run: string;
  settings: ConsoleSettings;
}

/** A run as it happens: its entries from the event stream, its status, usage and duration, and what it waits for. */
export function RunPage({ profile, task, run, settings }: Props) {
  const runPath = `/api/runs/~/${seg(profile)}/${seg(task)}/${seg(run)}`;
  const stream = useRunStream(runPath);
  const record = useLoad(
    () => ok(api.GET('/api/runs/{user}/{profile}/{task}/{run}', { params: { path: { user: '~', profile, task, run } } })),
    // Read again at each status change and at the end, never on a timer: a followed run costs the API its stream only.
    [runPath, stream.changes],
  );
  const status = stream.status ?? record.data?.status ?? 'pending';
  const live = LIVE.includes(status) && !stream.ended;
  const [answered, setAnswered] = useState<string[]>([]);
  const [now, setNow] = useState(Date.now());

  useEffect(() => {
    if (!live) return undefined;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [live]);

  // A closed run's entries come whole with its read (one answer, cached by the API) while its stream replays them
  // one event each: the page shows whichever has more.
  const recorded = record.data && !LIVE.includes(record.data.status) ? ((record.data.results ?? []) as Entry[]) : [];
  const entries = stream.entries.length >= recorded.length ? stream.entries : recorded;
  // The run waits on its last entry when that is a question (as GET /api/approvals/~ lists it).
  const last: Entry | undefined = entries[entries.length - 1];
  const approval = live && last?.approval && !answered.includes(last.approval.id) ? last.approval : undefined;
  const input = live && last?.input && !answered.includes(last.input.id) ? last.input : undefined;

  const { busy, problem, act } = useAction();
  const cancel = () => act(async () => void (await json(await send('POST', `${runPath}/cancel`))));
  const remove = () =>
    act(async () => {
      await json(await send('DELETE', runPath));
      navigate(`${BASE}/tasks/${seg(profile)}/${seg(task)}`);
    });

  const data = record.data;
  const started = data ? Date.parse(data.created_at) : undefined;
  const took = started === undefined ? undefined : (live ? now : Date.parse(data!.modified_at)) - started;
  const temporal = workflowUrl(settings, { profile, task, run });

  return (
    <>
      <p class="crumbs">
        <Link to={`/tasks/${seg(profile)}/${seg(task)}`}>
          Task {task} in {profile}
        </Link>
      </p>
      <h1>Run {run}</h1>
      <p role="status" class={`run-status ${status}`}>
        Status: <strong>{status}</strong>
      </p>
      {record.error && <p role="alert">{record.error}</p>}
      {stream.problem && <p role="alert">{stream.problem}</p>}
      <dl class="facts">
        <dt>Started</dt>
        <dd>{when(data?.created_at)}</dd>
        <dt>Duration</dt>
        <dd>{took === undefined ? '' : `${duration(took)}${live ? ' so far' : ''}`}</dd>
        <dt>Usage</dt>
        <dd>
          {data?.usage
            ? `${data.usage.input_tokens} input tokens, ${data.usage.output_tokens} output tokens, ${data.usage.model_calls} model calls, ${data.usage.tool_calls} tool calls`
            : ''}
        </dd>
        {data?.replay_of && (
          <>
            <dt>Replay of</dt>
            <dd>
              <Link to={`/runs/${seg(profile)}/${seg(task)}/${seg(data.replay_of)}`}>{data.replay_of}</Link>
              {overridden(data.overrides) && <span class="muted"> ({overridden(data.overrides)})</span>}
            </dd>
          </>
        )}
        {temporal && (
          <>
            <dt>Workflow</dt>
            <dd>
              <a href={temporal} target="_blank" rel="noreferrer noopener">
                Open in the Temporal Web UI
              </a>
            </dd>
          </>
        )}
      </dl>
      <p class="actions">
        {live ? (
          <button type="button" disabled={busy} onClick={cancel}>Cancel run</button>
        ) : (
          <button type="button" disabled={busy} onClick={remove}>Delete run</button>
        )}
      </p>
      {problem && <p role="alert">{problem}</p>}
      {approval && <ApprovalPanel key={approval.id} runPath={runPath} approval={approval} onDone={() => setAnswered((now) => [...now, approval.id])} />}
      {input && <InputPanel key={input.id} runPath={runPath} input={input} onDone={() => setAnswered((now) => [...now, input.id])} />}
      {data?.replay_of && !live && (
        <section aria-labelledby="diff-heading">
          <h2 id="diff-heading">Difference from {data.replay_of}</h2>
          <RunDiffView profile={profile} task={task} run={run} />
        </section>
      )}
      <section aria-labelledby="entries-heading">
        <h2 id="entries-heading">Entries</h2>
        <ol class="entries">
          {entries.map((entry, i) => entry && <EntryView key={i} entry={entry} />)}
        </ol>
        {stream.writing && (
          // A region named for what it is, busy while it grows: announced once, not at every delta.
          <section class="entry writing" aria-labelledby="writing-heading" aria-busy="true">
            <p class="what" id="writing-heading">Assistant (writing)</p>
            <pre class="content">{stream.writing}</pre>
          </section>
        )}
      </section>
      {data && !live && (
        <section aria-labelledby="replay-heading">
          <details>
            <summary>
              <h2 id="replay-heading">Replay this run</h2>
            </summary>
            <ReplayForm profile={profile} task={task} run={run} />
          </details>
        </section>
      )}
    </>
  );
}

/** What a replay changes of its original, in a few words ("model gpt-4o, prompt"). */
function overridden(overrides: Run['overrides']): string {
  if (!overrides) return '';
  const parts = [overrides.runner && `runner ${overrides.runner}`, overrides.model && `model ${overrides.model}`, overrides.prompt !== undefined && 'its own prompt', overrides.task_version !== undefined && `task version ${overrides.task_version}`];
  return parts.filter(Boolean).join(', ');
}
