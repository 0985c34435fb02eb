import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { inputAskUpdate, inputStateQuery, inputUpdate } from '../src/contract/messages';
import type { AskedInput, RunRef } from '../src/contract/types';

/** How often a call waiting for a person's answer asks its run whether it came. */
export const INPUT_POLL_MS = 1_000;
/** Longest question text a run shows (the rest is cut), and largest form schema it takes (a larger one is declined). */
const MESSAGE_MAX_CHARS = 4_000;
const SCHEMA_MAX_CHARS = 32 * 1024;

/** Asks a person what an MCP server asks during a run's tool call (`elicitation/create`): the answer the server gets. */
export type InputAsker = (run: RunRef, tool: string, params: ElicitRequest['params'], signal: AbortSignal) => Promise<ElicitResult>;

/**
 * The activity's side of a run's inputs (docs/mcp.md, "Inputs"). The run's workflow is the one writer of its record,
 * so the question goes to it (the `inputAsk` update, which records it) and its answer is polled (the `inputState`
 * query) about once a second while the server's request stays open. `signal` ends the wait (the call ended, the run
 * was cancelled): the question is closed and the server hears `cancel`. A run that refuses the question (closing)
 * gets `cancel` too; a question the run cannot show (a schema too large, a URL not http(s)) is declined unasked.
 */
export function createInputAsker(temporal: Pick<Client, 'workflow'>): InputAsker {
  return async (run, tool, params, signal) => {
    const asked = question(tool, params);
    if (!asked) return { action: 'decline' };
    const handle = temporal.workflow.getHandle(run.id);
    try {
      // The question's id as the update's: a retried ask is the same update.
      await handle.executeUpdate(inputAskUpdate, { args: [asked], updateId: `input-${asked.id}` });
    } catch {
      return { action: 'cancel' };
    }
    try {
      for (;;) {
        await sleep(INPUT_POLL_MS, undefined, { signal });
        // A query that fails (Temporal busy, the workflow between workers) is asked again next time.
        const state = await handle.query(inputStateQuery, asked.id).catch(() => undefined);
        if (state?.answer) return { action: state.answer.action, ...(state.answer.content ? { content: state.answer.content as ElicitResult['content'] } : {}) };
      }
    } catch (err) {
      if (!signal.aborted) throw err;
      // Refused when a person answered meanwhile or the run is closing: either way the question is closed.
      await handle.executeUpdate(inputUpdate, { args: [{ id: asked.id, action: 'cancel', by: 'the run', reason: 'the call ended' }] }).catch(() => undefined);
      return { action: 'cancel' };
    }
  };
}

/** The question as the run shows it, or undefined when it cannot be shown. */
function question(tool: string, params: ElicitRequest['params']): AskedInput | undefined {
  const id = crypto.randomUUID();
  const message = params.message.length > MESSAGE_MAX_CHARS ? `${params.message.slice(0, MESSAGE_MAX_CHARS)}…` : params.message;
  if (params.mode === 'url') {
    const url = URL.canParse(params.url) ? new URL(params.url) : undefined;
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) return undefined;
    return { id, tool, message, url: url.href };
  }
  if (JSON.stringify(params.requestedSchema).length > SCHEMA_MAX_CHARS) return undefined;
  return { id, tool, message, schema: params.requestedSchema as Record<string, unknown> };
}
