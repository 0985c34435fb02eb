import { recordProgress } from '../src/runs/recorder';
import { findRun, type RunProgress, type RunRecord } from '../src/store/runs';
import { maxTokensFor, type TaskVersionRecord } from '../src/store/tasks';
import { LEVEL } from '../src/contract/constants';
import { modelDeprecation } from '../src/model-deprecations';
import { runFailure } from '../src/contract/failures';
import type { HeldEntry, Message, RunIdentity, RunRef, Runner, StartedRun, Text, Turn } from '../src/contract/types';
import type { ActivityDeps } from './deps';
import type { RunContentCache } from './run-content-cache';
import { TemplateFailure } from './template/sandbox';
import { checkToolCount, listProfileTools } from './tools';

/** Tool specs go to every model call: inline only when they are small, else stored once and referred to. */
const TOOL_SPECS_INLINE_BYTES = 8 * 1024;

export interface PrepareInput {
  run: RunRef;
  identity: RunIdentity;
  taskId: string;
  taskVersion: number;
  /** The trigger data when small; else read from the run record. */
  payload?: Record<string, unknown>;
  /**
   * When the run started (the workflow's clock): the entries' time. Given, a preparation made again (its first call's
   * outcome unheard) writes the very entries the first one did. Absent in runs started before it: now.
   */
  at?: number;
  /** The run is a replay (RunInput `replay`): its record's replay settings apply (`replayed`). */
  replay?: true;
}

/**
 * A run prepared but not yet recorded: what its preparation found (`started`, what the workflow is told), and the
 * write that records it (`open`).
 */
export interface Opening {
  started: StartedRun;
  /** The write `open` makes: `running`, the first entries (`started.entries`) and the prompt as message 0. */
  progress: RunProgress & { messages: { from: 0; items: Message[] } };
  /** The prompt, resolved: what the first model call is given (the store has it only once `open` has written it). */
  conversation: Turn[];
  /**
   * Records the run as `running` with its first entries and the prompt as message 0, in one write; throws RunClosed
   * when the record is closed (nothing written).
   */
  open(): Promise<void>;
}

/**
 * The run's preparation, done by its first model call: expands the prompt (in a worker thread, within
 * TEMPLATE_TIMEOUT_MS) and lists the profile's tools; the write of it is left to the caller (`Opening.open`), which
 * may make it with the run's end (run-activities.ts). Template failures are the run's (listed failures).
 */
export function createPrepare(parts: {
  deps: ActivityDeps;
  contents: RunContentCache;
  loadVersion: (taskId: string, version: number) => Promise<TaskVersionRecord>;
  store: (run: RunRef, slot: string, text: string, limit?: number) => Promise<Text>;
}) {
  const { deps, contents, loadVersion, store } = parts;
  const { models } = deps.db;
  return async (input: PrepareInput): Promise<Opening> => {
    const record = input.replay || !input.payload ? await findRun(models, input.run.id) : undefined;
    if (record === null) throw runFailure('TaskGone', 'the run was deleted before it started');
    const version = replayed(await loadVersion(input.taskId, input.taskVersion), record?.replay);
    const payload = input.payload ?? (JSON.parse(record!.payload_json) as Record<string, unknown>);
    let expanded: { prompt: string; missing: string[] };
    try {
      expanded = await deps.templates.expand(version.prompt, payload);
    } catch (err) {
      if (!(err instanceof TemplateFailure)) throw err;
      if (err.kind === 'timeout') throw runFailure('TemplateTimeout', err.message);
      if (err.kind === 'too_large') throw runFailure('PromptTooLarge', err.message);
      throw runFailure('BadTemplate', `the prompt template cannot be expanded: ${err.message}`);
    }
    const tools = await listProfileTools(models, input.identity.owner, input.identity.profile);
    checkToolCount(version.runner, tools);
    const prompt = await store(input.run, 'prompt', expanded.prompt);
    const toolSpecs = await store(input.run, 'tools', JSON.stringify(tools), TOOL_SPECS_INLINE_BYTES);
    const now = input.at ?? Date.now();
    const entries: HeldEntry[] = [{ msg: 'run started', time: now, level: LEVEL.info }];
    // Once per run, in its own log: the task's model has an announced end of life (src/model-deprecations.ts).
    const deprecated = modelDeprecation(version.runner, version.model);
    if (deprecated) entries.push({ msg: deprecated.message, time: now, level: LEVEL.warn });
    for (const name of expanded.missing) entries.push({ msg: `placeholder {{ ${name} }} has no value in the trigger data; it expands to empty`, time: now, level: LEVEL.warn });
    if (tools.length) entries.push({ msg: `tools offered: ${tools.map((t) => t.name).join(', ')}`, time: now, level: LEVEL.info });
    entries.push({ msg: 'prompt', exchange: { role: 'user', content: prompt } });
    const messages: Message[] = [{ role: 'user', text: prompt }];
    const started: StartedRun = {
      prepared: {
        runner: version.runner,
        model: version.model,
        maxTokens: maxTokensFor(deps.config, version) ?? null,
        tools: tools.map(({ name, install, tool, approval, mcp, idempotent, task }) => ({ name, install, tool, ...(approval ? { approval } : {}), ...(mcp ? { mcp } : {}), ...(idempotent ? { idempotent } : {}), ...(task ? { task } : {}) })),
        toolSpecs,
        ...(record?.replay ? { replayTools: record.replay.tools } : {}),
      },
      entries,
      at: now,
      prompt,
    };
    const progress = { status: 'running' as const, modifiedAt: now, entries: { from: 0, items: entries }, messages: { from: 0 as const, items: messages } };
    const open = async () => {
      // A run closed before its workflow got here (cancelled before it started, while a trigger started it) stays closed.
      if (!(await recordProgress(models, input.run, progress)).written) throw runFailure('RunClosed', 'the run had already ended');
      await contents.saved(input.run, 0, messages);
    };
    return { started, progress, conversation: [{ role: 'user', text: expanded.prompt }], open };
  };
}

/**
 * The task version as a replay runs it (docs/replays.md): its runner, model and prompt template replaced by the
 * replay's overrides (another task version is the record's own `task_version`). Without replay settings, `version`.
 */
function replayed(version: TaskVersionRecord, replay: RunRecord['replay']): TaskVersionRecord {
  if (!replay) return version;
  const { runner, model, prompt } = replay.overrides ?? {};
  return { ...version, ...(runner ? { runner: runner as Runner } : {}), ...(model ? { model } : {}), ...(typeof prompt === 'string' ? { prompt } : {}) };
}
