import http from 'node:http';
import { expect } from 'chai';
import fc from 'fast-check';
import { signedIn, startApi, type Api } from '../helpers/api';
import { createTask, signedUrl } from '../helpers/runs';
import { openaiText } from '../helpers/fake-provider';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';

/** At least this many generated requests per run of the suite (issue "A hostile world"). */
const REQUESTS = 2_000;
/** Generated messages to the MCP endpoint. */
const MCP_REQUESTS = 600;
const MCP_INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } };

interface Answer {
  status: number;
  text: string;
}

/** Any method, any path bytes, any headers: node's http (fetch refuses TRACE and malformed paths). */
function send(base: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    // Framed (content-length): node sends a GET's or DELETE's body unframed otherwise, which a server reads as a
    // request followed by garbage (test/api/hostile-input.test.ts sends that on purpose).
    const framed = body === undefined ? headers : { ...headers, 'content-length': String(body.length) };
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers: framed, timeout: 30_000 }, (res) => {
      // An event stream (of a live run, it stays open): its status and first bytes are the answer.
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        res.once('data', (c: Buffer) => {
          resolve({ status: res.statusCode!, text: c.toString('utf8').slice(0, 500) });
          res.destroy();
        });
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString('utf8').slice(0, 500) }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('fuzz: generated requests across every route', function () {
  this.timeout(20 * 60_000);
  let me: { username: string; sessionId: string; api: Api };
  let base: string;
  let signedPath: string;

  before(async () => {
    // Limits off on this API process only: 2,000 requests in a minute or two would otherwise end in 429s and reach
    // few handlers (test/api/rate-limits.test.ts covers the limits).
    base = (await startApi({ TRIGGER_LIMIT_PER_MINUTE: '0', WRITE_LIMIT_PER_MINUTE: '0' })).url;
    me = await signedIn('fuzz');
    await createTask(me.api, 'default', 'ft', { prompt: 'hi {{ a }}' });
    await installServlet(me.api, me.username, 'greeter', 'g');
    const url = await signedUrl(me.api, 'default', 'ft');
    signedPath = new URL(url).pathname + new URL(url).search;
  });

  // Deleting the user's tasks deletes any schedule the requests made, so none goes on running after the test.
  after(async () => {
    const tasks = await me.api.get('/api/tasks/~');
    for (const t of (tasks.body ?? []) as Array<{ profile?: string; name: string }>) await me.api.request('DELETE', `/api/tasks/~/${t.profile ?? 'default'}/${t.name}`);
  });

  /** What a user owns, as the store has it: a rejected request must leave it as it was. */
  const fingerprint = async () => {
    const { db } = getStack().db.conn;
    const owned = async (collection: string) =>
      JSON.stringify(await db!.collection(collection).find({ owner: me.username }, { projection: { _id: 1, modified_at: 1, version: 1, installs_modified_at: 1 } }).sort({ _id: 1 }).toArray());
    const [tasks, profiles, installs, servlets] = await Promise.all(['tasks', 'profiles', 'installations', 'servlets'].map(owned));
    // Runs by name only: an accepted trigger's run goes on changing (its status, its live-run mark) after its answer.
    const runs = JSON.stringify((await db!.collection('runs').find({ owner: me.username }, { projection: { _id: 1 } }).sort({ _id: 1 }).toArray()).map((r) => r._id));
    // The user's tasks' schedule names (the index the schedules API reads its writes from; a small collection).
    const schedules = JSON.stringify((await db!.collection('task_schedules').find({}).sort({ _id: 1 }).toArray()).filter((d) => String(d._id).startsWith(`${me.username}/`)));
    return { tasks, profiles, installs, servlets, runs, schedules };
  };

  it(`answers ${REQUESTS} generated requests with no 5xx, changes nothing on a rejection, and stays alive`, async () => {
    const hostileSegment = fc.oneof(
      fc.constantFrom('%ZZ', '%', '%E0%A4%A', '%00', '..', '.', '%2F', '%2e%2e', '~', 'a'.repeat(300), encodeURIComponent('💥'), '%F0%9F', '%20', '$where', '{"$gt":""}'),
      fc.string({ maxLength: 20 }).map((s) => encodeURIComponent(s)),
    );
    const seg = (valid: string[]) => fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...valid) }, { weight: 1, arbitrary: hostileSegment });
    const user = seg(['~', me.username, 'nobody']);
    const profile = seg(['default', 'p1', 'nope']);
    const task = seg(['ft', 'new-task', 'missing']);
    const run = seg(['r1', 'r2', 'run-x']);
    const path = fc.oneof(
      fc.tuple(user).map(([u]) => `/api/users/${u}`),
      fc.tuple(user).map(([u]) => `/api/profiles/${u}`),
      fc.tuple(user, profile).map(([u, p]) => `/api/profiles/${u}/${p}`),
      fc.tuple(user).map(([u]) => `/api/tasks/${u}`),
      fc.tuple(user, profile).map(([u, p]) => `/api/tasks/${u}/${p}`),
      fc.tuple(user, profile, task).map(([u, p, t]) => `/api/tasks/${u}/${p}/${t}`),
      fc.tuple(user, profile, task).map(([u, p, t]) => `/api/tasks/${u}/${p}/${t}/signed`),
      fc.tuple(user, profile, task).map(([u, p, t]) => `/api/tasks/${u}/${p}/${t}/signed/revoke`),
      fc.tuple(user, profile, task).map(([u, p, t]) => `/api/tasks/${u}/${p}/${t}/webhook/deliveries`),
      fc.tuple(user, profile, task, run).map(([u, p, t, r]) => `/api/tasks/${u}/${p}/${t}/schedules/${r}`),
      fc.tuple(user, task).map(([u, t]) => `/api/profiles/${u}/default/tasks/${t}`),
      fc.tuple(user, profile, task).map(([u, p, t]) => `/api/profiles/${u}/${p}/tasks/${t}/runs`),
      fc.tuple(user, task, run).map(([u, t, r]) => `/api/profiles/${u}/default/tasks/${t}/runs/${r}`),
      fc.tuple(user, profile, task).map(([u, p, t]) => `/api/runs/${u}/${p}/${t}`),
      fc.tuple(user, profile, task, run).map(([u, p, t, r]) => `/api/runs/${u}/${p}/${t}/${r}`),
      fc.tuple(user, profile, task, run, fc.constantFrom('cancel', 'events', 'approvals/abc', 'approvals/%ZZ')).map(([u, p, t, r, x]) => `/api/runs/${u}/${p}/${t}/${r}/${x}`),
      fc.tuple(user, profile).map(([u, p]) => `/api/profiles/${u}/${p}/installations`),
      fc.tuple(user, profile, seg(['g', 'h'])).map(([u, p, n]) => `/api/profiles/${u}/${p}/installations/${n}`),
      fc.tuple(user).map(([u]) => `/api/servlets/${u}`),
      fc.tuple(user, seg(['greeter', 'other'])).map(([u, n]) => `/api/servlets/${u}/${n}`),
      fc.constant('/api/servlets'),
      fc.tuple(user, profile, task).map(([u, p, t]) => `/signed/tasks/${u}/${p}/${t}?id=a&iat=1&exp=1&sig=x`),
      fc.constant(signedPath),
      fc.constantFrom('/healthz', '/readyz', '/metrics', '/codec/decode', '/codec/encode', '/', '/api', '/nowhere', '/api/openapi.json', '/docs', '/docs/assets/swagger-ui.css', '/docs/assets/%ZZ', '/docs/assets/..%2Fpackage.json'),
    );
    const cursor = fc.oneof(
      fc.constantFrom(b64([1e300, 'a', 'b']), b64([8.7e15, 'a']), b64([-1, 'a', 'b']), b64(['install', 'a']), 'garbage', '', '%ZZ'),
      fc.jsonValue().map(b64),
    );
    const query = fc.oneof(
      { weight: 3, arbitrary: fc.constant('') },
      fc.tuple(fc.oneof(fc.constantFrom('-1', 'abc', '0', '1', '1000', '1001', '1e3', '9'.repeat(30)), fc.string({ maxLength: 5 })), fc.option(cursor)).map(
        ([limit, c]) => `limit=${encodeURIComponent(limit)}${c === null ? '' : `&cursor=${encodeURIComponent(c)}`}`,
      ),
    );
    const deep = (n: number) => `{"a":${'['.repeat(n)}${']'.repeat(n)}}`;
    const body = fc.oneof(
      { weight: 2, arbitrary: fc.constant(undefined) },
      { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
      fc.constantFrom('null', '[]', '"x"', '{', '{"__proto__":{"polluted":1}}', '{"parameters":{"__proto__":"x"}}', deep(5_000), deep(100), '{"constructor":{"prototype":{"polluted":1}}}'),
      fc.record({
        runner: fc.constantFrom('openai', 'anthropic', 'x'),
        openai: fc.record({ prompt: fc.string({ maxLength: 50 }), model: fc.string({ maxLength: 10 }) }, { requiredKeys: [] }),
        settings: fc.record({ key: fc.string({ maxLength: 10 }) }, { requiredKeys: [] }),
        cron: fc.string({ maxLength: 10 }),
        every: fc.constantFrom('2s', '0s', '-1s', '1h', 'x'),
        parameters: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 1 })),
        servlet_slug: fc.string({ maxLength: 20 }),
        webhook: fc.record({ url: fc.constantFrom('http://10.1.2.3/x', 'not a url', 'http://[::1]/'), secret: fc.string({ maxLength: 5 }) }, { requiredKeys: [] }),
      }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
    );
    /** Mostly well-formed requests (so handlers are reached), each header hostile now and then. */
    const sometimes = <T>(arb: fc.Arbitrary<T>, freq = 6) => fc.option(arb, { freq, nil: undefined });
    const headers = fc.record({
      'content-type': fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/wasm', 'multipart/form-data; boundary=x', '*/*')),
      'content-encoding': sometimes(fc.constantFrom('br', 'gzip', 'deflate', 'identity', 'zstd')),
      'run-id': sometimes(fc.oneof(fc.constantFrom('r1', 'r2', '../x', ''), fc.string({ maxLength: 70 }).map((s) => s.replace(/[^\x20-\x7e]/g, ''))), 2),
      'last-event-id': sometimes(fc.constantFrom('0', '-1', 'abc', '99999999999999999999')),
      'if-none-match': sometimes(fc.constantFrom('*', '"x"', 'W/"y"')),
      cookie: fc.oneof({ weight: 8, arbitrary: fc.constant(`sessionId=${me.sessionId}`) }, fc.constantFrom('sessionId=ptr/x/y', 'sessionId=', `sessionId=${me.sessionId}x`)),
    }).map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);
    const method = fc.oneof({ weight: 12, arbitrary: fc.constantFrom('GET', 'PUT', 'POST', 'DELETE') }, fc.constantFrom('PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'M-SEARCH'));
    const request = fc.record({ method, path, query, headers, body, session: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, fc.constant(false)) });

    const tally = { requests: 0, byStatus: new Map<number, number>() };
    let before = await fingerprint();
    const recent: string[] = [];
    await fc.assert(
      // A new seed each run (a failure prints it; `seed` in these options replays it). No shrinking: the store is
      // shared state, so a shrunk sequence would not be the one that failed.
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = { ...r.headers };
        if (!r.session) delete headers.cookie;
        const sep = r.path.includes('?') ? '&' : '?';
        const target = r.query ? `${r.path}${sep}${r.query}` : r.path;
        const answer = await send(base, r.method, target, headers, r.body === undefined || ['GET', 'HEAD'].includes(r.method) ? undefined : Buffer.from(r.body));
        tally.requests++;
        tally.byStatus.set(answer.status, (tally.byStatus.get(answer.status) ?? 0) + 1);
        expect(answer.status, `${r.method} ${target} → ${answer.text}`).to.be.below(500);
        if (answer.status >= 400 && !['GET', 'HEAD', 'OPTIONS'].includes(r.method)) {
          const after = await fingerprint();
          expect(after, `${r.method} ${target} was refused (${answer.status}: ${answer.text}) but changed the store (requests before: ${recent.join(' | ')})`).to.deep.equal(before);
        } else if (!['GET', 'HEAD', 'OPTIONS'].includes(r.method)) before = await fingerprint();
        recent.push(`${r.method} ${target} ${JSON.stringify(headers)} → ${answer.status} ${answer.text.slice(0, 200)}`);
        if (recent.length > 5) recent.shift();
        expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
      }),
      { numRuns: REQUESTS, endOnFailure: true },
    );
    expect(tally.requests).to.be.at.least(REQUESTS);
    const health = await send(base, 'GET', '/healthz', {});
    expect(health.status).to.equal(200);
    const statuses = [...tally.byStatus.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ');
    console.log(`      fuzz: ${tally.requests} requests, statuses ${statuses}`);
  });

  it(`answers ${MCP_REQUESTS} generated JSON-RPC messages to /mcp with JSON-RPC errors, never a 5xx`, async () => {
    const other = await signedIn('fuzz-other');
    const otherSession = (await send(base, 'POST', '/mcp', { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${other.sessionId}` }, Buffer.from(JSON.stringify(MCP_INIT)))).text;
    expect(otherSession).to.match(/protocolVersion/);
    getStack().fake.script(() => openaiText('ok'));
    const id = fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), fc.constantFrom(null, 'ptr-approval:abc:def', `ptr-approval:${'A'.repeat(43)}:4f6c1b9e`, 'ptr-input:abc:def', `ptr-input:${'A'.repeat(43)}:0e9a3c2d-1b2c-4d5e-8f90-a1b2c3d4e5f6`));
    const taskId = fc.oneof(fc.string({ maxLength: 50 }), fc.constantFrom('A'.repeat(43), '', '../x'));
    const params = fc.oneof(
      fc.constant(undefined),
      fc.jsonValue({ maxDepth: 3 }),
      fc.record({ name: fc.constantFrom('ft', 'nope', '', '../x'), arguments: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.record({ a: fc.oneof(fc.string({ maxLength: 5 }), fc.integer()) })), task: fc.option(fc.record({ ttl: fc.oneof(fc.integer(), fc.string()) }, { requiredKeys: [] }), { nil: undefined }), _meta: fc.option(fc.record({ 'io.github.prompt-task-runner/run': fc.oneof(fc.constantFrom('r1', '../x', ''), fc.string({ maxLength: 70 })), progressToken: fc.oneof(fc.string(), fc.integer()) }, { requiredKeys: [] }), { nil: undefined }) }, { requiredKeys: [] }),
      fc.record({ taskId, cursor: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }) }, { requiredKeys: [] }),
      fc.record({ protocolVersion: fc.constantFrom('2025-11-25', '2025-06-18', '1999-01-01', ''), capabilities: fc.jsonValue({ maxDepth: 2 }), clientInfo: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }),
      fc.constant({ huge: 'x'.repeat(2 * 1024 * 1024) }),
    );
    const methodName = fc.constantFrom('initialize', 'ping', 'tools/list', 'tools/call', 'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel', 'resources/list', 'nope', 'notifications/initialized', 'notifications/cancelled', '', 'rpc.discover');
    const message = fc.oneof(
      { weight: 6, arbitrary: fc.record({ jsonrpc: fc.constantFrom('2.0', '2.0', '1.0'), id, method: methodName, params }, { requiredKeys: ['jsonrpc', 'method'] }) },
      fc.record({ jsonrpc: fc.constant('2.0'), id, result: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant({ action: 'accept', content: { approve: true } })) }),
      fc.record({ jsonrpc: fc.constant('2.0'), id, error: fc.record({ code: fc.integer(), message: fc.string() }) }),
      fc.array(fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: methodName }), { maxLength: 3 }),
    );
    const raw = fc.oneof({ weight: 8, arbitrary: message.map((m) => JSON.stringify(m)) }, fc.constantFrom('', '{', 'null', '[]', '"x"', `{"a":${'['.repeat(5_000)}${']'.repeat(5_000)}}`));
    const headers = fc.record({
      'content-type': fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, fc.constantFrom('text/plain', '')),
      accept: fc.oneof({ weight: 6, arbitrary: fc.constant('application/json, text/event-stream') }, fc.constantFrom('application/json', 'text/event-stream', 'text/html', '')),
      authorization: fc.oneof({ weight: 8, arbitrary: fc.constant(`Bearer ${me.sessionId}`) }, fc.constantFrom(`Bearer ${other.sessionId}`, 'Bearer x', 'Basic abc', '')),
      'mcp-protocol-version': fc.option(fc.constantFrom('2025-11-25', '2025-06-18', '2024-11-05', 'x'), { freq: 3, nil: undefined }),
      'mcp-session-id': fc.option(fc.constantFrom('x', 'a.b', 'a.b.c', '%ZZ'), { freq: 3, nil: undefined }),
      origin: fc.option(fc.constantFrom('http://evil.example', 'null', base), { freq: 4, nil: undefined }),
    }).map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined && v !== '')) as Record<string, string>);
    const request = fc.record({ method: fc.oneof({ weight: 10, arbitrary: fc.constant('POST') }, fc.constantFrom('GET', 'DELETE', 'PUT', 'PATCH')), path: fc.constantFrom('/mcp', '/mcp/default', '/mcp/nope', '/mcp/%ZZ', '/mcp/a/b', '/.well-known/oauth-protected-resource/mcp'), headers, raw });
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const body = r.method === 'GET' ? undefined : Buffer.from(r.raw);
        const answer = await send(base, r.method, r.path, r.headers, body);
        answered++;
        expect(answer.status, `${r.method} ${r.path} ${JSON.stringify(r.headers)} ${r.raw.slice(0, 200)} → ${answer.text}`).to.be.below(500);
        // Every refusal of the endpoint is a JSON-RPC error.
        if (answer.status >= 400 && r.path.startsWith('/mcp') && !answer.text.startsWith('{"error"')) expect(JSON.parse(answer.text)).to.have.nested.property('error.code');
      }),
      { numRuns: MCP_REQUESTS, endOnFailure: true },
    );
    expect(answered).to.equal(MCP_REQUESTS);
    expect((await send(base, 'GET', '/healthz', {})).status).to.equal(200);
  });
});
