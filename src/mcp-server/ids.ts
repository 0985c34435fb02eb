import crypto from 'node:crypto';
import { runWorkflowId } from '../store/runs';
import { mcpTaskId } from '../store/mcp-tasks';
import type { RunIdentity } from '../contract/types';

/** What a session's client declared at `initialize` that the server needs later, on any API process. */
export interface SessionFacts {
  /** It takes `elicitation/create` in form mode (approvals are asked so). */
  elicit: boolean;
}
const ELICITS = 'e';
const NO_ELICITATION = 'n';

/**
 * The identifiers this server hands out, each checkable by any API process without shared memory: derived with
 * SIGNING_SECRET, so they cannot be guessed, and bound to the user they were made for.
 */
export function createIds(secret: string) {
  const mac = (purpose: string, ...parts: string[]) => crypto.createHmac('sha256', secret).update([purpose, ...parts].join('\n')).digest('base64url');
  const same = (a: string, b: string) => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));

  return {
    /** The MCP task id of a run: the same run (a retried call) always gets the same id, and only its owner's. */
    taskId: (run: RunIdentity) => mcpTaskId(secret, run.owner, runWorkflowId(run)),

    /**
     * A new `Mcp-Session-Id` for `username`: a random part, what the client declared it can do, and their MAC (no
     * session is stored anywhere: any API process reads the client's capabilities back from the id).
     */
    newSession(username: string, client: SessionFacts): string {
      const nonce = crypto.randomBytes(16).toString('base64url');
      const flags = client.elicit ? ELICITS : NO_ELICITATION;
      return `${nonce}.${flags}.${mac('mcp-session', username, nonce, flags)}`;
    },
    /** What `session` says of its client, when newSession made it for `username`; undefined otherwise (another user's, made up). */
    sessionOf(session: string, username: string): SessionFacts | undefined {
      const [nonce, flags, tag, ...rest] = session.split('.');
      if (rest.length > 0 || !nonce || !tag || (flags !== ELICITS && flags !== NO_ELICITATION)) return undefined;
      return same(tag, mac('mcp-session', username, nonce, flags)) ? { elicit: flags === ELICITS } : undefined;
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
