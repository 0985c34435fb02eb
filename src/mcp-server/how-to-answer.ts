import { approveCommand } from '../cli/ptr/approvals';
import { runUrlB } from '../http/routes/runs/router';
import type { RunIdentity } from '../contract/types';
import type { HowToAnswer, OpenAsk } from './protocol';

/** At most this many characters of a requested schema in a message: the whole is in the run's entry. */
const SCHEMA_SHOWN = 300;

/** How to answer an input: at its page (URL mode), or with `content` matching its schema. */
function inputHowTo(runUrl: string, ask: Extract<OpenAsk, { kind: 'input' }>): string {
  const route = `POST ${runUrl}/inputs/${ask.id}`;
  const refuse = '("decline" or "cancel" to refuse)';
  if (ask.url) return `Open ${ask.url}, then answer with ${route} {"action": "accept"} ${refuse}.`;
  const schema = JSON.stringify(ask.schema ?? { type: 'object' });
  const shown = schema.length > SCHEMA_SHOWN ? `${schema.slice(0, SCHEMA_SHOWN - 1)}…` : schema;
  return `Answer with ${route} {"action": "accept", "content": <an object matching ${shown}>} ${refuse}.`;
}

/**
 * How the person a run of `id` waits on answers it without the MCP client (the HTTP route, and for approvals the
 * command `ptr approvals` prints): for clients that are not asked by elicitation, and for every `tasks/get`.
 */
export function howToAnswer(publicUrl: string, id: RunIdentity): HowToAnswer {
  const runUrl = runUrlB(publicUrl, id.owner, id.profile, id.task, id.run);
  return (ask) =>
    ask.kind === 'approval'
      ? `Decide it with POST ${runUrl}/approvals/${ask.id} {"approve": true} (or false, with a "reason" for the model), or \`${approveCommand({ run_url: runUrl, id: ask.id })}\` (--deny to deny).`
      : inputHowTo(runUrl, ask);
}
