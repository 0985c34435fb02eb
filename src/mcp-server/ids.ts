import crypto from 'node:crypto';
import { runWorkflowId } from '../store/runs';
import { mcpTaskId } from '../store/mcp-tasks';
import type { RunIdentity } from '../contract/types';
import type { OpenAsk } from './protocol';

/** What a session's client declared at `initialize` that the server needs later, on any API process. */
export interface SessionFacts {
  /** It takes `elicitation/create` in form mode (approvals, and inputs with a schema, are asked so). */
  elicit: boolean;
  /** It takes `elicitation/create` in URL mode (inputs that send the person to a page are asked so). */
  elicitUrl: boolean;
}
/** What a request without a session id is taken to have declared: no elicitation. */
export const ELICITS_NOTHING: SessionFacts = { elicit: false, elicitUrl: false };
/** The facts in a session id: `e` form, `u` URL, both, or `n` neither (ids made before URL mode say `e` or `n`). */
const FLAGS = new Set(['e', 'u', 'eu', 'n']);
const flagsOf = (client: SessionFacts) => `${client.elicit ? 'e' : ''}${client.elicitUrl ? 'u' : ''}` || 'n';

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
      const flags = flagsOf(client);
      return `${nonce}.${flags}.${mac('mcp-session', username, nonce, flags)}`;
    },
    /** What `session` says of its client, when newSession made it for `username`; undefined otherwise (another user's, made up). */
    sessionOf(session: string, username: string): SessionFacts | undefined {
      const [nonce, flags, tag, ...rest] = session.split('.');
      if (rest.length > 0 || !nonce || !tag || flags === undefined || !FLAGS.has(flags)) return undefined;
      return same(tag, mac('mcp-session', username, nonce, flags)) ? { elicit: flags.includes('e'), elicitUrl: flags.includes('u') } : undefined;
    },
  };
}

export type Ids = ReturnType<typeof createIds>;

/** What an `elicitation/create` of ours asks about: a decision on an approval, or an input a run's MCP tool asked for. */
export interface AskedOf {
  kind: OpenAsk['kind'];
  /** The MCP task of the run that waits. */
  taskId: string;
  /** The approval's or the input's id, as the run's entry gives it. */
  id: string;
}

/**
 * The JSON-RPC id of an `elicitation/create` asking about approval or input `id` of the run of MCP task `taskId`
 * (`ptr-approval:<taskId>:<id>`, `ptr-input:<taskId>:<id>`): whichever process receives the client's answer finds the
 * run (through the task, which must be the answering user's) and what it asked.
 */
export const askRequestId = ({ kind, taskId, id }: AskedOf) => `ptr-${kind}:${taskId}:${id}`;

export function parseAskRequestId(id: unknown): AskedOf | undefined {
  if (typeof id !== 'string') return undefined;
  const m = /^ptr-(approval|input):([A-Za-z0-9_-]{1,100}):([A-Za-z0-9-]{1,64})$/.exec(id);
  return m ? { kind: m[1] as AskedOf['kind'], taskId: m[2]!, id: m[3]! } : undefined;
}
