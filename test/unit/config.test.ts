import { expect } from 'chai';
import { ConfigError, loadConfig, REQUIRED_VARIABLES } from '../../src/config';

const minimal = {
  MONGO_URL: 'mongodb://127.0.0.1:27017/x',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  MASTER_KEY: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
  SIGNING_SECRET: 'x'.repeat(32),
};

describe('configuration', () => {
  it('starts from the required variables alone, with documented defaults', () => {
    const c = loadConfig(minimal);
    expect(c.PORT).to.equal(8080);
    expect(c.PUBLIC_URL).to.equal('http://127.0.0.1:8080');
    expect(c.TEMPORAL_TASK_QUEUE).to.equal('prompt-tasks');
    expect(c.MASTER_KEY.id).to.equal('k1');
    // The hosted service's Variant A documentation supports gpt-4o; short-form tasks elsewhere default to the mini.
    expect(c.VARIANT_A_MODEL).to.equal('gpt-4o');
    expect(c.OPENAI_DEFAULT_MODEL).to.equal('gpt-5.4-mini');
    expect(c.ANTHROPIC_DEFAULT_MODEL).to.equal('claude-sonnet-5-5');
    expect(loadConfig({ ...minimal, VARIANT_A_MODEL: 'gpt-4.1' }).VARIANT_A_MODEL).to.equal('gpt-4.1');
  });

  it('lists every bad or missing variable in one message', () => {
    try {
      loadConfig({ PORT: 'eighty', MASTER_KEY: 'k1:c2hvcnQ=' });
      expect.fail('should throw');
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      const message = (err as Error).message;
      for (const name of ['PORT', 'MONGO_URL: required', 'TEMPORAL_ADDRESS: required', 'SIGNING_SECRET: required', 'MASTER_KEY']) {
        expect(message).to.contain(name);
      }
      expect(message).to.contain('decodes to 5 bytes');
    }
  });

  it('caps one owner\'s provider calls on a worker at half the worker\'s unless set, naming a bad value', () => {
    expect(loadConfig(minimal).WORKER_MAX_PROVIDER_CALLS_PER_OWNER).to.equal(1_000);
    expect(loadConfig({ ...minimal, WORKER_MAX_PROVIDER_CALLS: '9' }).WORKER_MAX_PROVIDER_CALLS_PER_OWNER).to.equal(4);
    expect(loadConfig({ ...minimal, WORKER_MAX_PROVIDER_CALLS: '1' }).WORKER_MAX_PROVIDER_CALLS_PER_OWNER).to.equal(1);
    expect(loadConfig({ ...minimal, WORKER_MAX_PROVIDER_CALLS_PER_OWNER: '3' }).WORKER_MAX_PROVIDER_CALLS_PER_OWNER).to.equal(3);
    expect(loadConfig({ ...minimal, WORKER_MAX_PROVIDER_CALLS_PER_OWNER: '' }).WORKER_MAX_PROVIDER_CALLS_PER_OWNER).to.equal(1_000);
    expect(() => loadConfig({ ...minimal, WORKER_MAX_PROVIDER_CALLS_PER_OWNER: '0' })).to.throw(ConfigError, /WORKER_MAX_PROVIDER_CALLS_PER_OWNER/);
  });

  it('bounds how long a run\'s first model call waits to record the run running (0: at once)', () => {
    expect(loadConfig(minimal).RUN_START_WRITE_DELAY_MS).to.equal(250);
    expect(loadConfig({ ...minimal, RUN_START_WRITE_DELAY_MS: '0' }).RUN_START_WRITE_DELAY_MS).to.equal(0);
    for (const bad of ['-1', '10001', 'soon']) {
      expect(() => loadConfig({ ...minimal, RUN_START_WRITE_DELAY_MS: bad }), bad).to.throw(ConfigError, 'RUN_START_WRITE_DELAY_MS');
    }
  });

  it('names the required variables', () => {
    expect(REQUIRED_VARIABLES).to.have.members(['MONGO_URL', 'TEMPORAL_ADDRESS', 'MASTER_KEY', 'SIGNING_SECRET']);
  });
});
