import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { expect } from 'chai';
import { createApp } from '../../src/http/app';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { freePort } from '../helpers/net';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';

describe('runs: Temporal unreachable', () => {
  it('answers a trigger with 503 and a retry hint, and the same trigger later starts the run', async () => {
    const { api } = await signedIn();
    const stack = getStack();
    await createTask(api, 'default', 'outage');
    // An API whose Temporal is a closed port (no gRPC retries, so the failure comes at once).
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, interceptors: [] });
    const server = http.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const config = stack.configWith({ PUBLIC_URL: url });
    server.on('request', createApp({ config, logger: stack.logger, db: stack.db, keyring: stack.keyring, temporal: new Client({ connection }) }).callback());
    try {
      const signed = (await signedUrl(api, 'default', 'outage')).replace(stack.config.PUBLIC_URL, url);
      const down = await postSigned(signed, { text: 'later' }, { 'run-id': 'o1' });
      expect(down.status, down.text).to.equal(503);
      expect(down.body.error.code).to.equal('temporal_unavailable');
      expect(down.body.error.run, 'the answer names the run it may have recorded').to.equal('o1');
      expect(down.body.error.message).to.contain('retry');
      const again = await postSigned(signed.replace(url, stack.config.PUBLIC_URL), { text: 'ignored' }, { 'run-id': 'o1' });
      expect(again.status).to.equal(200);
      const run = await waitForRun(api, again.body.url);
      expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say later');
    } finally {
      server.closeAllConnections();
      server.close();
      await connection.close().catch(() => undefined);
    }
  });
});
