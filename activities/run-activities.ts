import { ApplicationFailure, Context } from '@temporalio/activity';
import { Types } from 'mongoose';
import { open } from '../src/store/secrets';
import { runWorkflowId } from '../src/temporal/ids';
import type { CallToolResult, ModelAnswer, PreparedRun, RunIdentity, RunState, Runner, ToolSpec, Turn } from '../workflows/types';
import type { ActivityDeps } from './index';
import { callAnthropic } from './providers/anthropic';
import { callOpenAI } from './providers/openai';
import { expandTemplate } from './template';
import { listProfileTools } from './tools';

/** The activities of a run. Keys are loaded and decrypted only inside `callModel`, used, and dropped. */
export function createRunActivities(deps: ActivityDeps) {
  const { models } = deps.db;

  async function loadVersion(taskId: string, version: number) {
    const doc = await models.TaskVersion.findOne({ task_id: new Types.ObjectId(taskId), version }).lean();
    if (!doc) throw ApplicationFailure.nonRetryable(`task version ${version} no longer exists (the task was deleted)`, 'TaskGone');
    return doc;
  }

  return {
    /** Local activity: expands the prompt and lists the profile's tools. */
    async prepareRun(input: { taskId: string; taskVersion: number; payload: Record<string, unknown>; identity: RunIdentity }): Promise<PreparedRun> {
      const version = await loadVersion(input.taskId, input.taskVersion);
      let expanded: { prompt: string; missing: string[] };
      try {
        expanded = expandTemplate(version.prompt, input.payload);
      } catch (err) {
        throw ApplicationFailure.nonRetryable(`the prompt template cannot be expanded: ${(err as Error).message}`, 'BadTemplate');
      }
      const runner = version.runner as Runner;
      return {
        runner,
        model: version.model,
        maxTokens: version.max_tokens ?? (runner === 'anthropic' ? deps.config.ANTHROPIC_MAX_TOKENS : null),
        ...expanded,
        tools: await listProfileTools(models, input.identity.owner, input.identity.profile),
      };
    },

    /** Local activity: the run record follows every status change (not every entry). */
    async recordRun(input: { identity: RunIdentity; state: RunState }): Promise<void> {
      await models.Run.updateOne(
        { _id: runWorkflowId(input.identity) },
        { $set: { status: input.state.status, results: input.state.results, modified_at: new Date(input.state.modifiedAt), started: true } },
      );
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

  function operatorKey(runner: Runner): string | undefined {
    return runner === 'openai' ? deps.config.OPENAI_API_KEY : deps.config.ANTHROPIC_API_KEY;
  }
}
