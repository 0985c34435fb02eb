import { expect } from 'chai';
import { api, startApi } from '../helpers/api';
import { buildTestServlets, compileWat, type TestServletName } from '../helpers/servlets';
import { libraryUser, padded } from './library';

describe('servlet library: bad input', () => {
  let servlets: Record<TestServletName, Uint8Array>;
  before(async () => {
    servlets = await buildTestServlets();
  });

  it('refuses with 400 invalid_module a module that is not WebAssembly, lacks an export, or whose describe fails or answers bad JSON', async () => {
    const me = await libraryUser();
    const cases: Array<[TestServletName, RegExp]> = [
      ['not-wasm', /^module: module does not compile: /],
      ['no-call-export', /^module: module does not export "call"/],
      ['describe-fails', /^module: servlet describe failed: describe is broken on purpose/],
      ['describe-bad-json', /^module: describe returned invalid JSON/],
    ];
    for (const [name, reason] of cases) {
      const res = await me.putModule(name, servlets[name]);
      expect(res.status, name).to.equal(400);
      expect(res.body.error.code, name).to.equal('invalid_module');
      expect(res.body.error.message, name).to.match(reason);
    }
    expect((await me.api.get('/api/servlets/~')).body, 'nothing was stored').to.deep.equal([]);
  });

  it('refuses a describe whose tools have no input schema, naming the field', async () => {
    const me = await libraryUser();
    const bytes = await compileWat(`(module ;; @prelude
      (func (export "describe") (result i32)
        (call $out_begin) (call $emit (string "{\\"tools\\":[{\\"name\\":\\"x\\"}]}")) (call $out_end) (i32.const 0))
      (func (export "call") (result i32) (i32.const 0)))`);
    const res = await me.putModule('noschema', bytes);
    expect(res.status).to.equal(400);
    expect(res.body.error).to.deep.include({ code: 'invalid_module' });
    expect(res.body.error.message).to.match(/tools\.0\.inputSchema/);
  });

  describe('size limit', () => {
    const LIMIT = 64 * 1024;
    let server: Awaited<ReturnType<typeof startApi>>;
    before(async () => {
      server = await startApi({ MODULE_LIMIT_BYTES: String(LIMIT) });
    });
    after(() => server?.close());

    it('answers 413 for a raw module over MODULE_LIMIT_BYTES and accepts one just under it', async () => {
      const me = await libraryUser('big', server.url);
      const over = await me.putModule('big', padded(servlets.greeter, LIMIT));
      expect(over.status).to.equal(413);
      expect(over.body.error.code).to.equal('payload_too_large');
      const under = padded(servlets.greeter, LIMIT - servlets.greeter.length - 64);
      expect(under.length).to.be.at.most(LIMIT);
      expect((await me.putModule('fits', under)).status).to.equal(201);
    });

    it('answers 413 for a module sent without a length (chunked) once it passes the limit', async () => {
      const me = await libraryUser('big', server.url);
      const bytes = padded(servlets.greeter, 4 * LIMIT);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 16 * 1024) controller.enqueue(bytes.slice(i, i + 16 * 1024));
          controller.close();
        },
      });
      const res = await me.putModule('chunked', stream);
      expect(res.status).to.equal(413);
    });

    it('answers 413 for the JSON form when the decoded module is over the limit', async () => {
      const me = await libraryUser('big', server.url);
      const res = await me.api.put('/api/servlets/~/big', { module: Buffer.from(padded(servlets.greeter, LIMIT)).toString('base64') });
      expect(res.status).to.equal(413);
    });
  });

  it('answers 415 for a body that is neither a module nor JSON, and 400 for no body at all', async () => {
    const me = await libraryUser();
    const text = await me.putModule('x', servlets.greeter, '', 'text/plain');
    expect(text.status).to.equal(415);
    expect(text.body.error.code).to.equal('unsupported_media_type');
    const empty = await me.api.request('PUT', '/api/servlets/~/x');
    expect(empty.status).to.equal(400);
    expect(empty.body.error.message).to.match(/^body: expected the module/);
  });

  it('answers 400 naming the field for bad base64, bad visibility, a missing module and broken JSON', async () => {
    const me = await libraryUser();
    const badBase64 = await me.api.put('/api/servlets/~/x', { module: 'not base64!' });
    expect(badBase64.status).to.equal(400);
    expect(badBase64.body.error.message).to.match(/^module: expected base64/);
    const badVisibility = await me.putModule('x', servlets.greeter, 'visibility=everyone');
    expect(badVisibility.status).to.equal(400);
    expect(badVisibility.body.error.message).to.match(/^query\.visibility: /);
    const noModule = await me.api.put('/api/servlets/~/x', { description: 'no module' });
    expect(noModule.status).to.equal(400);
    expect(noModule.body.error.message).to.match(/^module: /);
    const broken = await me.api.put('/api/servlets/~/x', undefined, { raw: '{"module": ', headers: { 'content-type': 'application/json' } });
    expect(broken.status).to.equal(400);
    expect(broken.body.error.code).to.equal('invalid_json');
  });

  it('answers 400 for servlet names outside the safe character set', async () => {
    const me = await libraryUser();
    for (const name of ['bad%20name', '-dash', 'a%2Fb', 'x'.repeat(65)]) {
      const res = await me.putModule(name, servlets.greeter);
      expect(res.status, name).to.equal(400);
      expect(res.body.error.message, name).to.match(/^servlet: /);
    }
  });

  it('answers 401 to a publish without a session, before reading the module', async () => {
    const res = await api(undefined).put('/api/servlets/~/x', { module: Buffer.from(servlets.greeter).toString('base64') });
    expect(res.status).to.equal(401);
  });
});
