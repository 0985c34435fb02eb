import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { loadConfig, REQUIRED_VARIABLES } from '../../src/config';

// Docker does not run on these machines, so the compose file is checked as data: every variable the config requires
// is set for both app services, and with placeholder secrets the resulting environment passes the config's parser.
describe('docker-compose.yml', () => {
  const compose = parse(fs.readFileSync(path.join(__dirname, '../../docker-compose.yml'), 'utf8'), { merge: true });

  for (const service of ['api', 'worker']) {
    it(`sets every required variable for the ${service} service`, () => {
      const env = compose.services[service].environment as Record<string, unknown>;
      for (const name of REQUIRED_VARIABLES) expect(env, name).to.have.property(name);
      const resolved = Object.fromEntries(
        Object.entries(env).map(([k, v]) => [
          k,
          String(v).replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_m, name: string, kind?: string, rest?: string) =>
            name === 'MASTER_KEY'
              ? `k1:${Buffer.alloc(32).toString('base64')}`
              : name === 'SIGNING_SECRET'
                ? 's'.repeat(32)
                : kind === '-'
                  ? (rest ?? '')
                  : '',
          ),
        ]),
      );
      expect(() => loadConfig(resolved)).not.to.throw();
    });
  }

  it('runs MongoDB, Temporal with its own database, and the Temporal Web UI', () => {
    expect(compose.services).to.include.keys('mongo', 'temporal', 'postgresql', 'temporal-ui');
    expect(compose.services.api.build).to.equal('.');
    expect(compose.services.worker.build).to.equal('.');
  });
});
