import crypto from 'node:crypto';
import { runWorkflowId } from '../store/runs';
import type { RunIdentity } from '../contract/types';

/**
 * The identifiers this server hands out, each checkable by any API process without shared memory: derived with
 * SIGNING_SECRET, so they cannot be guessed, and bound to the user they were made for.
 */
export function createIds(secret: string) {
  const mac = (purpose: string, ...parts: string[]) => crypto.createHmac('sha256', secret).update([purpose, ...parts].join('\n')).digest('base64url');
  const same = (a: string, b: string) => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));

  return {
    /** The MCP task id of a run: the same run (a retried call) always gets the same id, and only its owner's. */
    taskId: (run: RunIdentity) => mac('mcp-task', run.owner, runWorkflowId(run)),

    /** A new `Mcp-Session-Id` for `username`: a random part and its MAC (no session is stored anywhere). */
    newSession(username: string): string {
      const nonce = crypto.randomBytes(16).toString('base64url');
      return `${nonce}.${mac('mcp-session', username, nonce)}`;
    },
    /** Whether `session` was made by newSession for `username` (another user's id, or a made-up one, is not). */
    isSessionOf(session: string, username: string): boolean {
      const [nonce, tag, ...rest] = session.split('.');
      return rest.length === 0 && !!nonce && !!tag && same(tag, mac('mcp-session', username, nonce));
    },
  };
}

export type Ids = ReturnType<typeof createIds>;

/**
 * The JSON-RPC id of an `elicitation/create` asking for a decision on approval `approval` of the run of MCP task
 * `taskId`: whichever process receives the client's answer finds the run (through the task, which must be the
 * answering user's) and the approval in it.
 */
export const approvalRequestId = (taskId: string, approval: string) => `ptr-approval:${taskId}:${approval}`;

export function parseApprovalRequestId(id: unknown): { taskId: string; approval: string } | undefined {
  if (typeof id !== 'string') return undefined;
  const m = /^ptr-approval:([A-Za-z0-9_-]{1,100}):([A-Za-z0-9-]{1,64})$/.exec(id);
  return m ? { taskId: m[1]!, approval: m[2]! } : undefined;
}
