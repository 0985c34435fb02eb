import crypto from 'node:crypto';
import type { CallToolResult, JSONRPCMessage, Task } from '@modelcontextprotocol/sdk/types.js';
import type { Config } from '../config';
import type { RunView } from '../http/presenters/run';
import type { RunService } from '../http/routes/runs/service';
import type { RunIdentity } from '../contract/types';
import { elicitationOf, elicits } from './elicitations';
import type { SessionFacts } from './ids';
import { howToAnswer } from './how-to-answer';
import { askMessage, openAsk, RELATED_TASK_META_KEY, taskStatusOf, unknownTask, type McpTaskStatus, type OpenAsk } from './protocol';

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
/** The `logger` of the server's `notifications/message`. */
const LOGGER = 'prompt-task-runner';
/** A client is told to poll a task no faster than this. */
const POLL_INTERVAL_MS = 1_000;

/** A run's name for a call that names none: fresh each call. */
export const freshRunName = () => `mcp-${crypto.randomBytes(9).toString('base64url').replace(/[^A-Za-z0-9]/g, '0')}`;

/** Reading and waiting for runs started through MCP, as the HTTP API's run routes do (they share the RunService). */
export function mcpRuns(runs: RunService, config: Pick<Config, 'LIVE_RUN_CACHE_MS' | 'RUN_RETENTION_DAYS' | 'PUBLIC_URL'>) {
  const followMs = Math.max(FOLLOW_MIN_MS, config.LIVE_RUN_CACHE_MS / 2);
  const ttl = config.RUN_RETENTION_DAYS ? Math.round(config.RUN_RETENTION_DAYS * 86_400_000) : null;

  /** The run; its task is unknown once it is gone (deleted on its own, with its task, or past retention). */
  const view = async (id: RunIdentity): Promise<RunView> => {
    const run = await runs.view(id);
    if (!run) throw unknownTask();
    return run;
  };

  /**
   * The MCP task of run `id` (the mapping of statuses is protocol.ts's `taskStatusOf`); while it waits on a person,
   * its `statusMessage` says what is asked and how to answer it over HTTP.
   */
  const taskOf = (taskId: string, id: RunIdentity, run: Pick<RunView, 'status' | 'results' | 'created_at' | 'modified_at'>, override?: McpTaskStatus): Task => {
    const { status, message } = taskStatusOf(run, howToAnswer(config.PUBLIC_URL, id));
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
   * Tells the client, once, what the run waits on and how a person answers it elsewhere: a `notifications/message`
   * (level `warning`: someone must act), with the ask itself in `data`.
   */
  const tellAsk = (id: RunIdentity, taskId: string, channel: Channel, ask: OpenAsk, message: string, related?: boolean) =>
    channel.send({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: {
        level: 'warning',
        logger: LOGGER,
        data: { message, task: id.task, run: id.run, ask },
        ...(related ? { _meta: { [RELATED_TASK_META_KEY]: { taskId } } } : {}),
      },
    });

  /**
   * Waits for the run to end and returns it; meanwhile sends `notifications/progress` for each new entry (when the
   * client gave a progress token). What the run waits on a person for (an approval, an input one of its MCP tools
   * asked for) goes once to a client that takes it by elicitation (`client`, elicitations.ts) as `elicitation/create`,
   * whose id names the task and the ask (the answer, to any process, decides it: methods.ts); to any other client it
   * is told once as a `notifications/message` saying how to answer it over HTTP, and is the message of the progress
   * notification of its entry. The run's own time limit still ends a run nobody answers. Returns undefined once the
   * client has gone: the run goes on.
   */
  const follow = async (
    id: RunIdentity,
    taskId: string,
    channel: Channel,
    options: { progressToken?: string | number; related?: boolean; client: SessionFacts },
  ): Promise<RunView | undefined> => {
    let seen = 0;
    const asked = new Set<string>();
    const howTo = howToAnswer(config.PUBLIC_URL, id);
    for (;;) {
      if (!channel.open) return undefined;
      const run = await view(id);
      const { status } = taskStatusOf(run);
      const ask = openAsk(run);
      const elicited = ask !== undefined && elicits(ask, options.client);
      const told = ask && !elicited ? askMessage(ask, howTo) : undefined;
      if (options.progressToken !== undefined && run.results.length > seen) {
        seen = run.results.length;
        const message = told ?? run.results.at(-1)!.msg;
        await channel.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: options.progressToken, progress: seen, message } });
      }
      if (status === 'completed' || status === 'failed' || status === 'cancelled') return run;
      if (ask && !asked.has(`${ask.kind}:${ask.id}`)) {
        asked.add(`${ask.kind}:${ask.id}`);
        if (elicited) await channel.send(elicitationOf(id, taskId, ask, options.related));
        else await tellAsk(id, taskId, channel, ask, told!, options.related);
      }
      await new Promise((r) => setTimeout(r, followMs));
    }
  };

  /** The run's status from its record (no workflow query: what `tasks/get` and `tasks/list` read). */
  const status = async (id: RunIdentity) => {
    const run = await runs.status(id);
    if (!run) throw unknownTask();
    return run;
  };

  return { view, status, taskOf, resultOf, follow };
}

export type McpRuns = ReturnType<typeof mcpRuns>;
