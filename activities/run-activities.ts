import { ApplicationFailure, Context } from '@temporalio/activity';
import { findTaskVersion, maxTokensFor, openTaskKey, type TaskVersionRecord } from '../src/store/tasks';
import { runWorkflowId } from '../src/temporal/ids';
import { createTtlCache } from '../src/ttl-cache';
import { LEVEL, type CallToolResult, type ModelAnswer, type ResultEntry, type RunIdentity, type RunState, type Runner, type StartedRun, type ToolSpec, type Turn } from '../workflows/types';
import type { ActivityDeps, ToolCallInput } from './index';
import { callAnthropic } from './providers/anthropic';
import { callOpenAI } from './providers/openai';
import { expandTemplate } from './template';
import { listProfileTools } from './tools';

const VERSION_CACHE_MS = 60_000;

/** The activities of a run. Keys are loaded and decrypted only inside `callModel`, used, and dropped. */
export function createRunActivities(deps: ActivityDeps) {
  const { models } = deps.db;

  // A task version never changes once saved, so a run's several reads of it (prepare, then every model call) and
  // the runs of a busy task share one database read. Bounded in size and age (a deleted task's runs are cancelled).
  const versions = createTtlCache<TaskVersionRecord>(VERSION_CACHE_MS, { maxEntries: 1_000 });
  const loadVersion = (taskId: string, version: number) =>
    versions.get(`${taskId}:${version}`, async () => {
      const found = await findTaskVersion(models, taskId, version);
      if (!found) throw ApplicationFailure.nonRetryable(`task version ${version} no longer exists (the task was deleted)`, 'TaskGone');
      return found;
    });

  return {
    /**
     * Local activity: expands the prompt, lists the profile's tools, and records the run as `running` with its first
     * entries (one step, so a run costs one local activity fewer). The workflow takes the entries as they are.
     */
    async prepareRun(input: { taskId: string; taskVersion: number; payload: Record<string, unknown>; identity: RunIdentity }): Promise<StartedRun> {
      const version = await loadVersion(input.taskId, input.taskVersion);
      let expanded: { prompt: string; missing: string[] };
      try {
        expanded = expandTemplate(version.prompt, input.payload);
      } catch (err) {
        throw ApplicationFailure.nonRetryable(`the prompt template cannot be expanded: ${(err as Error).message}`, 'BadTemplate');
      }
      const runner = version.runner;
      const tools = await listProfileTools(models, input.identity.owner, input.identity.profile);
      const now = Date.now();
      const entries: ResultEntry[] = [{ msg: 'run started', time: now, level: LEVEL.info }];
      for (const name of expanded.missing) entries.push({ msg: `placeholder {{ ${name} }} has no value in the trigger data; it expands to empty`, time: now, level: LEVEL.warn });
      if (tools.length) entries.push({ msg: `tools offered: ${tools.map((t) => t.name).join(', ')}`, time: now, level: LEVEL.info });
      entries.push({ msg: 'prompt', exchange: { role: 'user', content: expanded.prompt } });
      await recordState(input.identity, { status: 'running', results: entries, modifiedAt: now });
      return {
        prepared: {
          runner,
          model: version.model,
          maxTokens: maxTokensFor(deps.config, version) ?? null,
          prompt: expanded.prompt,
          tools,
        },
        entries,
        at: now,
      };
    },

    /** Local activity: the run record follows every status change (not every entry). */
    async recordRun(input: { identity: RunIdentity; state: RunState }): Promise<void> {
      await recordState(input.identity, input.state);
    },

    /** Remote activity: one provider call, heartbeating while it waits so a lost worker is noticed. */
    async callModel(input: {
      taskId: string;
      taskVersion: number;
      runner: Runner;
      model: string;
      maxTokens: number | null;
      conversation: Turn[];
      tools: ToolSpec[];
    }): Promise<ModelAnswer> {
      const version = await loadVersion(input.taskId, input.taskVersion);
      let key: string;
      try {
        key = openTaskKey(deps.keyring, deps.config, version);
      } catch (err) {
        throw ApplicationFailure.nonRetryable((err as Error).message, 'NoKey');
      }
      return heartbeating(async (signal) => {
        const call = { key, model: input.model, maxTokens: input.maxTokens, conversation: input.conversation, tools: input.tools, timeoutMs: deps.config.PROVIDER_TIMEOUT_MS, signal };
        return input.runner === 'openai'
          ? callOpenAI({ ...call, baseURL: deps.config.OPENAI_BASE_URL })
          : callAnthropic({ ...call, baseURL: deps.config.ANTHROPIC_BASE_URL, maxTokens: input.maxTokens ?? deps.config.ANTHROPIC_MAX_TOKENS });
      });
    },

    /** Remote activity: one tool call in its servlet's sandbox (heartbeating too). Servlet faults come back as `isError` results. */
    async callTool(input: ToolCallInput): Promise<CallToolResult> {
      return heartbeating(() => deps.callTool(input));
    },
  };

  /** Runs a remote activity's work, heartbeating while it waits so a lost worker is noticed within the heartbeat timeout. */
  async function heartbeating<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctx = Context.current();
    const beat = setInterval(() => ctx.heartbeat(), Math.max(200, Math.min(5_000, (ctx.info.heartbeatTimeoutMs ?? 15_000) / 3)));
    try {
      return await work(ctx.cancellationSignal);
    } finally {
      clearInterval(beat);
    }
  }

  /** The only write of a run record after its insert (the workflow's activities are its one writer; see models.ts). */
  async function recordState(identity: RunIdentity, state: RunState) {
    // With the driver (the fields are the run schema's, typed here): no mongoose casting of the results per write.
    await models.Run.collection.updateOne(
      { _id: runWorkflowId(identity) as never },
      { $set: { status: state.status, results: state.results, modified_at: new Date(state.modifiedAt), started: true } },
    );
  }
}
