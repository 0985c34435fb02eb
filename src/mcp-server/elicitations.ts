import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RunIdentity } from '../contract/types';
import { askRequestId, type SessionFacts } from './ids';
import { RELATED_TASK_META_KEY, type OpenAsk } from './protocol';

/**
 * Whether a client that declared `client` is asked `ask` by `elicitation/create` (otherwise it is told how to answer
 * over HTTP: how-to-answer.ts): an approval, or an input with a schema, in form mode; an input that sends the person
 * to a page, in URL mode.
 */
export const elicits = (ask: OpenAsk, client: SessionFacts): boolean => (ask.kind === 'input' && ask.url !== undefined ? client.elicitUrl : client.elicit);

/** The schema of a decision on an approval: what `POST <run path>/approvals/:id` takes. */
const approvalSchema = (tool: string) => ({
  type: 'object' as const,
  properties: {
    approve: { type: 'boolean' as const, title: 'Approve', description: `Run the call of "${tool}" (false: the model is told it was denied)` },
    reason: { type: 'string' as const, title: 'Reason', description: 'Told to the model when the call is denied' },
  },
  required: ['approve'],
});

/**
 * The `elicitation/create` asking `ask` of the run `id` (MCP task `taskId`; `related`: sent on the stream of
 * `tasks/result`). Its id names the task and the ask (ids.ts `askRequestId`), so that any API process decides the
 * client's answer (methods.ts `answer`). An input goes as its MCP server asked it: its `message`, and its `schema` as
 * the requested schema, or in URL mode its `url` (`elicitationId`: the input's id).
 */
export function elicitationOf(id: RunIdentity, taskId: string, ask: OpenAsk, related?: boolean): JSONRPCRequest {
  const meta = related ? { _meta: { [RELATED_TASK_META_KEY]: { taskId } } } : {};
  const request = { jsonrpc: '2.0' as const, id: askRequestId({ kind: ask.kind, taskId, id: ask.id }), method: 'elicitation/create' };
  if (ask.kind === 'approval') {
    const message = `The run "${id.run}" of "${id.task}" asks to call the tool "${ask.tool}" with ${JSON.stringify(ask.arguments)}. Approve the call?`;
    return { ...request, params: { message, requestedSchema: approvalSchema(ask.tool), ...meta } };
  }
  if (ask.url !== undefined) return { ...request, params: { mode: 'url', message: ask.message, url: ask.url, elicitationId: ask.id, ...meta } };
  return { ...request, params: { message: ask.message, requestedSchema: ask.schema ?? { type: 'object', properties: {} }, ...meta } };
}
