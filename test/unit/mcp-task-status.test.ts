import { expect } from 'chai';
import { elicitsForm, elicitsUrl, taskStatusOf } from '../../src/mcp-server/protocol';
import { howToAnswer } from '../../src/mcp-server/how-to-answer';
import { createIds } from '../../src/mcp-server/ids';
import type { RunView } from '../../src/http/presenters/run';

type Run = Pick<RunView, 'status' | 'results'>;
const run = (status: RunView['status'], ...results: unknown[]) => ({ status, results }) as Run;
const howTo = howToAnswer('https://ptr.example', { owner: 'alice', profile: 'work', task: 'report', run: 'r1' });
const RUN_URL = 'https://ptr.example/api/runs/alice/work/report/r1';

describe('MCP server: a run\'s status as an MCP task\'s (protocol.ts)', () => {
  it('maps pending and running to working, ready to completed, and an error to failed or, cancelled by a person, cancelled', () => {
    expect(taskStatusOf(run('pending', { msg: 'retrying in 2 s', time: 0, level: 40 })).status).to.equal('working');
    expect(taskStatusOf(run('running')).status).to.equal('working');
    expect(taskStatusOf(run('ready', { msg: 'done', lastMessage: { role: 'assistant', content: 'hi' } })).status).to.equal('completed');
    expect(taskStatusOf(run('error', { msg: 'failed', lastMessage: { role: 'assistant', content: '' }, error: 'the provider refused' }))).to.deep.equal({ status: 'failed', message: 'the provider refused' });
    expect(taskStatusOf(run('error', { msg: 'cancelled', lastMessage: { role: 'assistant', content: '' }, error: 'cancelled by alice' })).status).to.equal('cancelled');
  });

  it('maps a run waiting on an approval to input_required, saying which tool and how to decide it', () => {
    const waiting = run('pending', { msg: 'approval needed: mail__send', approval: { id: 'a-1', tool: 'mail__send', arguments: { to: 'x' } } });
    expect(taskStatusOf(waiting)).to.deep.equal({ status: 'input_required', message: 'waiting for a decision on a call of the tool "mail__send"' });
    const told = taskStatusOf(waiting, howTo).message!;
    expect(told).to.include(`POST ${RUN_URL}/approvals/a-1 {"approve": true}`).and.include('`ptr run approve report r1 a-1 --profile work`');
  });

  it('maps a run waiting on a person\'s input to input_required, saying what is asked and how to answer it', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const waiting = run('pending', { msg: 'input needed: ev__x', input: { id: 'i-1', tool: 'ev__x', message: 'Which city?', schema } });
    const { status, message } = taskStatusOf(waiting, howTo);
    expect(status).to.equal('input_required');
    expect(message).to.match(/^waiting for the user's input for the tool "ev__x": Which city\? Answer with /);
    expect(message).to.include(`POST ${RUN_URL}/inputs/i-1 {"action": "accept", "content": <an object matching ${JSON.stringify(schema)}>}`);
  });

  it('sends a person asked for an input in URL mode to its page first', () => {
    const waiting = run('pending', { msg: 'input needed: ev__login', input: { id: 'i-2', tool: 'ev__login', message: 'Sign in', url: 'https://auth.example/flow/9' } });
    const { status, message } = taskStatusOf(waiting, howTo);
    expect(status).to.equal('input_required');
    expect(message).to.include('Open https://auth.example/flow/9, then answer with').and.include(`POST ${RUN_URL}/inputs/i-2 {"action": "accept"}`);
  });

  it('keeps a run working while an input entry is not its last, or the run is not pending', () => {
    const input = { msg: 'input needed: ev__x', input: { id: 'i-1', tool: 'ev__x', message: 'Which city?', schema: { type: 'object' } } };
    expect(taskStatusOf(run('running', input)).status).to.equal('working');
    expect(taskStatusOf(run('pending', input, { msg: 'answered', time: 0, level: 30 })).status).to.equal('working');
  });
});

describe('MCP server: what a session id remembers of its client (ids.ts)', () => {
  const ids = createIds('s'.repeat(32));

  it('reads back which elicitation the client takes, for its own user only', () => {
    for (const facts of [
      { elicit: true, elicitUrl: false },
      { elicit: false, elicitUrl: false },
      { elicit: true, elicitUrl: true },
      { elicit: false, elicitUrl: true },
    ]) {
      expect(ids.sessionOf(ids.newSession('alice', facts), 'alice')).to.deep.equal(facts);
      expect(ids.sessionOf(ids.newSession('alice', facts), 'bob')).to.equal(undefined);
    }
  });

  it('refuses a session id whose flags were changed', () => {
    const [nonce, , tag] = ids.newSession('alice', { elicit: false, elicitUrl: false }).split('.');
    expect(ids.sessionOf(`${nonce}.e.${tag}`, 'alice')).to.equal(undefined);
  });

  it('takes form elicitation from a capability naming form, or naming no mode', () => {
    expect(elicitsForm({ elicitation: {} })).to.equal(true);
    expect(elicitsForm({ elicitation: { form: {} } })).to.equal(true);
    expect(elicitsForm({ elicitation: { url: {} } })).to.equal(false);
    expect(elicitsForm({})).to.equal(false);
    expect(elicitsForm(undefined)).to.equal(false);
  });

  it('takes URL elicitation only from a capability naming url', () => {
    expect(elicitsUrl({ elicitation: { url: {} } })).to.equal(true);
    expect(elicitsUrl({ elicitation: { form: {}, url: {} } })).to.equal(true);
    expect(elicitsUrl({ elicitation: {} })).to.equal(false);
    expect(elicitsUrl(undefined)).to.equal(false);
  });
});
