import { expect } from 'chai';
import { loadConfig } from '../../src/config';
import { AppError } from '../../src/errors';
import { parseTaskBody } from '../../src/http/routes/tasks/schema';

const base = {
  MONGO_URL: 'mongodb://127.0.0.1:27017/x',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  MASTER_KEY: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
  SIGNING_SECRET: 'x'.repeat(32),
};
const body = (limits: unknown) => ({ runner: 'openai', openai: { prompt: 'p', model: 'm' }, limits });

/** The 400's message for `limits`, or undefined when the body is accepted. */
function refusal(config: ReturnType<typeof loadConfig>, limits: unknown): string | undefined {
  try {
    parseTaskBody(body(limits), 'B', config);
    return undefined;
  } catch (err) {
    expect(err).to.be.instanceOf(AppError);
    expect((err as AppError).status).to.equal(400);
    return (err as Error).message;
  }
}

describe('task limits: the server\'s ceilings', () => {
  it('takes any token budget when RUN_MAX_TOTAL_TOKENS is unset, and none above it when set', () => {
    const open = loadConfig(base);
    expect(open.RUN_MAX_TOTAL_TOKENS).to.equal(undefined);
    expect(refusal(open, { max_total_tokens: 10_000_000 })).to.equal(undefined);
    const capped = loadConfig({ ...base, RUN_MAX_TOTAL_TOKENS: '50000' });
    expect(refusal(capped, { max_total_tokens: 50_000 })).to.equal(undefined);
    expect(refusal(capped, { max_total_tokens: 50_001 })).to.match(/^limits\.max_total_tokens: at most 50000, this server's RUN_MAX_TOTAL_TOKENS/);
  });

  it('follows RUN_MAX_TURNS and RUN_TIMEOUT_MS', () => {
    const config = loadConfig({ ...base, RUN_MAX_TURNS: '5', RUN_TIMEOUT_MS: '90000' });
    expect(refusal(config, { max_turns: 5, timeout_s: 90 })).to.equal(undefined);
    expect(refusal(config, { max_turns: 6 })).to.match(/^limits\.max_turns: at most 5/);
    expect(refusal(config, { timeout_s: 91 })).to.match(/^limits\.timeout_s: at most 90 s/);
  });

  it('keeps only the limits given, and none for an empty or null object', () => {
    const config = loadConfig(base);
    expect(parseTaskBody(body({ max_turns: 2 }), 'B', config).spec.limits).to.deep.equal({ max_turns: 2 });
    expect(parseTaskBody(body({}), 'B', config).spec.limits).to.equal(null);
    expect(parseTaskBody(body(null), 'B', config).spec.limits).to.equal(null);
    expect(parseTaskBody({ runner: 'openai', openai: { prompt: 'p', model: 'm' } }, 'B', config).spec.limits).to.equal(null);
  });
});
