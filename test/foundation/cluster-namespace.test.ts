import net from 'node:net';
import { expect } from 'chai';
import { registerNamespace } from '../../src/cli/cluster-temporal';
import { getStack } from '../helpers/stack';
import { freePort } from '../helpers/net';

/**
 * `npm run stack:cluster` (and the cluster suite) registers our namespace and search attributes once its
 * temporal-server answers: here a real Temporal server reached through a port that opens only 12 s after the call,
 * as a temporal-server still starting on a busy machine (the SDK's `Connection.connect` gives up after 10 s).
 */
describe('the cluster\'s namespace registration', () => {
  it('waits for a Temporal server that starts answering after the SDK\'s 10 s connect deadline', async function () {
    this.timeout(90_000);
    const port = await freePort();
    const [host, target] = getStack().config.TEMPORAL_ADDRESS.split(':') as [string, string];
    let server: net.Server | undefined;
    const late = setTimeout(() => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target), host);
        client.pipe(upstream).pipe(client);
        const end = () => (client.destroy(), upstream.destroy());
        client.on('error', end);
        upstream.on('error', end);
      }).listen(port, '127.0.0.1');
    }, 12_000);
    const started = Date.now();
    try {
      await registerNamespace(`127.0.0.1:${port}`, getStack().config.TEMPORAL_NAMESPACE, 60_000);
      expect(Date.now() - started, 'registered once the port opened').to.be.at.least(12_000);
    } finally {
      clearTimeout(late);
      await new Promise((r) => (server ? server.close(r) : r(undefined)));
    }
  });
});
