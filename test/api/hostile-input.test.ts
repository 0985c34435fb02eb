import http from 'node:http';
import { PassThrough } from 'node:stream';
import zlib from 'node:zlib';
import { expect } from 'chai';
import { signedIn, taskBody, type Api, type ApiResponse } from '../helpers/api';
import { createTask, signedUrl, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { answerClientErrors } from '../../src/http/client-errors';

function expectError(res: ApiResponse, status: number, code: string, field?: string) {
  expect(res.status, res.text).to.equal(status);
  expect(res.body?.error, res.text).to.have.keys(['code', 'message']);
  expect(res.body.error.code, res.text).to.equal(code);
  if (field) expect(res.body.error.message.startsWith(`${field}: `), res.body.error.message).to.equal(true);
}

/** A request with any method (fetch refuses TRACE and friends), answered as tests read answers. */
function rawRequest(method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<ApiResponse & { headersRaw: http.IncomingHttpHeaders }> {
  const url = new URL(path, getStack().apiUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), headersRaw: res.headers, text, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('hostile input', () => {
  let me: { username: string; sessionId: string; api: Api };
  before(async () => {
    me = await signedIn('hostile');
  });

  it('answers a signed URL with malformed percent-encoding in any segment with 403, unauthenticated', async () => {
    for (const path of ['/signed/tasks/%ZZ/pb/tb', '/signed/tasks/a/%/tb', '/signed/tasks/a/b/%E0%A4%A', '/signed/tasks/%E0%A4%A/b/c']) {
      const res = await rawRequest('POST', `${path}?id=a&iat=1&exp=1&sig=x`, { 'content-type': 'application/json' }, Buffer.from('{}'));
      expectError(res, 403, 'signed_url_invalid');
    }
  });

  it('answers a list cursor holding an out-of-range number with 400 on every list', async () => {
    await me.api.post('/api/profiles/~/p1', {});
    await createTask(me.api, 'default', 'listed');
    const lists = ['/api/tasks/~', '/api/profiles/~', '/api/servlets/~', '/api/runs/~/default/listed', '/api/profiles/~/default/tasks/listed/runs'];
    for (const cursor of [cursorOf([1e300, 'a', 'b']), cursorOf([8.7e15, 'a']), cursorOf([8.7e15, 'a', 'b']), cursorOf([1.5, 'a']), cursorOf([-1e300, 'a', 'b', 'c'])]) {
      for (const list of lists) {
        const res = await me.api.get(`${list}?cursor=${cursor}`);
        expectError(res, 400, 'invalid_request', 'cursor');
      }
    }
  });

  it('answers a body that is not compressed as its content-encoding says with 400 naming the body', async () => {
    for (const encoding of ['br', 'gzip', 'deflate']) {
      const res = await rawRequest('PUT', '/api/tasks/~/default/enc', { cookie: `sessionId=${me.sessionId}`, 'content-type': 'application/json', 'content-encoding': encoding }, Buffer.from(JSON.stringify(taskBody('openai', 'x', 'm', 'k'))));
      expectError(res, 400, 'invalid_body', 'body');
    }
    const res = await rawRequest('PUT', '/api/tasks/~/default/enc', { cookie: `sessionId=${me.sessionId}`, 'content-type': 'application/json', 'content-encoding': 'zstd-or-so' }, Buffer.from('{}'));
    expectError(res, 415, 'unsupported_media_type', 'content-encoding');
  });

  it('reads a body that is compressed as its content-encoding says', async () => {
    const body = zlib.gzipSync(JSON.stringify(taskBody('openai', 'x', 'm', 'k')));
    const res = await rawRequest('PUT', '/api/tasks/~/default/gz', { cookie: `sessionId=${me.sessionId}`, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body);
    expect(res.status, res.text).to.be.oneOf([200, 201]);
  });

  it('answers a body nested past JSON_MAX_DEPTH with 400 json_too_deep and starts no run', async () => {
    const { api } = me;
    await createTask(api, 'default', 'deep', { prompt: 'hi' });
    const url = await signedUrl(api, 'default', 'deep');
    const depth = getStack().config.JSON_MAX_DEPTH;
    const nested = (n: number) => `{"a":${'['.repeat(n - 1)}${']'.repeat(n - 1)}}`;
    for (const n of [depth + 1, 5_000, 100_000]) {
      const res = await rawRequest('POST', new URL(url).pathname + new URL(url).search, { 'content-type': 'application/json', 'run-id': `deep-${n}` }, Buffer.from(nested(n)));
      expectError(res, 400, 'json_too_deep', 'body');
      expect((await api.get(`/api/runs/~/default/deep/deep-${n}`)).status).to.equal(404);
    }
    // Brackets inside strings are not nesting.
    const inString = await rawRequest('POST', new URL(url).pathname + new URL(url).search, { 'content-type': 'application/json', 'run-id': 'deep-string' }, Buffer.from(JSON.stringify({ a: '['.repeat(10_000) })));
    expect(inString.status, inString.text).to.equal(201);
    const atLimit = await rawRequest('POST', new URL(url).pathname + new URL(url).search, { 'content-type': 'application/json', 'run-id': 'deep-ok' }, Buffer.from(nested(depth)));
    expect(atLimit.status, atLimit.text).to.equal(201);
    expect((await waitForRun(api, atLimit.body.url)).status).to.equal('ready');
  });

  it('answers methods the service does not take with 405 in the error shape, /healthz included', async () => {
    for (const method of ['TRACE', 'PROPFIND', 'M-SEARCH']) {
      for (const path of ['/healthz', '/api/users/~', '/nowhere']) {
        const res = await rawRequest(method, path);
        expectError(res, 405, 'method_not_allowed', 'method');
      }
    }
    const patch = await rawRequest('PATCH', '/api/users/~', { cookie: `sessionId=${me.sessionId}` });
    expectError(patch, 405, 'method_not_allowed', 'method');
    expect(patch.headersRaw.allow).to.match(/GET/);
    expectError(await rawRequest('DELETE', '/healthz'), 405, 'method_not_allowed', 'method');
  });

  it('answers bytes that are not HTTP with 400 in the error shape, and a header past the limit with 431', async () => {
    const net = await import('node:net');
    const exchange = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const { port } = new URL(getStack().apiUrl);
        const socket = net.connect(Number(port), '127.0.0.1', () => socket.end(bytes));
        let answer = '';
        socket.on('data', (c: Buffer) => (answer += c.toString('utf8')));
        socket.on('end', () => resolve(answer));
        socket.on('error', reject);
      });
    const garbage = await exchange('{"not": "http"}\r\n\r\n');
    expect(garbage).to.match(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4)).error.code).to.equal('invalid_http');
    const huge = await exchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(huge).to.match(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4)).error.code).to.equal('headers_too_large');
  });

  it('answers a chunked body (no content-length) that is not JSON with 415, starting nothing', async () => {
    const { api } = me;
    await createTask(api, 'default', 'chunked', { prompt: 'hi' });
    const url = new URL(await signedUrl(api, 'default', 'chunked'));
    const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(new URL(url.pathname + url.search, getStack().apiUrl), { method: 'POST', headers: { 'content-type': 'text/plain', 'run-id': 'c1', 'transfer-encoding': 'chunked' } }, (r) => {
        let text = '';
        r.on('data', (c: Buffer) => (text += c.toString('utf8')));
        r.on('end', () => resolve({ status: r.statusCode!, text }));
      });
      req.on('error', reject);
      req.write('topic=tides');
      req.end();
    });
    expect(res.status, res.text).to.equal(415);
    expect(JSON.parse(res.text).error.code).to.equal('unsupported_media_type');
    expect((await api.get('/api/runs/~/default/chunked/c1')).status).to.equal(404);
  });

  it('answers a request the server timed out receiving with 408 in the error shape', async () => {
    const server = http.createServer();
    answerClientErrors(server);
    const socket = new PassThrough();
    let written = '';
    socket.on('data', (c: Buffer) => (written += c.toString('utf8')));
    server.emit('clientError', Object.assign(new Error('request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket);
    await new Promise((r) => setImmediate(r));
    expect(written).to.match(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(written.slice(written.indexOf('\r\n\r\n') + 4)).error.code).to.equal('request_timeout');
  });

  it('answers a JSON null body with 400; an empty body is still {}', async () => {
    const res = await me.api.put('/api/tasks/~/default/n', undefined, { raw: 'null', headers: { 'content-type': 'application/json' } });
    expectError(res, 400, 'invalid_request', 'body');
    expect(res.body.error.message).to.match(/null/);
    const empty = await me.api.post('/api/profiles/~/empty-body', undefined, { raw: '', headers: { 'content-type': 'application/json' } });
    expect(empty.status, empty.text).to.be.oneOf([200, 201]);
  });

  it('ignores a __proto__ key in other bodies like any unknown field', async () => {
    const raw = JSON.stringify(taskBody('openai', 'x', 'm', 'k')).replace(/^\{/, '{"__proto__":{"polluted":true},');
    const res = await me.api.put('/api/tasks/~/default/proto', undefined, { raw, headers: { 'content-type': 'application/json' } });
    expect(res.status, res.text).to.equal(201);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    expect(res.text).not.to.contain('polluted');
  });

  it('keeps a __proto__ key of a trigger payload as data, polluting nothing', async () => {
    const { api } = me;
    await createTask(api, 'default', 'protopay', { prompt: 'value={{b}}' });
    const url = await signedUrl(api, 'default', 'protopay');
    const res = await rawRequest('POST', new URL(url).pathname + new URL(url).search, { 'content-type': 'application/json', 'run-id': 'p1' }, Buffer.from('{"__proto__":{"polluted":"yes"},"b":"kept"}'));
    expect(res.status, res.text).to.equal(201);
    const run = await waitForRun(api, res.body.url);
    expect(run.status).to.equal('ready');
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    const record = await getStack().db.conn.db!.collection('runs').findOne({ _id: `run/${me.username}/default/protopay/p1` as never });
    expect(JSON.parse(record!.payload_json as string)).to.deep.equal(JSON.parse('{"__proto__":{"polluted":"yes"},"b":"kept"}'));
    expect(Object.keys(JSON.parse(record!.payload_json as string))).to.deep.equal(['__proto__', 'b']);
  });

  it('keeps a __proto__ key of Variant A parameters as data, and names it when it is not a string', async () => {
    const { api } = me;
    const put = await api.put('/api/profiles/~/default/tasks/protoa', { provider: 'openai', prompt: 'v={{b}}', settings: { key: 'k' } });
    expect(put.status, put.text).to.be.oneOf([200, 201]);
    const bad = await api.put('/api/profiles/~/default/tasks/protoa/runs/r0', undefined, { raw: '{"parameters":{"__proto__":{"x":1},"b":"k"}}', headers: { 'content-type': 'application/json' } });
    expectError(bad, 400, 'invalid_request', 'parameters.__proto__');
    const res = await api.put('/api/profiles/~/default/tasks/protoa/runs/r1', undefined, { raw: '{"parameters":{"__proto__":"data","b":"k"}}', headers: { 'content-type': 'application/json' } });
    expect(res.status, res.text).to.equal(201);
    const record = await getStack().db.conn.db!.collection('runs').findOne({ _id: `run/${me.username}/default/protoa/r1` as never });
    expect(Object.keys(JSON.parse(record!.payload_json as string))).to.deep.equal(['__proto__', 'b']);
  });

  it('validates the installations list\'s limit and cursor, and stays whole without them', async () => {
    for (const q of ['limit=-1', 'limit=abc', 'limit=0', 'cursor=garbage', `cursor=${cursorOf([1, 'a'])}`]) {
      const res = await me.api.get(`/api/profiles/~/default/installations?${q}`);
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.message).to.match(/^query\.(limit|cursor)|^cursor/);
    }
    const whole = await me.api.get('/api/profiles/~/default/installations');
    expect(whole.status).to.equal(200);
    expect(whole.body).to.deep.equal({ installs: [] });
  });

  it('pages the installations list by name when asked, following Link to the end', async () => {
    const user = await signedIn('installs');
    for (const name of ['c', 'a', 'b']) await installServlet(user.api, user.username, 'greeter', name);
    const names: string[] = [];
    let path: string | undefined = '/api/profiles/~/default/installations?limit=2';
    while (path) {
      const res = await user.api.get(path);
      expect(res.status, res.text).to.equal(200);
      names.push(...(res.body.installs as Array<{ name: string }>).map((i) => i.name));
      path = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    }
    expect(names).to.deep.equal(['a', 'b', 'c']);
    expect((await user.api.get('/api/profiles/~/default/installations')).body.installs).to.have.length(3);
  });
});
