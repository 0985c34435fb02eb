import { setTimeout as sleep } from 'node:timers/promises';
import { LEVEL } from '../src/contract/constants';
import type { CallToolResult, HeldEntry, SampledUsage } from '../src/contract/types';
import { McpCallFailed } from '../src/mcp/errors';
import { createTtlCache } from '../src/ttl-cache';
import type { McpCallOptions, McpSessionPool } from '../src/mcp/pool';
import type { McpTaskRef, McpTaskState, McpTasks } from '../src/mcp/tasks';
import type { McpOAuthClient } from '../src/mcp/oauth';
import { samplingAnswerer, type McpSample } from './mcp-sampling';

/** One MCP tool call of a run, as the workflow asks for it (docs/mcp.md). */
export interface McpToolCallInput {
  owner: string;
  profile: string;
  install: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** The tool says `idempotentHint: true`: a call that may have reached the server may be made again. */
  idempotent?: true;
}

/** What a call came to: the tool's result (an error the model hears, when it failed) and what the server said meanwhile. */
export interface McpCallReport {
  result: CallToolResult;
  said: HeldEntry[];
  /** What the server's sampling requests used of the run's model (activities/mcp-sampling.ts), when it made any. */
  sampled?: SampledUsage;
}

/**
 * The activity's part in a call. `mayHaveRun`: an earlier attempt of this activity (its worker lost) had begun sending
 * the call, as its last heartbeat said. `sending`, awaited just before each send, heartbeats that; for a tool that is
 * not idempotent it settles only once Temporal has recorded it, so a worker lost right after the send leaves the next
 * attempt knowing (it throws, nothing sent, when Temporal cannot record it).
 */
export interface McpCallContext {
  mayHaveRun: boolean;
  signal: AbortSignal;
  heartbeat(): void;
  sending(): void | Promise<void>;
  /** Answers the server's sampling requests with the run's model, when the install allows them; absent: refused. */
  sample?: McpSample;
  /** Asks a person what the server asks during the call (`tool`: `<install>__<tool>`); without it the server is declined. */
  ask?(tool: string, params: Parameters<NonNullable<McpCallOptions['onElicit']>>[0], signal: AbortSignal): ReturnType<NonNullable<McpCallOptions['onElicit']>>;
}

/** The install as a call needs it: where its server is (opened), and whether it still offers the tool. */
export interface McpInstallForCall {
  url: string;
  headers: Record<string, string>;
  /** OAuth client credentials (docs/mcp.md): a token is got, cached and sent with every request. */
  oauth?: McpOAuthClient;
  offers(tool: string): boolean;
  /** `settings.sampling`: the server may ask the run's model for an answer during a call. */
  sampling?: boolean;
}

/** Tries of a call that never reached its server (refused, DNS, TLS, no session), with backoff from NOT_REACHED_WAIT_MS. */
const NOT_REACHED_TRIES = 4;
const NOT_REACHED_WAIT_MS = 500;
/** What a call's progress and log messages may add to the run's log: the first ones and the last, each cut. */
const SAID_MAX = 20;
const SAID_TEXT_MAX = 1_000;

/**
 * Runs one MCP tool call, never running a tool twice by surprise. A call that never reached the server is tried again
 * with backoff; one that may have reached it (a time-out, a connection lost mid-call, a garbage answer), only when the
 * tool says `idempotentHint: true`; otherwise the model hears that the call may or may not have run. An attempt after
 * one whose worker was lost while sending follows the same rule. Never throws for the server's faults: they come back
 * as error results (a server not reached after the tries too); throws the signal's abort (the run was cancelled).
 */
export function createMcpToolCaller(deps: {
  /** The worker's sessions, one per install (src/mcp/pool.ts). */
  calls: Pick<McpSessionPool, 'callTool'>;
  loadInstall(owner: string, profile: string, install: string): Promise<McpInstallForCall | null>;
}) {
  return async (input: McpToolCallInput, context: McpCallContext): Promise<McpCallReport> => {
    const said = new SaidLog(`${input.install}__${input.tool}`);
    const sampled: SampledUsage = { input: 0, output: 0, calls: 0 };
    const report = (result: CallToolResult): McpCallReport => ({ result, said: said.entries(), ...(sampled.calls ? { sampled } : {}) });
    const install = await deps.loadInstall(input.owner, input.profile, input.install);
    if (!install) return report(errorResult(`"${input.install}" is no longer installed in profile "${input.profile}"`));
    if (!install.offers(input.tool)) return report(errorResult(`"${input.install}" no longer offers the tool "${input.tool}"`));
    if (context.mayHaveRun && !input.idempotent) {
      return report(errorResult('the call may or may not have run: the worker running it was lost, and the tool does not say it may be called again'));
    }
    const server = { key: `${input.owner}/${input.profile}/${input.install}`, url: install.url, headers: install.headers, ...(install.oauth ? { oauth: install.oauth } : {}) };
    const watch: McpCallOptions = {
      signal: context.signal,
      onProgress: (progress, total, message) => {
        context.heartbeat();
        said.push(LEVEL.info, `progress ${progress}${total !== undefined ? `/${total}` : ''}${message ? `: ${message}` : ''}`);
      },
      onLog: (level, text) => said.push(logLevel(level), text),
      onSample: samplingAnswerer({ allowed: install.sampling === true, sample: context.sample, signal: context.signal, sampled, note: (level, text) => said.push(level, text) }),
      ...(context.ask ? { onElicit: (params, signal) => context.ask!(`${input.install}__${input.tool}`, params, signal) } : {}),
    };
    for (let attempt = 1; ; attempt++) {
      try {
        await context.sending();
        return report(await deps.calls.callTool(server, { name: input.tool, arguments: input.arguments }, watch));
      } catch (err) {
        context.signal.throwIfAborted();
        if (!(err instanceof McpCallFailed)) throw err;
        const again = attempt < NOT_REACHED_TRIES && (!err.reachedServer || input.idempotent);
        if (!again) {
          if (!err.reachedServer) return report(errorResult(`the MCP server of "${input.install}" could not be reached (${attempt} tries): ${err.message}`));
          return report(errorResult(input.idempotent ? `the call failed: ${err.message}` : `the call may or may not have run: ${err.message}`));
        }
        said.push(LEVEL.warn, `${err.reachedServer ? 'failed' : 'not reached'}: ${err.message}; trying again (attempt ${attempt + 1} of ${NOT_REACHED_TRIES})`);
        await sleep(NOT_REACHED_WAIT_MS * 2 ** (attempt - 1), undefined, { signal: context.signal });
        context.heartbeat();
      }
    }
  };
}

const errorResult = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

/** MCP's log levels (RFC 5424's) as the run log's three. */
function logLevel(level: string): number {
  if (level === 'debug' || level === 'info' || level === 'notice') return LEVEL.info;
  if (level === 'warning') return LEVEL.warn;
  return LEVEL.error;
}

/** A call's progress and log messages as run log entries: the first SAID_MAX / 2 and the last, with how many between were left out. */
class SaidLog {
  private readonly first: HeldEntry[] = [];
  private last: HeldEntry[] = [];
  private dropped = 0;

  constructor(private readonly tool: string) {}

  push(level: number, text: string): void {
    const cut = text.length > SAID_TEXT_MAX ? `${text.slice(0, SAID_TEXT_MAX)}… (${text.length} characters)` : text;
    const entry: HeldEntry = { msg: `${this.tool}: ${cut}`, time: Date.now(), level };
    if (this.first.length < SAID_MAX / 2) return void this.first.push(entry);
    this.last.push(entry);
    if (this.last.length > SAID_MAX / 2) {
      this.last = this.last.slice(1);
      this.dropped++;
    }
  }

  entries(): HeldEntry[] {
    const gap: HeldEntry[] = this.dropped ? [{ msg: `${this.tool}: ${this.dropped} more messages left out`, time: Date.now(), level: LEVEL.info }] : [];
    return [...this.first, ...gap, ...this.last];
  }
}

/** A task an MCP call started (docs/mcp.md, "Long tools as MCP tasks"): where it lives, and its state. */
export type McpTaskStarted = { task: McpTaskRef & McpTaskState } | { result: CallToolResult };

/**
 * The steps of a tool the server runs as an MCP task, each one activity: start it (its result, an error the model
 * hears, when it could not be started), follow it, read its result, cancel it. Between them the workflow waits on a
 * timer, holding no activity slot. A step on a task the server no longer knows (restarted, the session expired) tells
 * the model its result is lost.
 */
export function createMcpTaskSteps(deps: {
  tasks: Pick<McpTasks, 'start' | 'get' | 'result' | 'answer' | 'cancel'>;
  loadInstall(owner: string, profile: string, install: string): Promise<McpInstallForCall | null>;
}) {
  const server = async (input: Omit<McpToolCallInput, 'arguments'>) => {
    const install = await deps.loadInstall(input.owner, input.profile, input.install);
    if (!install) return errorResult(`"${input.install}" is no longer installed in profile "${input.profile}"`);
    if (!install.offers(input.tool)) return errorResult(`"${input.install}" no longer offers the tool "${input.tool}"`);
    return { url: install.url, headers: install.headers, ...(install.oauth ? { oauth: install.oauth } : {}) };
  };
  /**
   * A step on a started task, or what the model hears when its server answered without the task (it lost it). A server
   * not reached is thrown, to be asked again (the activity's retries).
   */
  const lost = (err: McpCallFailed) => errorResult(`the task's result is lost: ${err.message}`);
  const orLost = async <T, L>(step: () => Promise<T>, signal: AbortSignal, asLost: (err: McpCallFailed) => L): Promise<T | L> => {
    try {
      return await step();
    } catch (err) {
      signal.throwIfAborted();
      if (!(err instanceof McpCallFailed)) throw err;
      if (!err.reachedServer && err.reason !== 'session_expired') throw err;
      return asLost(err);
    }
  };
  return {
    async start(input: McpToolCallInput, signal: AbortSignal): Promise<McpTaskStarted> {
      const where = await server(input);
      if ('content' in where) return { result: where };
      try {
        return { task: await deps.tasks.start(where, { name: input.tool, arguments: input.arguments }, signal) };
      } catch (err) {
        signal.throwIfAborted();
        if (!(err instanceof McpCallFailed)) throw err;
        return { result: errorResult(err.reachedServer ? `the task may or may not have been started: ${err.message}` : `the MCP server of "${input.install}" could not be reached: ${err.message}`) };
      }
    },
    async follow(input: Omit<McpToolCallInput, 'arguments'> & { task: McpTaskRef }, signal: AbortSignal): Promise<McpTaskState | { result: CallToolResult }> {
      const where = await server(input);
      if ('content' in where) return { result: where };
      return orLost(() => deps.tasks.get(where, input.task, signal), signal, (err) => ({ result: lost(err) }));
    },
    async result(input: Omit<McpToolCallInput, 'arguments'> & { task: McpTaskRef }, signal: AbortSignal): Promise<CallToolResult> {
      const where = await server(input);
      if ('content' in where) return where;
      return orLost(() => deps.tasks.result(where, input.task, signal), signal, lost);
    },
    /**
     * A task waiting for input: its questions asked of a person (`ask`, as a call's are), then its result, or its state
     * when it goes on working. A task that asks nothing, or whose server lost it, gives the model an error.
     */
    async answer(input: Omit<McpToolCallInput, 'arguments'> & { task: McpTaskRef }, signal: AbortSignal, ask: NonNullable<McpCallContext['ask']>): Promise<CallToolResult | McpTaskState> {
      const where = await server(input);
      if ('content' in where) return where;
      const got = await orLost(() => deps.tasks.answer(where, input.task, (params, s) => ask(`${input.install}__${input.tool}`, params, s), signal), signal, (err) =>
        err.reason === 'timeout' ? errorResult(err.message) : lost(err),
      );
      return got === 'working' ? { status: 'working' } : got;
    },
    async cancel(input: Omit<McpToolCallInput, 'arguments'> & { task: McpTaskRef }): Promise<void> {
      const where = await server(input);
      if (!('content' in where)) await deps.tasks.cancel(where, input.task);
    },
  };
}

/** How long a worker reuses an MCP install it opened for a call (docs/mcp.md). */
export const MCP_INSTALL_CACHE_MS = 2_000;

/**
 * An install loader that reuses what it opened for MCP_INSTALL_CACHE_MS (a store read costs more than a call's own
 * work): a change or an uninstall reaches calls within that bound. Shared by concurrent calls of an install.
 */
export function cachedInstallLoader(load: (owner: string, profile: string, install: string) => Promise<McpInstallForCall | null>) {
  const installs = createTtlCache<McpInstallForCall | null>(MCP_INSTALL_CACHE_MS, { maxEntries: 1_000, refreshAhead: true, keep: (found) => found !== null });
  return (owner: string, profile: string, install: string) => installs.get(`${owner}/${profile}/${install}`, () => load(owner, profile, install));
}
