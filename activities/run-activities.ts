import { ApplicationFailure, Context } from '@temporalio/activity';
import { Types } from 'mongoose';
import { open } from '../src/store/secrets';
import { runWorkflowId } from '../src/temporal/ids';
import { LEVEL, type CallToolResult, type ModelAnswer, type ResultEntry, type RunIdentity, type RunState, type Runner, type StartedRun, type ToolSpec, type Turn } from '../workflows/types';
import type { ActivityDeps } from './index';
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
  const versions = new Map<string, { at: number; doc: Promise<VersionDoc> }>();
  type VersionDoc = NonNullable<Awaited<ReturnType<typeof findVersion>>>;
  const findVersion = (taskId: string, version: number) => models.TaskVersion.findOne({ task_id: new Types.ObjectId(taskId), version }).lean();

  async function loadVersion(taskId: string, version: number): Promise<VersionDoc> {
    const key = `${taskId}:${version}`;
    const hit = versions.get(key);
    if (hit && Date.now() - hit.at < VERSION_CACHE_MS) return hit.doc;
    const doc = findVersion(taskId, version).then((d) => {
      if (!d) throw ApplicationFailure.nonRetryable(`task version ${version} no longer exists (the task was deleted)`, 'TaskGone');
      return d;
    });
    versions.set(key, { at: Date.now(), doc });
    doc.catch(() => versions.delete(key));
    if (versions.size > 1_000) versions.delete(versions.keys().next().value!);
    return doc;
  }

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
      const runner = version.runner as Runner;
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
          maxTokens: version.max_tokens ?? (runner === 'anthropic' ? deps.config.ANTHROPIC_MAX_TOKENS : null),
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
      const key = version.key?.data ? open(deps.keyring, version.key as Parameters<typeof open>[1]) : operatorKey(input.runner);
      if (!key) {
        throw ApplicationFailure.nonRetryable(
          `no API key for ${input.runner}: set settings.key on the task or ${input.runner === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY'} for the service`,
          'NoKey',
        );
      }
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), Math.max(200, Math.min(5_000, (ctx.info.heartbeatTimeoutMs ?? 15_000) / 3)));
      try {
        const call = {
          key,
          model: input.model,
          maxTokens: input.maxTokens,
          conversation: input.conversation,
          tools: input.tools,
          timeoutMs: deps.config.PROVIDER_TIMEOUT_MS,
          signal: ctx.cancellationSignal,
        };
        return input.runner === 'openai'
          ? await callOpenAI({ ...call, baseURL: deps.config.OPENAI_BASE_URL })
          : await callAnthropic({ ...call, baseURL: deps.config.ANTHROPIC_BASE_URL, maxTokens: input.maxTokens ?? deps.config.ANTHROPIC_MAX_TOKENS });
      } finally {
        clearInterval(beat);
      }
    },

    /** Remote activity: one tool call in its servlet's sandbox. Servlet faults come back as `isError` results. */
    async callTool(input: { owner: string; profile: string; install: string; tool: string; arguments: Record<string, unknown> }): Promise<CallToolResult> {
      if (!deps.callTool) return { isError: true, content: [{ type: 'text', text: 'tools are not available on this worker' }] };
      return deps.callTool(input);
    },
  };

  /** The only write of a run record after its insert (the workflow's activities are its one writer; see models.ts). */
  async function recordState(identity: RunIdentity, state: RunState) {
    // With the driver (the fields are the run schema's, typed here): no mongoose casting of the results per write.
    await models.Run.collection.updateOne(
      { _id: runWorkflowId(identity) as never },
      { $set: { status: state.status, results: state.results, modified_at: new Date(state.modifiedAt), started: true } },
    );
  }

  function operatorKey(runner: Runner): string | undefined {
    return runner === 'openai' ? deps.config.OPENAI_API_KEY : deps.config.ANTHROPIC_API_KEY;
  }
}
