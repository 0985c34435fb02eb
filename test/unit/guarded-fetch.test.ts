import { expect } from 'chai';
import type { Agent } from 'undici';
import { createGuardedFetch } from '../../activities/servlets/guarded-fetch';
import { guardedRequest } from '../../src/net/guarded-request';
import { parseNetworkPolicy } from '../../src/net/network-policy';
import { AddressRefusedError, createPinnedAgent, pinnedLookup } from '../../src/net/pinned-agent';
import { startCountingServer, type CountingServer } from '../servlets/counting-server';

// Every server here listens on loopback; nothing is ever sent anywhere else.
describe('guarded fetch', () => {
  let target: CountingServer;
  const agents: Agent[] = [];

  function guarded(options: { allow?: string[]; block?: string[]; domains?: string[] | null; maxResponseBytes?: number } = {}) {
    const policy = parseNetworkPolicy({ blocklist: options.block ?? [], allowlist: options.allow ?? [] });
    const dispatcher = createPinnedAgent(policy, { connectTimeoutMs: 2_000 });
    agents.push(dispatcher);
    return createGuardedFetch({
      policy,
      dispatcher,
      domains: options.domains === undefined ? null : options.domains,
      maxResponseBytes: options.maxResponseBytes ?? 64 * 1024,
      maxRedirects: 3,
    });
  }

  beforeEach(async () => {
    target = await startCountingServer('127.0.0.1');
  });
  afterEach(async () => {
    await target.close();
    await Promise.all(agents.splice(0).map((a) => a.close()));
  });

  it('refuses loopback by address, name, decimal form and IPv4-mapped form, and the server never sees a request', async () => {
    const fetch = guarded();
    const v6 = await startCountingServer('::1');
    try {
      for (const u of [
        `http://127.0.0.1:${target.port}/`,
        `http://localhost:${target.port}/`,
        `http://2130706433:${target.port}/`,
        `http://[::ffff:127.0.0.1]:${target.port}/`,
        `http://[::1]:${v6.port}/`,
      ]) {
        const res = await fetch(u);
        expect(res.status, u).to.equal(403);
        expect(await res.text(), u).to.match(/^servlet network request refused: .*loopback/);
      }
      expect(target.hits).to.equal(0);
      expect(v6.hits).to.equal(0);
    } finally {
      await v6.close();
    }
  });

  it('refuses a name whose addresses include a blocked one, at connection time', async () => {
    const lookup = pinnedLookup(parseNetworkPolicy({ blocklist: [], allowlist: [] }));
    const err = await new Promise<Error | null>((resolve) => lookup('localhost', { all: true }, (e) => resolve(e)));
    expect(err).to.be.instanceOf(AddressRefusedError);
    expect(err!.message).to.match(/localhost resolves to .*loopback/);
  });

  it('reaches a private host the allow list names', async () => {
    const res = await guarded({ allow: ['127.0.0.1'] })(`${target.url}/hello`);
    expect(res.status).to.equal(200);
    expect(await res.text()).to.equal('reached /hello');
    expect(target.hits).to.equal(1);
  });

  it('reaches an allow-listed host name through its pinned addresses', async () => {
    const res = await guarded({ allow: ['localhost'] })(`http://localhost:${target.port}/by-name`);
    expect(await res.text()).to.equal('reached /by-name');
  });

  describe('redirects', () => {
    it('follows a redirect between allowed URLs, checking each hop', async () => {
      const hops = await startCountingServer('127.0.0.1', (req, res) => {
        if (req.url === '/start') res.writeHead(302, { location: '/end' }).end();
        else res.end(`reached ${req.url}`);
      });
      try {
        const res = await guarded({ allow: ['127.0.0.1'] })(`${hops.url}/start`);
        expect(await res.text()).to.equal('reached /end');
        expect(hops.hits).to.equal(2);
      } finally {
        await hops.close();
      }
    });

    it('refuses a redirect to a blocked address, and the blocked server never sees a request', async () => {
      const blocked = await startCountingServer('127.0.0.2');
      const blocked6 = await startCountingServer('::1');
      const destinations = [blocked.url, blocked6.url, `http://localhost:${target.port}/`, 'file:///etc/passwd', `http://0x7f000002:${blocked.port}/`];
      const redirector = await startCountingServer('127.0.0.1', (req, res) => {
        res.writeHead(302, { location: destinations[Number(req.url!.slice(1))] }).end();
      });
      try {
        const fetch = guarded({ allow: ['127.0.0.1'] });
        for (let i = 0; i < destinations.length; i++) {
          const res = await fetch(`${redirector.url}/${i}`);
          expect(res.status, destinations[i]).to.equal(403);
        }
        expect(redirector.hits).to.equal(destinations.length);
        expect(blocked.hits + blocked6.hits + target.hits).to.equal(0);
      } finally {
        await Promise.all([blocked.close(), blocked6.close(), redirector.close()]);
      }
    });

    it('refuses a redirect into a blocked URL prefix', async () => {
      const site = await startCountingServer('127.0.0.1', (req, res) => {
        if (req.url === '/start') res.writeHead(307, { location: '/Admin/panel' }).end();
        else res.end('admin panel');
      });
      try {
        const res = await guarded({ allow: ['127.0.0.1'], block: [`${site.url}/admin`] })(`${site.url}/start`);
        expect(res.status).to.equal(403);
        expect(await res.text()).to.contain('NETWORK_BLOCKLIST');
        expect(site.hits).to.equal(1);
      } finally {
        await site.close();
      }
    });

    it('gives up after the configured number of hops', async () => {
      const loop = await startCountingServer('127.0.0.1', (req, res) => res.writeHead(302, { location: req.url }).end());
      try {
        const res = await guarded({ allow: ['127.0.0.1'] })(`${loop.url}/again`);
        expect(res.status).to.equal(502);
        expect(await res.text()).to.contain('more than 3 redirects');
      } finally {
        await loop.close();
      }
    });

    it('drops credentials when a redirect leaves the origin', async () => {
      const other = await startCountingServer('127.0.0.1');
      const site = await startCountingServer('127.0.0.1', (_req, res) => res.writeHead(302, { location: `${other.url}/landing` }).end());
      try {
        await guarded({ allow: ['127.0.0.1'] })(`${site.url}/`, { headers: { authorization: 'Bearer servlet-secret', 'x-kept': 'yes' } });
        expect(site.requests[0]!.authorization).to.equal('Bearer servlet-secret');
        expect(other.requests[0]!.authorization).to.equal(undefined);
        expect(other.requests[0]!['x-kept']).to.equal('yes');
      } finally {
        await Promise.all([other.close(), site.close()]);
      }
    });
  });

  describe("an install's allowed hosts", () => {
    it('refuses everything when the list is empty', async () => {
      const res = await guarded({ allow: ['127.0.0.1'], domains: [] })(`${target.url}/`);
      expect(res.status).to.equal(403);
      expect(await res.text()).to.contain('may not use the network');
      expect(target.hits).to.equal(0);
    });

    it('refuses hosts outside the list and lets listed ones through', async () => {
      const narrowed = await guarded({ allow: ['127.0.0.1'], domains: ['*.example.com'] })(`${target.url}/`);
      expect(narrowed.status).to.equal(403);
      expect(await narrowed.text()).to.contain("not among this install's allowed hosts");
      expect(target.hits).to.equal(0);

      const listed = await guarded({ allow: ['127.0.0.1'], domains: ['127.0.0.1'] })(`${target.url}/`);
      expect(listed.status).to.equal(200);
      expect(target.hits).to.equal(1);
    });

    it('still applies the blocklist to hosts the install lists', async () => {
      const res = await guarded({ domains: ['127.0.0.1'] })(`${target.url}/`);
      expect(res.status).to.equal(403);
      expect(target.hits).to.equal(0);
    });
  });

  it('answers a body over the size cap with a 502 instead of the body', async () => {
    const big = await startCountingServer('127.0.0.1', (_req, res) => res.end(Buffer.alloc(100_000, 'x')));
    try {
      const res = await guarded({ allow: ['127.0.0.1'], maxResponseBytes: 1_000 })(`${big.url}/`);
      expect(res.status).to.equal(502);
      expect(await res.text()).to.contain('over the 1000-byte limit');
    } finally {
      await big.close();
    }
  });

  it('answers one guarded request as refused, failed (saying whether in time) or answered, following no redirect', async () => {
    const policy = parseNetworkPolicy({ blocklist: [], allowlist: ['127.0.0.1'] });
    const dispatcher = createPinnedAgent(policy, { connectTimeoutMs: 2_000 });
    agents.push(dispatcher);
    const options = { policy, dispatcher };
    expect(await guardedRequest(new URL(`http://127.0.0.2:${target.port}/`), { method: 'GET' }, options)).to.have.property('refused').that.matches(/loopback/);
    expect(await guardedRequest(new URL(`${target.url}/`), { method: 'GET' }, { ...options, refuseHost: (host) => `not ${host}` })).to.deep.equal({ refused: 'not 127.0.0.1' });
    expect(target.hits).to.equal(0);

    const site = await startCountingServer('127.0.0.1', (_req, res) => res.writeHead(302, { location: '/end' }).end());
    const silent = await startCountingServer('127.0.0.1', () => undefined);
    const closed = await startCountingServer('127.0.0.1');
    await closed.close();
    try {
      const moved = await guardedRequest(new URL(`${site.url}/start`), { method: 'POST', body: 'x' }, options);
      if (!('response' in moved)) expect.fail(JSON.stringify(moved));
      expect(moved.response.statusCode).to.equal(302);
      await moved.response.body.dump();
      expect(site.hits, 'the redirect is not followed').to.equal(1);
      expect(await guardedRequest(new URL(`${silent.url}/`), { method: 'GET', signal: AbortSignal.timeout(200) }, options)).to.include({ timeout: true });
      const refusedConnection = await guardedRequest(new URL(`${closed.url}/`), { method: 'GET' }, options);
      expect(refusedConnection).to.include({ timeout: false });
      expect(refusedConnection).to.have.property('failed').that.contains('ECONNREFUSED');
    } finally {
      await Promise.all([site.close(), silent.close()]);
    }
  });

  it('answers instead of throwing when the URL, the connection or the time limit fails', async () => {
    const fetch = guarded({ allow: ['127.0.0.1'] });
    const malformed = await fetch('not a url');
    expect(malformed.status).to.equal(502);

    const closed = await startCountingServer('127.0.0.1');
    await closed.close();
    const refusedConnection = await fetch(`${closed.url}/`);
    expect(refusedConnection.status).to.equal(502);
    expect(await refusedConnection.text()).to.contain('ECONNREFUSED');

    const silent = await startCountingServer('127.0.0.1', () => undefined);
    try {
      const controller = new AbortController();
      const pending = fetch(`${silent.url}/`, { signal: controller.signal });
      while (silent.hits === 0) await new Promise((r) => setTimeout(r, 5));
      controller.abort();
      expect((await pending).status).to.equal(504);
    } finally {
      await silent.close();
    }
  });
});
