import { expect } from 'chai';
import { contentAddress, createServletRuntime, type InstallRef, type ServletRuntime } from '../../activities/servlets';
import { getStack } from '../helpers/stack';
import { buildTestServlets, type TestServletName } from '../helpers/servlets';
import { startCountingServer } from './counting-server';

/** Short limits so that the stuck servlets are stopped quickly; the huge response is far over this cap. */
const LIMITS = { SERVLET_CALL_TIMEOUT_MS: '1000', SERVLET_MAX_RESPONSE_BYTES: String(256 * 1024), SERVLET_MAX_MEMORY_MB: '16' };

describe('servlet runtime', () => {
  let runtime: ServletRuntime;
  let servlets: Record<TestServletName, Uint8Array>;
  let installs = 0;

  function install(name: TestServletName, extra: Partial<InstallRef> = {}): InstallRef {
    const bytes = servlets[name];
    return {
      key: `${name}-${++installs}`,
      contentAddress: contentAddress(bytes),
      loadModule: async () => bytes,
      config: {},
      domains: null,
      ...extra,
    };
  }

  const text = (result: { content: Array<{ type: string; text?: string }> }) => result.content.map((c) => c.text ?? '').join('\n');

  before(async () => {
    servlets = await buildTestServlets();
    runtime = createServletRuntime({ config: getStack().configWith(LIMITS), logger: getStack().logger });
  });
  after(() => runtime.close());

  it('calls a tool and returns its result', async () => {
    const result = await runtime.call(install('greeter'), { name: 'greet', arguments: { name: 'Ada' } });
    expect(result).to.deep.equal({ content: [{ type: 'text', text: 'Hello, Ada!' }], isError: false });
  });

  it("hands the install's configuration to the servlet", async () => {
    const result = await runtime.call(install('greeter', { config: { greeting: 'Bonjour' } }), { name: 'greet', arguments: { name: 'Ada' } });
    expect(text(result)).to.equal('Bonjour, Ada!');
  });

  it('answers concurrent calls of one install, each with its own result', async () => {
    const greeter = install('greeter');
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    const results = await Promise.all(names.map((name) => runtime.call(greeter, { name: 'greet', arguments: { name } })));
    expect(results.map(text)).to.deep.equal(names.map((n) => `Hello, ${n}!`));
  });

  it('passes text and image content through', async () => {
    const result = await runtime.call(install('image'), { name: 'pixel', arguments: {} });
    expect(result.content).to.have.length(2);
    expect(result.content[1]).to.include({ type: 'image', mimeType: 'image/png' });
  });

  it('gives the servlet no file system: opening a host file fails inside the servlet', async () => {
    const result = await runtime.call(install('file-reader'), { name: 'read', arguments: {} });
    expect(result.isError).to.equal(true);
    expect(text(result)).to.match(/cannot open \/etc\/passwd: WASI errno \d+/);
    expect(text(result)).not.to.contain('root:');
  });

  it('stops an infinite loop at the time limit, and the next call on the same install works', async () => {
    const looping = install('infinite-loop');
    const stuck = await runtime.call(looping, { name: 'spin', arguments: {} });
    expect(stuck).to.deep.equal({ isError: true, content: [{ type: 'text', text: 'servlet call timed out after 1000 ms' }] });
    expect(text(await runtime.call(looping, { name: 'ping', arguments: {} }))).to.equal('pong');
  });

  it('stops a servlet that grows its memory without end', async () => {
    const hog = install('memory-hog');
    const result = await runtime.call(hog, { name: 'hog', arguments: {} });
    expect(result.isError).to.equal(true);
    expect(text(result)).to.match(/^servlet call crashed/);
    expect((await runtime.call(hog, { name: 'hog', arguments: {} })).isError).to.equal(true);
    expect(text(await runtime.call(install('greeter'), { name: 'greet', arguments: { name: 'still here' } }))).to.equal('Hello, still here!');
  });

  it('refuses a response over the size cap', async () => {
    const result = await runtime.call(install('huge-response'), { name: 'flood', arguments: {} });
    expect(result.isError).to.equal(true);
    expect(text(result)).to.match(/^servlet call returned \d+ bytes, over the limit of 262144 bytes$/);
  });

  it('turns a servlet failure (error_set) into a tool error and keeps the plugin', async () => {
    const greeter = install('greeter');
    const failed = await runtime.call(greeter, { name: 'greet', arguments: {} });
    expect(failed).to.deep.equal({ isError: true, content: [{ type: 'text', text: 'servlet call failed: argument name is required' }] });
    expect(text(await runtime.call(greeter, { name: 'greet', arguments: { name: 'Ada' } }))).to.equal('Hello, Ada!');
  });

  it('keeps the configuration out of the logs when a call fails', async () => {
    const secret = `sk-${Date.now()}-do-not-log`;
    const { logs } = getStack();
    const mark = logs.lines.length; // only what these calls log
    await runtime.call(install('greeter', { config: { greeting: secret } }), { name: 'greet', arguments: {} });
    await runtime.call(install('infinite-loop', { config: { apiKey: secret } }), { name: 'spin', arguments: {} });
    const logged = logs.lines.slice(mark).join('\n');
    expect(logged).to.contain('servlet call failed');
    expect(logs.text()).not.to.contain(secret);
  });

  it('throws, rather than blaming the servlet, when the module cannot be loaded or does not match its address', async () => {
    // content addresses no earlier test has loaded (compiled modules are cached by address)
    const lost = install('greeter', { contentAddress: contentAddress(Buffer.from('lost module')), loadModule: () => Promise.reject(new Error('store is down')) });
    await runtime.call(lost, { name: 'greet', arguments: { name: 'x' } }).then(
      () => expect.fail('should throw'),
      (err: Error) => expect(err.message).to.equal('store is down'),
    );
    const swapped = install('greeter', { contentAddress: contentAddress(Buffer.from('some other module')) });
    await runtime.call(swapped, { name: 'greet', arguments: { name: 'x' } }).then(
      () => expect.fail('should throw'),
      (err: Error) => expect(err.message).to.contain('does not match its content address'),
    );
  });

  describe('network', () => {
    it('refuses a servlet request to loopback, and the server never sees it', async () => {
      const server = await startCountingServer('127.0.0.1');
      try {
        for (const url of [`${server.url}/`, `http://localhost:${server.port}/`, `http://2130706433:${server.port}/`, `http://[::ffff:127.0.0.1]:${server.port}/`]) {
          const result = await runtime.call(install('http-fetcher'), { name: 'fetch', arguments: { url } });
          expect(text(result), url).to.match(/^403 servlet network request refused: /);
        }
        expect(server.hits).to.equal(0);
      } finally {
        await server.close();
      }
    });

    it('reaches an allow-listed host, within the install\'s allowed hosts only', async () => {
      const server = await startCountingServer('127.0.0.1');
      const allowing = createServletRuntime({ config: getStack().configWith({ ...LIMITS, NETWORK_ALLOWLIST: '127.0.0.1' }), logger: getStack().logger });
      try {
        const url = `${server.url}/data`;
        expect(text(await allowing.call(install('http-fetcher'), { name: 'fetch', arguments: { url } }))).to.equal('200 reached /data');
        const offline = await allowing.call(install('http-fetcher', { domains: [] }), { name: 'fetch', arguments: { url } });
        expect(text(offline)).to.match(/^403 .*may not use the network/);
        const elsewhere = await allowing.call(install('http-fetcher', { domains: ['api.example.com'] }), { name: 'fetch', arguments: { url } });
        expect(text(elsewhere)).to.match(/^403 /);
        expect(server.hits).to.equal(1);
      } finally {
        await allowing.close();
        await server.close();
      }
    });

    it('cuts a request that outlives the call, and the servlet still answers', async () => {
      const silent = await startCountingServer('127.0.0.1', () => undefined);
      const allowing = createServletRuntime({ config: getStack().configWith({ ...LIMITS, NETWORK_ALLOWLIST: '127.0.0.1' }), logger: getStack().logger });
      try {
        const fetcher = install('http-fetcher');
        const result = await allowing.call(fetcher, { name: 'fetch', arguments: { url: `${silent.url}/` } });
        expect(text(result)).to.match(/^504 /);
        expect(text(await allowing.call(fetcher, { name: 'fetch', arguments: { url: `${silent.url.replace('127.0.0.1', 'localhost')}/` } }))).to.match(/^403 /);
      } finally {
        await allowing.close();
        await silent.close();
      }
    });
  });

  it('refuses non-http schemes asked by a servlet, and survives a URL the SDK cannot parse', async () => {
    const fetcher = install('http-fetcher');
    for (const url of ['file:///etc/passwd', 'data:text/plain,hi', 'gopher://example.com/']) {
      expect(text(await runtime.call(fetcher, { name: 'fetch', arguments: { url } })), url).to.match(/^403 .*scheme is not allowed/);
    }
    // the SDK parses the URL itself and throws, which ends that plugin; the install gets a fresh one
    const crashed = await runtime.call(fetcher, { name: 'fetch', arguments: { url: 'not a url' } });
    expect(crashed.isError).to.equal(true);
    expect(text(await runtime.call(fetcher, { name: 'fetch', arguments: { url: 'file:///etc/passwd' } }))).to.match(/^403 /);
  });

  it('ends calls still running when it closes, and refuses new ones', async () => {
    const closing = createServletRuntime({ config: getStack().configWith({ ...LIMITS, SERVLET_CALL_TIMEOUT_MS: '30000' }), logger: getStack().logger });
    const stuck = closing.call(install('infinite-loop'), { name: 'spin', arguments: {} });
    // let the plugin start and the call begin
    await closing.call(install('greeter'), { name: 'greet', arguments: { name: 'x' } });
    await closing.close();
    expect(text(await stuck)).to.match(/shutting down/);
    await closing.call(install('greeter'), { name: 'greet', arguments: { name: 'x' } }).then(
      () => expect.fail('should refuse'),
      (err: Error) => expect(err.message).to.contain('closed'),
    );
  });
});
