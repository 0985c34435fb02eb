import {
  CallToolRequestParamsSchema,
  CancelTaskRequestSchema,
  ElicitResultSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  InitializeRequestParamsSchema,
  SetLevelRequestSchema,
  type CallToolResult,
  type JSONRPCRequest,
  type JSONRPCResponse,
  type Result,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AppError, RateLimited } from '../errors';
import { unavailableDependency } from '../dependencies';
import type { Logger } from '../logger';
import type { Models } from '../store/models';
import { listTasks } from '../store/tasks';
import { nameSchema } from '../store/names';
import { findMcpTask, listMcpTasks, saveMcpTask, type McpTaskRecord } from '../store/mcp-tasks';
import type { RunService } from '../http/routes/runs/service';
import { inputBody } from '../http/routes/runs/schema';
import { parse } from '../http/validate';
import type { RunIdentity } from '../contract/types';
import { allows, SCOPES, type McpPrincipal } from './auth';
import { parseAskRequestId, type Ids, type SessionFacts } from './ids';
import { elicitsForm, elicitsUrl, invalidParams, isTerminalTask, McpFault, PROTOCOL_VERSIONS, RPC, RUN_META, TASKS_SINCE, taskStatusOf, unknownTask } from './protocol';
import { freshRunName, type Channel, type McpRuns } from './runs';
import { inputSchemaOf, taskName, toolOf } from './tools';
import { validatorOf } from '../json-schema';
import { createTtlCache } from '../ttl-cache';

/**
 * How long a task handle read from the store serves. A run deleted, then started again under the same name within
 * this time, may answer to the old task id on an API process that holds the handle, until the time is up.
 */
const HANDLE_CACHE_MS = 60_000;

/** Tools per `tools/list` page, tasks per `tasks/list` page. */
export const TOOLS_PAGE = 50;
export const TASKS_PAGE = 50;

/** Methods whose answer may come after notifications or requests on the same stream (an SSE answer). */
export const STREAMING_METHODS = new Set(['tools/call', 'tasks/result']);

/** Where an answer whose stream broke resumes: its task, its request, and how it was asked (http.ts encodes it). */
export interface ResumePoint {
  taskId: string;
  requestId: string | number;
  method: 'tools/call' | 'tasks/result';
  progressToken?: string | number;
}

/**
 * One request's context: who asks, for which profile, in which revision, and which elicitation its session's client
 * declared (ids.ts reads it from the session id; none without a session).
 */
export interface Caller extends SessionFacts {
  principal: McpPrincipal;
  profile: string;
  protocolVersion: string;
}
const forbidden = (scope: string) => new McpFault(RPC.unauthorized, `this credential lacks the scope "${scope}"`, { scope });

export interface MethodDeps {
  models: Models;
  logger: Logger;
  runs: RunService;
  mcp: McpRuns;
  ids: Ids;
  serverVersion: string;
}

/** The server's methods: `initialize`, `ping`, `tools/*`, `tasks/*`, and the client's answers to our requests. */
export function mcpMethods(deps: MethodDeps) {
  const { models, runs, mcp, ids } = deps;

  const need = (caller: Caller, scope: string) => {
    if (!allows(caller.principal, scope)) throw forbidden(scope);
  };
  // A task handle never changes once written, until its run is deleted (its run's record, read on every use, then
  // says the task is gone): kept a while, and read again ahead of its time while in use, so a poll waits for no
  // store read.
  const handles = createTtlCache<McpTaskRecord | null>(HANDLE_CACHE_MS, { refreshAhead: true, keep: (found) => found !== null });
  const handleKey = (owner: string, taskId: string) => `${owner}\n${taskId}`;
  const taskOfCaller = async (caller: Caller, taskId: string): Promise<McpTaskRecord> => {
    const owner = caller.principal.username;
    const found = await handles.get(handleKey(owner, taskId), () => findMcpTask(models, taskId, owner));
    if (!found) throw unknownTask();
    return found;
  };
  const params = <T>(schema: z.ZodType<T>, value: unknown): T => {
    const parsed = schema.safeParse(value ?? {});
    if (!parsed.success) throw invalidParams(`invalid params: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'params'}: ${i.message}`).join('; ')}`);
    return parsed.data;
  };
  const cursorParams = z.object({ cursor: z.string().max(1000).optional() }).loose();

  /** The answer to `initialize`, and what the session id must remember of the client (http.ts). */
  async function initialize(request: JSONRPCRequest): Promise<{ result: Result; client: SessionFacts }> {
    const p = params(InitializeRequestParamsSchema, request.params);
    const version = (PROTOCOL_VERSIONS as readonly string[]).includes(p.protocolVersion) ? p.protocolVersion : PROTOCOL_VERSIONS[0];
    const tasks = version >= TASKS_SINCE ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {};
    const result = {
      protocolVersion: version,
      // `logging`: what a run waits on a person for is told as `notifications/message` to clients not asked for it.
      capabilities: { tools: { listChanged: true }, logging: {}, ...tasks },
      serverInfo: { name: 'prompt-task-runner', title: 'Prompt task runner', version: deps.serverVersion },
      instructions: 'Each tool runs one of your prompt tasks. A call waits for the run to end; call it as a task to poll it instead.',
    };
    return { result, client: { elicit: elicitsForm(p.capabilities), elicitUrl: elicitsUrl(p.capabilities) } };
  }

  /**
   * `logging/setLevel`: accepted, and remembers nothing (no session state is kept). The only messages this server
   * sends say that a run waits on a person (level `warning`): they go whatever level was set.
   */
  function setLevel(request: JSONRPCRequest): Result {
    params(SetLevelRequestSchema, request);
    return {};
  }

  async function listTools(caller: Caller, request: JSONRPCRequest): Promise<Result> {
    need(caller, SCOPES.listTools);
    const { cursor } = params(cursorParams, request.params);
    const page = await listTasks(models, caller.principal.username, caller.profile, { limit: TOOLS_PAGE, cursor });
    return { tools: page.items.map(toolOf), ...(page.next ? { nextCursor: page.next } : {}) };
  }

  async function callTool(caller: Caller, request: JSONRPCRequest, channel: Channel): Promise<Result> {
    need(caller, SCOPES.call);
    const p = params(CallToolRequestParamsSchema, request.params);
    const owner = caller.principal.username;
    const task = await runs.findTaskForTrigger(owner, caller.profile, taskName(p.name));
    if (!task) throw invalidParams(`unknown tool "${p.name}"`);
    const args = p.arguments ?? {};
    // Arguments the schema refuses are the model's to correct: a tool error, not a protocol one (SEP-1303).
    const validate = validatorOf(inputSchemaOf(task));
    if (!validate(args)) {
      const problems = (validate.errors ?? []).map((e) => `${e.instancePath || 'arguments'} ${e.message ?? 'is invalid'}`).join('; ');
      // A task-augmented call answers a task or an error: there is no task to give.
      if (p.task) throw invalidParams(`invalid arguments: ${problems}`);
      return { content: [{ type: 'text', text: `invalid arguments: ${problems}` }], isError: true } satisfies CallToolResult;
    }
    const named = p._meta?.[RUN_META];
    if (named !== undefined && !nameSchema.safeParse(named).success) throw invalidParams(`_meta["${RUN_META}"]: expected a run name (letters, digits, "_", "-" or ".", at most 64)`);
    const id: RunIdentity = { owner, profile: caller.profile, task: task.name, run: (named as string | undefined) ?? freshRunName() };
    const taskId = ids.taskId(id);
    // The handle first: a run that exists is always one whose task id its owner can use.
    const handle: McpTaskRecord = { taskId, run: id, createdAt: new Date() };
    await saveMcpTask(models, taskId, id, handle.createdAt);
    // The client polls this task next, here or elsewhere: here its first poll reads no handle from the store.
    await handles.get(handleKey(owner, taskId), async () => handle);
    await runs.triggerCounted(task, id.run, args);
    if (p.task && caller.protocolVersion >= TASKS_SINCE) return { task: mcp.taskOf(taskId, id, await mcp.status(id)) };
    channel.resumable?.(taskId);
    const run = await mcp.follow(id, taskId, channel, { progressToken: p._meta?.progressToken, client: caller });
    // The client has gone: nobody reads this answer, and the run goes on.
    if (!run) return {};
    return mcp.resultOf(run);
  }

  async function getTask(caller: Caller, request: JSONRPCRequest): Promise<Result> {
    need(caller, SCOPES.read);
    const { params: p } = params(GetTaskRequestSchema, request);
    const found = await taskOfCaller(caller, p.taskId);
    return mcp.taskOf(found.taskId, found.run, await mcp.status(found.run));
  }

  async function taskResult(caller: Caller, request: JSONRPCRequest, channel: Channel): Promise<Result> {
    need(caller, SCOPES.read);
    const { params: p } = params(GetTaskPayloadRequestSchema, request);
    const found = await taskOfCaller(caller, p.taskId);
    channel.resumable?.(found.taskId);
    const run = await mcp.follow(found.run, found.taskId, channel, { related: true, client: caller });
    if (!run) return {};
    return mcp.resultOf(run, found.taskId);
  }

  async function listOwnTasks(caller: Caller, request: JSONRPCRequest): Promise<Result> {
    need(caller, SCOPES.read);
    const { cursor } = params(cursorParams, request.params);
    const page = await listMcpTasks(models, caller.principal.username, TASKS_PAGE, cursor);
    const tasks = [];
    for (const item of page.items) {
      const run = await runs.status(item.run);
      // A run deleted since (with its task, or past retention) is left out.
      if (run) tasks.push(mcp.taskOf(item.taskId, item.run, run));
    }
    return { tasks, ...(page.next ? { nextCursor: page.next } : {}) };
  }

  async function cancelTask(caller: Caller, request: JSONRPCRequest): Promise<Result> {
    need(caller, SCOPES.control);
    const { params: p } = params(CancelTaskRequestSchema, request);
    const found = await taskOfCaller(caller, p.taskId);
    const before = await mcp.view(found.run);
    if (isTerminalTask(taskStatusOf(before).status)) throw invalidParams(`the task has already ended (${taskStatusOf(before).status}); it cannot be cancelled`);
    try {
      await runs.cancel(found.run, caller.principal.username);
    } catch (err) {
      if (err instanceof AppError && err.code === 'run_closed') throw invalidParams('the task has already ended; it cannot be cancelled');
      throw err;
    }
    const after = await mcp.view(found.run);
    // The run ends once its workflow has heard: the task is cancelled from this answer on.
    return mcp.taskOf(found.taskId, found.run, after, isTerminalTask(taskStatusOf(after).status) ? undefined : 'cancelled');
  }

  /**
   * A client's answer to one of our requests: only `elicitation/create` is asked (runs.ts), its id naming the task and
   * the approval or input (ids.ts), so whichever process receives the answer decides it as the HTTP route would: an
   * approval as `POST <run path>/approvals/:id` (`accept` with `approve: true` approves, `approve: false` or `decline`
   * denies, `cancel` leaves it open), an input as `POST <run path>/inputs/:id` with the answer's `{action, content}`
   * (the route's 400, 404 and 409 come back as JSON-RPC errors with its message). An answer to anything else, or an
   * error instead of an answer, changes nothing.
   */
  async function answer(caller: Caller, response: JSONRPCResponse | { id: unknown; error: unknown }): Promise<void> {
    const asked = parseAskRequestId(response.id);
    if (!asked || !('result' in response)) return;
    need(caller, SCOPES.control);
    const found = await taskOfCaller(caller, asked.taskId);
    const by = caller.principal.username;
    if (asked.kind === 'input') return runs.answer(found.run, asked.id, parse(inputBody, response.result), by);
    const elicited = ElicitResultSchema.safeParse(response.result);
    if (!elicited.success) throw invalidParams('the answer to an approval is not an elicitation result');
    const { action, content } = elicited.data;
    if (action === 'cancel') return;
    const approve = action === 'accept' && content?.approve === true;
    const reason = typeof content?.reason === 'string' ? content.reason.slice(0, 2000) : action === 'decline' ? 'declined by the user' : undefined;
    await runs.decide(found.run, asked.id, { approve, ...(reason ? { reason } : {}) }, by);
  }

  /**
   * Goes on with an answer whose stream broke (a `GET` with the `Last-Event-ID` of its stream, on any process): the
   * end of the task's run, as the interrupted `tools/call` or `tasks/result` would have answered it.
   */
  async function resume(caller: Caller, point: ResumePoint, channel: Channel): Promise<Result> {
    need(caller, SCOPES.read);
    const found = await taskOfCaller(caller, point.taskId);
    const related = point.method === 'tasks/result';
    const run = await mcp.follow(found.run, found.taskId, channel, { progressToken: point.progressToken, related, client: caller });
    if (!run) return {};
    return mcp.resultOf(run, related ? found.taskId : undefined);
  }

  return {
    initialize,
    answer,
    resume,
    /** Answers a request (other than `initialize`); throws McpFault (or an error that `faultOf` maps). */
    async request(caller: Caller, request: JSONRPCRequest, channel: Channel): Promise<Result> {
      switch (request.method) {
        case 'ping':
          return {};
        case 'logging/setLevel':
          return setLevel(request);
        case 'tools/list':
          return listTools(caller, request);
        case 'tools/call':
          return callTool(caller, request, channel);
        case 'tasks/get':
          return getTask(caller, request);
        case 'tasks/result':
          return taskResult(caller, request, channel);
        case 'tasks/list':
          return listOwnTasks(caller, request);
        case 'tasks/cancel':
          return cancelTask(caller, request);
        default:
          throw new McpFault(RPC.methodNotFound, `method not found: ${request.method}`);
      }
    },
    /** An error as the JSON-RPC error the client gets; anything not ours is logged and answered as internal. */
    faultOf(err: unknown): McpFault {
      if (err instanceof McpFault) return err;
      if (err instanceof RateLimited) return new McpFault(RPC.rateLimited, err.message, { code: err.code, retry_after: err.retryAfterSeconds });
      if (err instanceof AppError && err.status < 500) return new McpFault(RPC.invalidParams, err.message, { code: err.code });
      const dependency = unavailableDependency(err);
      if (dependency || (err instanceof AppError && err.status === 503)) {
        return new McpFault(RPC.unavailable, `${dependency ?? 'a dependency'} did not answer in time; retry in a moment`, { retry_after: 1 });
      }
      deps.logger.error({ err }, 'an MCP request failed');
      return new McpFault(RPC.internal, 'internal error');
    },
  };
}

export type McpMethods = ReturnType<typeof mcpMethods>;
