import crypto from 'node:crypto';
import type { CallToolResult, JSONRPCMessage, Task } from '@modelcontextprotocol/sdk/types.js';
import type { Config } from '../config';
import type { RunView } from '../http/presenters/run';
import type { RunService } from '../http/routes/runs/service';
import type { RunIdentity } from '../contract/types';
import { approvalRequestId } from './ids';
import { McpFault, openApproval, RELATED_TASK_META_KEY, RPC, taskStatusOf, type McpTaskStatus } from './protocol';

/** The stream of one request's answer, on which notifications and requests to the client go before the answer. */
export interface Channel {
  send(message: JSONRPCMessage): Promise<void>;
  /**
   * From here on the answer follows MCP task `taskId`: a client whose stream breaks may resume it (with `GET` and
   * `Last-Event-ID`) on any API process.
   */
  resumable?(taskId: string): void;
  /** false once the client has gone. */
  readonly open: boolean;
}

/**
 * A call that waits for its run reads it every half LIVE_RUN_CACHE_MS, as a run's event streams do (the reader
 * shares one query among a run's readers, so reading more often gets nothing newer), and never faster than this.
 */
const FOLLOW_MIN_MS = 100;
/** A client is told to poll a task no faster than this. */
const POLL_INTERVAL_MS = 1_000;

/** A run's name for a call that names none: fresh each call. */
export const freshRunName = () => `mcp-${crypto.randomBytes(9).toString('base64url').replace(/[^A-Za-z0-9]/g, '0')}`;

/** Reading and waiting for runs started through MCP, as the HTTP API's run routes do (they share the RunService). */
export function mcpRuns(runs: RunService, config: Pick<Config, 'LIVE_RUN_CACHE_MS' | 'RUN_RETENTION_DAYS'>) {
  const followMs = Math.max(FOLLOW_MIN_MS, config.LIVE_RUN_CACHE_MS / 2);
  const ttl = config.RUN_RETENTION_DAYS ? Math.round(config.RUN_RETENTION_DAYS * 86_400_000) : null;

  /** The run, or a fault the client can act on when it is gone (deleted, with its task or on its own). */
  const view = async (id: RunIdentity): Promise<RunView> => {
    const run = await runs.view(id);
    if (!run) throw new McpFault(RPC.invalidParams, `the run "${id.run}" of this task no longer exists`);
    return run;
  };

  /** The MCP task of a run (the mapping of statuses is protocol.ts's `taskStatusOf`). */
  const taskOf = (taskId: string, run: Pick<RunView, 'status' | 'results' | 'created_at' | 'modified_at'>, override?: McpTaskStatus): Task => {
    const { status, message } = taskStatusOf(run);
    return {
      taskId,
      status: override ?? status,
      ...(message && !override ? { statusMessage: message } : {}),
      createdAt: run.created_at,
      lastUpdatedAt: run.modified_at,
      ttl,
      pollInterval: POLL_INTERVAL_MS,
    };
  };

  /** A closed run as a tool's result: its last message (or its reason), and `{run, status, usage}`. */
  const resultOf = (run: RunView, related?: string): CallToolResult => {
    const last = run.results.at(-1);
    const failed = run.status === 'error';
    const reason = last && 'error' in last ? last.error : undefined;
    const answer = [...run.results].reverse().find((e) => 'lastMessage' in e);
    const text = failed ? (reason ?? 'the run ended in error') : answer && 'lastMessage' in answer ? answer.lastMessage.content : '';
    return {
      content: [{ type: 'text', text }],
      ...(failed ? { isError: true } : {}),
      structuredContent: { run: run.name, status: run.status, usage: run.usage },
      ...(related ? { _meta: { [RELATED_TASK_META_KEY]: { taskId: related } } } : {}),
    };
  };

  /**
   * Waits for the run to end and returns it; meanwhile sends `notifications/progress` for each new entry (when the
   * client gave a progress token) and, for an approval the run waits on, one `elicitation/create` whose id names the
   * task and the approval (the answer, to any process, decides it: methods.ts). Returns undefined once the client
   * has gone: the run goes on.
   */
  const follow = async (id: RunIdentity, taskId: string, channel: Channel, options: { progressToken?: string | number; related?: boolean }): Promise<RunView | undefined> => {
    let seen = 0;
    const asked = new Set<string>();
    for (;;) {
      if (!channel.open) return undefined;
      const run = await view(id);
      const { status } = taskStatusOf(run);
      if (options.progressToken !== undefined && run.results.length > seen) {
        seen = run.results.length;
        await channel.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: options.progressToken, progress: seen, message: run.results.at(-1)!.msg } });
      }
      if (status === 'completed' || status === 'failed' || status === 'cancelled') return run;
      const approval = openApproval(run);
      if (approval && !asked.has(approval.id)) {
        asked.add(approval.id);
        await channel.send({
          jsonrpc: '2.0',
          id: approvalRequestId(taskId, approval.id),
          method: 'elicitation/create',
          params: {
            message: `The run "${id.run}" of "${id.task}" asks to call the tool "${approval.tool}" with ${JSON.stringify(approval.arguments)}. Approve the call?`,
            requestedSchema: {
              type: 'object',
              properties: {
                approve: { type: 'boolean', title: 'Approve', description: `Run the call of "${approval.tool}" (false: the model is told it was denied)` },
                reason: { type: 'string', title: 'Reason', description: 'Told to the model when the call is denied' },
              },
              required: ['approve'],
            },
            ...(options.related ? { _meta: { [RELATED_TASK_META_KEY]: { taskId } } } : {}),
          },
        });
      }
      await new Promise((r) => setTimeout(r, followMs));
    }
  };

  /** The run's status from its record (no workflow query: what `tasks/get` and `tasks/list` read). */
  const status = async (id: RunIdentity) => {
    const run = await runs.status(id);
    if (!run) throw new McpFault(RPC.invalidParams, `the run "${id.run}" of this task no longer exists`);
    return run;
  };

  return { view, status, taskOf, resultOf, follow };
}

export type McpRuns = ReturnType<typeof mcpRuns>;
