import { expect } from 'chai';
import { prettyLine } from '../../src/pretty-log';
import { sdkLogFields } from '../../src/temporal/runtime';

describe('pretty log lines (LOG_FORMAT=pretty)', () => {
  it('puts time, level, the run, who logged and the message first, then the other fields as key=value', () => {
    const line = JSON.stringify({ level: 40, time: '2026-11-27T18:25:59.336Z', pid: 1, hostname: 'vm', name: 'worker', component: 'webhooks', run: 'run/alice/default/haiku/r1', msg: 'webhook failed', attempt: 2, error: 'connect refused' });
    expect(prettyLine(line)).to.equal('18:25:59 WARN  [alice/default/haiku/r1] worker/webhooks: webhook failed attempt=2 error="connect refused"');
  });

  it("takes the run from an SDK entry's workflow id, and shows an error object as its type and message without its stack", () => {
    const line = JSON.stringify({ level: 50, time: '2026-11-27T18:00:00.000Z', name: 'api', workflowId: 'run/bob/work/t/x', msg: 'failed', err: { type: 'TypeError', message: 'boom', stack: 'TypeError: boom\n    at x' } });
    expect(prettyLine(line)).to.equal('18:00:00 ERROR [bob/work/t/x] api: failed err="TypeError: boom"');
  });

  it('leaves a line that is not a JSON object as it is', () => {
    expect(prettyLine('plain text')).to.equal('plain text');
    expect(prettyLine('[1,2]')).to.equal('[1,2]');
  });
});

describe("the Temporal SDK's log entries", () => {
  it('keep what an operator reads of an activity failure, the error as one line', () => {
    const error = Object.assign(new Error('openai could not be reached: Request was aborted.'), { type: 'ProviderUnreachable' });
    const fields = sdkLogFields({ isLocal: false, attempt: 1, namespace: 'default', taskToken: 'CiQw…', activityId: '3', activityType: 'callModel', taskQueue: 'q', workflowId: 'run/a/default/t/r', workflowRunId: 'x', workflowType: 'runTask', error, durationMs: 12 });
    expect(fields).to.deep.equal({ activityType: 'callModel', workflowId: 'run/a/default/t/r', attempt: 1, durationMs: 12, workflowType: 'runTask', error: 'ProviderUnreachable: openai could not be reached: Request was aborted.' });
  });

  it('keep the metadata of an entry about no activity or workflow, without task tokens', () => {
    expect(sdkLogFields({ sdkComponent: 'worker', taskQueue: 'q', task_token: 'abc' })).to.deep.equal({ sdkComponent: 'worker', taskQueue: 'q' });
  });
});
