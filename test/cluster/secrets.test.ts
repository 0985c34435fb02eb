import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { logFile } from '../../src/cli/cluster-postgres';
import { FERRETDB_DB } from '../../src/cli/cluster-topology';
import { TEMPORAL_DB, VISIBILITY_DB } from '../../src/cli/cluster-temporal';
import { taskBody } from '../helpers/api';
import { until } from '../helpers/runs';
import { SecretScanner } from '../faults/scan';
import { clusterStack } from './harness';
import { postSignedTo, signedInOnBoth } from './clients';

/**
 * A whole database as pg_dump writes it (COPY data as text), with every bytea value (`\x<hex>`: Temporal's history
 * blobs, FerretDB's nothing) decoded to its bytes, so a secret inside a blob reads as it is.
 */
async function dumpText(db: string): Promise<string> {
  const { postgres } = clusterStack();
  const { stdout } = await promisify(execFile)(
    path.join(postgres.binDir, 'pg_dump'),
    ['--data-only', '-h', '127.0.0.1', '-p', String(postgres.port), '-U', postgres.user, '-d', db],
    { env: { PGPASSWORD: postgres.password }, maxBuffer: 1 << 30 },
  );
  return stdout.replace(/\\\\x([0-9a-f]+)/g, (_m, hex: string) => Buffer.from(hex, 'hex').toString('latin1'));
}

describe('secrets on the cluster topology', () => {
  it('keeps provider keys, the master key and the signing secret out of PostgreSQL and every log', async function () {
    this.timeout(120_000);
    const { env, fake, apiUrls } = clusterStack();
    const taskKey = `sk-task-${crypto.randomBytes(16).toString('hex')}`;
    const { user, apis } = await signedInOnBoth();
    // One task with its own key, one on the operator's key: both keys go to the provider, neither may be stored.
    for (const [name, body] of [['own-key', taskBody('openai', 'Say {{ text }}', 'test-model', taskKey)], ['operator-key', taskBody('openai', 'Say {{ text }}', 'test-model')]] as const) {
      const put = await apis[0]!.put(`/api/tasks/~/default/${name}`, body);
      expect(put.status, put.text).to.equal(201);
      const signed = await apis[1]!.post(`/api/tasks/~/default/${name}/signed`);
      const started = await postSignedTo(apiUrls[1]! + new URL(signed.body.url).pathname + new URL(signed.body.url).search, { text: 'secret test' }, { 'run-id': 'one' });
      expect(started.status, started.text).to.equal(201);
      await until(`${name}'s run to close`, async () => {
        const res = await apis[0]!.get(`/api/runs/~/default/${name}/one`);
        return res.status === 200 && res.body.status === 'ready';
      });
    }
    const sent = fake.requests.map((r) => String(r.headers.authorization));
    expect(sent, 'the task key reached the provider').to.include(`Bearer ${taskKey}`);
    expect(sent, "the operator's key reached the provider").to.include(`Bearer ${env.OPENAI_API_KEY}`);

    const scanner = new SecretScanner([
      { kind: 'task provider key', value: taskKey },
      { kind: 'operator provider key', value: env.OPENAI_API_KEY! },
      { kind: 'master key', value: env.MASTER_KEY!.split(':')[1]! },
      { kind: 'signing secret', value: env.SIGNING_SECRET! },
    ]);
    for (const db of [TEMPORAL_DB, VISIBILITY_DB, FERRETDB_DB]) {
      const text = await dumpText(db);
      // What the scan reads holds the runs (so it would find a secret beside them): their workflow ids, their owner.
      expect(text, `${db}'s dump names the run`).to.include(db === FERRETDB_DB ? user : `run/${user}/default/own-key/one`);
      scanner.check(`postgresql ${db}`, [text]);
    }
    const logDir = path.resolve('test-results', 'cluster', 'logs');
    scanner.scanFiles([...fs.readdirSync(logDir).map((f) => path.join(logDir, f)), logFile(clusterStack().postgres)]);
    expect(scanner.hits).to.deep.equal([]);
  });
});
