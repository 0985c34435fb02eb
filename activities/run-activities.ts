import { Context } from '@temporalio/activity';
import { storeText } from '../src/store/run-content';
import { findRun, recordProgress, type RunProgress } from '../src/store/runs';
import { findTaskVersion, maxTokensFor, openTaskKey, type TaskVersionRecord } from '../src/store/tasks';
import { createTtlCache } from '../src/ttl-cache';
import { LEVEL } from '../workflows/constants';
import { runFailure } from '../workflows/failures';
import type { HeldEntry, Message, ModelTurn, RunIdentity, RunRef, Runner, StartedRun, Text, ToolOutcome, ToolSpec } from '../workflows/types';
import type { ActivityDeps } from './deps';
import { callAnthropic } from './providers/anthropic';
import { callOpenAI } from './providers/openai';
import { createRunContentCache } from './run-content-cache';
import { TemplateFailure } from './template/sandbox';
import type { ToolCallInput } from './tool-call';
import { listProfileTools } from './tools';

const VERSION_CACHE_MS = 60_000;
/** Tool specs go to every model call: inline only when they are small, else stored once and referred to. */
const TOOL_SPECS_INLINE_BYTES = 8 * 1024;

/**
 * The activities of a run. Keys are loaded and decrypted only inside `callModel`, used, and dropped. Whatever an
 * activity produces above RUN_INLINE_BYTES (the prompt, an answer, a tool's result) it stores itself and returns as
 * a reference, so history holds references; the conversation is read from the store by the model call.
 */
export function createRunActivities(deps: ActivityDeps) {
  const { models } = deps.db;
  const inline = deps.config.RUN_INLINE_BYTES;
  const contents = createRunContentCache(models, deps.config.CONTENT_CACHE_MB * 1024 * 1024);

  // A task version never changes once saved, so a run's several reads of it (prepare, then every model call) and
  // the runs of a busy task share one database read. Bounded in size and age (a deleted task's runs are cancelled).
  const versions = createTtlCache<TaskVersionRecord>(VERSION_CACHE_MS, { maxEntries: 1_000 });
  const loadVersion = (taskId: string, version: number) =>
    versions.get(`${taskId}:${version}`, async () => {
      const found = await findTaskVersion(models, taskId, version);
      if (!found) throw runFailure('TaskGone', `task version ${version} no longer exists (the task was deleted)`);
      return found;
    });

  /** Stores `text` when it is large, under a key unique to this activity execution (stable across its retries). */
  const store = async (run: RunRef, slot: string, text: string, limit = inline): Promise<Text> => {
    const { workflowExecution, activityId } = Context.current().info;
    const stored = await storeText(models, run.id, `${workflowExecution?.runId}.${activityId}.${slot}`, text, limit);
    contents.remember(stored, text);
    return stored;
  };

  return {
    /**
     * Local activity: expands the prompt (in a worker thread, within TEMPLATE_TIMEOUT_MS), lists the profile's
     * tools, and records the run as `running` with its first entries and the prompt as message 0 (one write).
     */
    async prepareRun(input: { run: RunRef; identity: RunIdentity; taskId: string; taskVersion: number; payload?: Record<string, unknown> }): Promise<StartedRun> {
      const version = await loadVersion(input.taskId, input.taskVersion);
      const payload = input.payload ?? (await storedPayload(input.run.id));
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
      const prompt = await store(input.run, 'prompt', expanded.prompt);
      const toolSpecs = await store(input.run, 'tools', JSON.stringify(tools), TOOL_SPECS_INLINE_BYTES);
      const now = Date.now();
      const entries: HeldEntry[] = [{ msg: 'run started', time: now, level: LEVEL.info }];
      for (const name of expanded.missing) entries.push({ msg: `placeholder {{ ${name} }} has no value in the trigger data; it expands to empty`, time: now, level: LEVEL.warn });
      if (tools.length) entries.push({ msg: `tools offered: ${tools.map((t) => t.name).join(', ')}`, time: now, level: LEVEL.info });
      entries.push({ msg: 'prompt', exchange: { role: 'user', content: prompt } });
      const messages: Message[] = [{ role: 'user', text: prompt }];
      await recordProgress(models, input.run.id, { status: 'running', modifiedAt: now, entries: { from: 0, items: entries }, messages: { from: 0, items: messages } });
      await contents.saved(input.run, 0, messages);
      return {
        prepared: {
          runner: version.runner,
          model: version.model,
          maxTokens: maxTokensFor(deps.config, version) ?? null,
          tools: tools.map(({ name, install, tool }) => ({ name, install, tool })),
          toolSpecs,
        },
        entries,
        at: now,
      };
    },

    /** Local activity: the workflow's write of its run (status, new entries, new messages). */
    async recordRun(input: RunProgress & { run: RunRef }): Promise<void> {
      const { run, ...progress } = input;
      await recordProgress(models, run.id, progress);
      if (progress.messages) await contents.saved(run, progress.messages.from, progress.messages.items);
    },

    /**
     * Remote activity: one provider call with the run's first `messages` messages, heartbeating while it waits so a
     * lost worker is noticed. Large parts of the answer are stored and returned as references.
     */
    async callModel(input: {
      run: RunRef;
      taskId: string;
      taskVersion: number;
      runner: Runner;
      model: string;
      maxTokens: number | null;
      toolSpecs: Text;
      messages: number;
    }): Promise<ModelTurn> {
      const version = await loadVersion(input.taskId, input.taskVersion);
      let key: string;
      try {
        key = openTaskKey(deps.keyring, deps.config, version);
      } catch (err) {
        throw runFailure('NoKey', (err as Error).message);
      }
      const conversation = await contents.conversation(input.run, input.messages);
      const tools = JSON.parse(await contents.text(input.toolSpecs)) as ToolSpec[];
      const answer = await heartbeating(async (signal) => {
        const call = { key, fetch: deps.providerFetch, model: input.model, maxTokens: input.maxTokens, conversation, tools, timeoutMs: deps.config.PROVIDER_TIMEOUT_MS, signal };
        return input.runner === 'openai'
          ? callOpenAI({ ...call, baseURL: deps.config.OPENAI_BASE_URL })
          : callAnthropic({ ...call, baseURL: deps.config.ANTHROPIC_BASE_URL, maxTokens: input.maxTokens ?? deps.config.ANTHROPIC_MAX_TOKENS });
      });
      return {
        text: await store(input.run, 'text', answer.text),
        toolCalls: await Promise.all(
          answer.toolCalls.map(async (call, i) => ({
            id: call.id,
            name: call.name,
            arguments: await store(input.run, `args${i}`, JSON.stringify(call.arguments)),
            shown: await store(input.run, `call${i}`, JSON.stringify({ tool: call.name, arguments: call.arguments })),
          })),
        ),
      };
    },

    /** Remote activity: one tool call in its servlet's sandbox (heartbeating too). Servlet faults come back as `isError` results. */
    async callTool(input: Omit<ToolCallInput, 'arguments'> & { run: RunRef; arguments: Text }): Promise<ToolOutcome> {
      const { run, ...call } = input;
      const args = JSON.parse(await contents.text(call.arguments)) as Record<string, unknown>;
      const result = await heartbeating(() => deps.callTool({ ...call, arguments: args }));
      const isError = Boolean(result.isError);
      const only = result.content.length === 1 ? result.content[0] : undefined;
      if (only?.type === 'text') {
        const text = await store(run, 'result', only.text);
        return { isError, message: { text }, shown: text };
      }
      const shownText = result.content.map((c) => (c.type === 'text' ? c.text : `[image ${c.mimeType}]`)).join('\n');
      return { isError, message: { json: await store(run, 'result', JSON.stringify(result)) }, shown: await store(run, 'shown', shownText) };
    },
  };

  async function storedPayload(runId: string): Promise<Record<string, unknown>> {
    const record = await findRun(models, runId);
    if (!record) throw runFailure('TaskGone', 'the run was deleted before it started');
    return JSON.parse(record.payload_json) as Record<string, unknown>;
  }

  /** Runs a remote activity's work, heartbeating while it waits so a lost worker is noticed within the heartbeat timeout. */
  async function heartbeating<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctx = Context.current();
    // A third of the heartbeat timeout: a call shorter than that sends none (the SDK also spaces them out).
    const beat = setInterval(() => ctx.heartbeat(), Math.max(200, (ctx.info.heartbeatTimeoutMs ?? 30_000) / 3));
    try {
      return await work(ctx.cancellationSignal);
    } finally {
      clearInterval(beat);
    }
  }
}

export type RunActivities = ReturnType<typeof createRunActivities>;
