import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config';

const minimal = {
  MONGO_URL: 'mongodb://127.0.0.1:27017/x',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  MASTER_KEY: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
  SIGNING_SECRET: 'x'.repeat(32),
};

describe('configuration: run retention', () => {
  it('keeps runs for ever unless RUN_RETENTION_DAYS is set, and runs the schedule hourly', () => {
    expect(loadConfig(minimal).RUN_RETENTION_DAYS).to.equal(undefined);
    expect(loadConfig({ ...minimal, RUN_RETENTION_DAYS: '' }).RUN_RETENTION_DAYS).to.equal(undefined);
    expect(loadConfig(minimal).RETENTION_INTERVAL_MS).to.equal(3_600_000);
  });

  it('takes whole or fractional days, and refuses zero, negative and non-numbers naming the variable', () => {
    expect(loadConfig({ ...minimal, RUN_RETENTION_DAYS: '30' }).RUN_RETENTION_DAYS).to.equal(30);
    expect(loadConfig({ ...minimal, RUN_RETENTION_DAYS: '0.25' }).RUN_RETENTION_DAYS).to.equal(0.25);
    for (const bad of ['0', '-1', 'forever']) {
      expect(() => loadConfig({ ...minimal, RUN_RETENTION_DAYS: bad }), bad).to.throw(ConfigError, /RUN_RETENTION_DAYS/);
    }
    expect(() => loadConfig({ ...minimal, RETENTION_INTERVAL_MS: '10' })).to.throw(ConfigError, /RETENTION_INTERVAL_MS/);
  });
});
