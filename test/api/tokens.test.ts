import type { Router } from '@koa/router';
import { expect } from 'chai';
import { createApp } from '../../src/http/app';
import { TOKEN_ROUTES } from '../../src/http/token-routes';
import { sha256 } from '../../src/store/secrets';
import { createToken, TOKEN_SCOPES } from '../../src/store/tokens';
import { api, signedIn, startApi, type ApiResponse } from '../helpers/api';
import { createTask, until, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';

type Me = Awaited<ReturnType<typeof signedIn>>;

/** A client that sends `Authorization: Bearer <token>` and nothing else. */
function bearer(token: string, baseUrl?: string) {
  const plain = api(undefined, baseUrl);
  const headers = { authorization: `Bearer ${token}` };
  return {
    get: (path: string) => plain.get(path, { headers }),
    put: (path: string, body?: unknown) => plain.put(path, body, { headers }),
    post: (path: string, body?: unknown) => plain.post(path, body, { headers }),
    delete: (path: string) => plain.delete(path, { headers }),
  };
}

async function makeToken(me: Me, body: Record<string, unknown>): Promise<string> {
  const res = await me.api.post('/api/tokens/~', body);
  expect(res.status, res.text).to.equal(201);
  return res.body.token as string;
}

const expectError = (res: ApiResponse, status: number, code: string, message?: RegExp) => {
  expect(res.status, res.text).to.equal(status);
  expect(res.body.error.code, res.text).to.equal(code);
  if (message) expect(res.body.error.message).to.match(message);
};

describe('access tokens: making, listing and revoking (/api/tokens/~)', () => {
  it('makes a token shown once, of every scope and profile for 90 days unless asked otherwise', async () => {
    const me = await signedIn('tok');
    const res = await me.api.post('/api/tokens/~', { name: 'laptop' });
    expect(res.status, res.text).to.equal(201);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(res.body).to.have.keys(['name', 'token', 'profiles', 'scopes', 'created_at', 'expires_at']);
    expect(res.body.token).to.match(/^ptr_[A-Za-z0-9_-]{43,}$/);
    expect(res.body).to.deep.include({ name: 'laptop', profiles: null, scopes: [...TOKEN_SCOPES] });
    const days = (Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)) / 86_400_000;
    expect(days).to.equal(90);
  });

  it('keeps the profiles, scopes and days asked for, each once', async () => {
    const me = await signedIn('tok');
    await me.api.post('/api/profiles/~/work', {});
    const res = await me.api.post('/api/tokens/~', { name: 'ci', profiles: ['work', 'default', 'work'], scopes: ['runs:read', 'runs:read', 'tasks:read'], expires_in_days: 365 });
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.deep.include({ profiles: ['work', 'default'], scopes: ['runs:read', 'tasks:read'] });
    expect((Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)) / 86_400_000).to.equal(365);
  });

  it('stores only the token’s SHA-256, and lists tokens without either', async () => {
    const me = await signedIn('tok');
    const token = await makeToken(me, { name: 'a', scopes: ['runs:read'] });
    const raw = await getStack().db.conn.db!.collection('tokens').find({ username: me.username }).toArray();
    expect(raw).to.have.length(1);
    expect(raw[0]!._id).to.equal(sha256(token));
    expect(JSON.stringify(raw)).not.to.contain(token.slice(4));

    const list = await me.api.get('/api/tokens/~');
    expect(list.status, list.text).to.equal(200);
    expect(list.body).to.have.length(1);
    expect(list.body[0]).to.have.keys(['name', 'profiles', 'scopes', 'created_at', 'expires_at', 'last_used_at']);
    expect(list.body[0]).to.deep.include({ name: 'a', profiles: null, scopes: ['runs:read'], last_used_at: null });
    expect(list.text).not.to.contain(token.slice(4));
    expect(list.text).not.to.contain(sha256(token));
  });

  it('answers 409 token_exists for a name in use, which another user may still take', async () => {
    const me = await signedIn('tok');
    await makeToken(me, { name: 'dup' });
    expectError(await me.api.post('/api/tokens/~', { name: 'dup', scopes: ['tasks:read'] }), 409, 'token_exists', /"dup"/);
    const other = await signedIn('tok');
    expect((await other.api.post('/api/tokens/~', { name: 'dup' })).status).to.equal(201);
  });

  it('answers 400 naming the field for bad input, and makes nothing', async () => {
    const me = await signedIn('tok');
    const bad: Array<[unknown, RegExp]> = [
      [{}, /^name: required/],
      [{ name: 'a/b' }, /^name: /],
      [{ name: 'x', scopes: ['runs:read', 'runs:write'] }, /^scopes\.1: expected one of tasks:read, runs:trigger, runs:read, runs:control/],
      [{ name: 'x', scopes: [] }, /^scopes: must not be empty/],
      [{ name: 'x', scopes: 'runs:read' }, /^scopes: expected array/],
      [{ name: 'x', profiles: ['default', '../x'] }, /^profiles\.1: expected letters/],
      [{ name: 'x', profiles: [] }, /^profiles: must not be empty/],
      [{ name: 'x', profiles: ['nowhere'] }, /^profiles\.0: you have no profile "nowhere"/],
      [{ name: 'x', expires_in_days: 0 }, /^expires_in_days: must be at least 1/],
      [{ name: 'x', expires_in_days: 366 }, /^expires_in_days: must be at most 365/],
      [{ name: 'x', expires_in_days: 1.5 }, /^expires_in_days: must be a whole number/],
      [{ name: 'x', scope: ['runs:read'] }, /^body: unknown field "scope"/],
    ];
    for (const [body, message] of bad) expectError(await me.api.post('/api/tokens/~', body), 400, 'invalid_request', message);
    expect((await me.api.get('/api/tokens/~')).body).to.deep.equal([]);
  });

  it("answers 404 for another user's tokens", async () => {
    const me = await signedIn('tok');
    const other = await signedIn('tok');
    await makeToken(other, { name: 'theirs' });
    expectError(await me.api.get(`/api/tokens/${other.username}`), 404, 'not_found');
    expectError(await me.api.post(`/api/tokens/${other.username}`, { name: 'mine' }), 404, 'not_found');
    expectError(await me.api.delete(`/api/tokens/${other.username}/theirs`), 404, 'not_found');
    expect((await other.api.get('/api/tokens/~')).body.map((t: { name: string }) => t.name)).to.deep.equal(['theirs']);
  });

  it('revokes with 204, then 404; a revoked token stops working at once without a cache', async () => {
    const uncached = await startApi({ SESSION_CACHE_MS: '0' });
    try {
      const me = await signedIn('tok');
      const token = await makeToken(me, { name: 'gone' });
      const client = bearer(token, uncached.url);
      expect((await client.get('/api/tasks/~')).status).to.equal(200);
      expect((await api(me.sessionId, uncached.url).delete('/api/tokens/~/gone')).status).to.equal(204);
      expectError(await client.get('/api/tasks/~'), 401, 'unauthorized', /unknown or revoked/);
      expectError(await me.api.delete('/api/tokens/~/gone'), 404, 'not_found', /token "gone"/);
      // The name is free again.
      expect((await me.api.post('/api/tokens/~', { name: 'gone' })).status).to.equal(201);
    } finally {
      await uncached.close();
    }
  });

  it('a revoked token stops working once SESSION_CACHE_MS has passed, even though it was cached', async () => {
    const me = await signedIn('tok');
    const token = await makeToken(me, { name: 'cached' });
    expect((await bearer(token).get('/api/tasks/~')).status).to.equal(200);
    expect((await me.api.delete('/api/tokens/~/cached')).status).to.equal(204);
    await new Promise((r) => setTimeout(r, getStack().config.SESSION_CACHE_MS + 50));
    expectError(await bearer(token).get('/api/tasks/~'), 401, 'unauthorized');
  });

  it('notes when a token was last used, at most once a minute', async () => {
    const me = await signedIn('tok');
    const token = await makeToken(me, { name: 'used' });
    const lastUsed = async () => (await me.api.get('/api/tokens/~')).body[0].last_used_at as string | null;
    expect(await lastUsed()).to.equal(null);
    const before = Date.now();
    expect((await bearer(token).get('/api/tasks/~')).status).to.equal(200);
    const first = await lastUsed();
    expect(first).to.be.a('string');
    expect(Date.parse(first!)).to.be.at.least(before - 1000);
    // Past the cache bound, so the token is looked up (and could be written) again.
    await new Promise((r) => setTimeout(r, getStack().config.SESSION_CACHE_MS + 50));
    expect((await bearer(token).get('/api/tasks/~')).status).to.equal(200);
    expect(await lastUsed()).to.equal(first);
  });
});

describe('access tokens: what they may do', () => {
  let me: Me;
  before(async () => {
    me = await signedIn('tokuse');
    await me.api.post('/api/profiles/~/work', {});
    await createTask(me.api, 'default', 'greet');
    await createTask(me.api, 'work', 'job');
  });

  it('refuses an unknown token and an expired one with 401, saying which', async () => {
    expectError(await bearer('ptr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').get('/api/tasks/~'), 401, 'unauthorized', /unknown or revoked/);
    const { token } = await createToken(getStack().db.models, me.username, { name: 'old', profiles: null, scopes: [...TOKEN_SCOPES], expiresInDays: 1 }, new Date(Date.now() - 2 * 86_400_000));
    expectError(await bearer(token).get('/api/tasks/~'), 401, 'unauthorized', /"old" expired at/);
  });

  it('reads tasks of both variants with tasks:read', async () => {
    const reader = bearer(await makeToken(me, { name: 'reader', scopes: ['tasks:read'] }));
    const all = await reader.get('/api/tasks/~');
    expect(all.status, all.text).to.equal(200);
    expect(all.body.map((t: { name: string }) => t.name).sort()).to.deep.equal(['greet', 'job']);
    expect((await reader.get('/api/tasks/~/work/job')).status).to.equal(200);
    expect((await reader.get('/api/profiles/~/default/tasks')).status).to.equal(200);
    expect((await reader.get('/api/profiles/~/default/tasks/greet')).status).to.equal(200);
    expect((await reader.get('/api/tasks/~/work/job/schedules')).status).to.equal(200);
  });

  it('answers 403 insufficient_scope naming the scope a route needs', async () => {
    const reader = bearer(await makeToken(me, { name: 'only-tasks', scopes: ['tasks:read'] }));
    expectError(await reader.put('/api/profiles/~/default/tasks/greet/runs/r1', { parameters: { text: 'x' } }), 403, 'insufficient_scope', /"runs:trigger"/);
    expectError(await reader.get('/api/runs/~/default/greet'), 403, 'insufficient_scope', /"runs:read"/);
    expectError(await reader.get('/api/profiles/~/default/tasks/greet/runs/r1/events'), 403, 'insufficient_scope', /"runs:read"/);
    expectError(await reader.get('/api/approvals/~'), 403, 'insufficient_scope', /"runs:read"/);
    expectError(await reader.post('/api/runs/~/default/greet/r1/cancel'), 403, 'insufficient_scope', /"runs:control"/);
    expectError(await reader.delete('/api/runs/~/default/greet/r1'), 403, 'insufficient_scope', /"runs:control"/);
    const runner = bearer(await makeToken(me, { name: 'only-runs', scopes: ['runs:trigger', 'runs:read'] }));
    expectError(await runner.get('/api/tasks/~'), 403, 'insufficient_scope', /"tasks:read"/);
  });

  it('triggers, reads and deletes a run with the scopes for each', async () => {
    const runner = bearer(await makeToken(me, { name: 'runner', scopes: ['runs:trigger', 'runs:read'] }));
    const started = await runner.put('/api/profiles/~/default/tasks/greet/runs/tok1', { parameters: { text: 'hi' } });
    expect(started.status, started.text).to.equal(201);
    const run = await waitForRun(runner as never, started.body.url);
    expect(run.status).to.equal('ready');
    expect((await runner.get('/api/runs/~/default/greet')).body.map((r: { name?: string; url?: string }) => r.url ?? r.name).join()).to.contain('tok1');
    expectError(await runner.delete('/api/runs/~/default/greet/tok1'), 403, 'insufficient_scope', /"runs:control"/);
    const control = bearer(await makeToken(me, { name: 'control', scopes: ['runs:control'] }));
    expect((await control.delete('/api/runs/~/default/greet/tok1')).status).to.equal(204);
    await until('the run gone', async () => (await runner.get('/api/runs/~/default/greet/tok1')).status === 404);
  });

  it('keeps a token to its profiles: 403 naming any other, whether it exists or not', async () => {
    const work = bearer(await makeToken(me, { name: 'work-only', profiles: ['work'] }));
    expect((await work.get('/api/tasks/~/work/job')).status).to.equal(200);
    expectError(await work.get('/api/tasks/~/default/greet'), 403, 'profile_not_allowed', /"default"/);
    expectError(await work.get('/api/tasks/~/nowhere/x'), 403, 'profile_not_allowed', /"nowhere"/);
    expectError(await work.get('/api/profiles/~/default/tasks'), 403, 'profile_not_allowed', /"default"/);
    expectError(await work.put('/api/profiles/~/default/tasks/greet/runs/x1', { parameters: {} }), 403, 'profile_not_allowed', /"default"/);
    expectError(await work.get(`/api/runs/${me.username}/default/greet`), 403, 'profile_not_allowed', /"default"/);
    expectError(await work.get('/api/approvals/~?profile=default'), 403, 'profile_not_allowed', /"default"/);
    expect((await work.get('/api/approvals/~?profile=work')).status).to.equal(200);
    const listed = await work.get('/api/tasks/~');
    expect(listed.body.map((t: { name: string }) => t.name)).to.deep.equal(['job']);
  });

  it("answers another user's paths with the 404 a session gets", async () => {
    const other = await signedIn('tokother');
    await createTask(other.api, 'default', 'theirs');
    const mine = bearer(await makeToken(me, { name: 'nosy', profiles: ['work'] }));
    expectError(await mine.get(`/api/tasks/${other.username}/default/theirs`), 404, 'not_found');
    expectError(await mine.get(`/api/runs/${other.username}/default/theirs`), 404, 'not_found');
  });

  it('answers 403 session_required on every other route: a token cannot make tokens', async () => {
    const token = await makeToken(me, { name: 'everything' });
    const all = bearer(token);
    const refused: Array<Promise<ApiResponse>> = [
      all.get('/api/tokens/~'),
      all.post('/api/tokens/~', { name: 'child' }),
      all.delete('/api/tokens/~/everything'),
      all.get('/api/users/~'),
      all.get('/api/profiles/~'),
      all.post('/api/profiles/~/new', {}),
      all.put('/api/tasks/~/default/greet', {}),
      all.delete('/api/tasks/~/default/greet'),
      all.put('/api/profiles/~/default/tasks/greet', {}),
      all.get('/api/tasks/~/default/greet/webhook/deliveries'),
      all.post('/api/tasks/~/default/greet/signed'),
      all.put('/api/tasks/~/default/greet/schedules/s', {}),
      all.delete('/api/tasks/~/default/greet/schedules/s'),
      all.get('/api/servlets/~'),
      all.get('/api/profiles/~/default/installations'),
      all.get(`/api/c/${'0'.repeat(64)}`),
    ];
    for (const res of await Promise.all(refused)) expectError(res, 403, 'session_required', /session/);
    expect((await me.api.get('/api/tokens/~')).body.map((t: { name: string }) => t.name)).not.to.include('child');
    expect((await me.api.get('/api/tasks/~/default/greet')).status).to.equal(200);
  });

  it('counts writes per credential: a token past WRITE_LIMIT_PER_MINUTE leaves other tokens and sessions writing', async () => {
    const limited = await startApi({ WRITE_LIMIT_PER_MINUTE: '2' });
    try {
      const a = bearer(await makeToken(me, { name: 'limited-a' }), limited.url);
      const b = bearer(await makeToken(me, { name: 'limited-b' }), limited.url);
      const cancel = (client: ReturnType<typeof bearer>) => client.post('/api/runs/~/default/greet/never-ran/cancel');
      for (let i = 0; i < 2; i++) expectError(await cancel(a), 404, 'not_found');
      expectError(await cancel(a), 429, 'write_limit');
      expectError(await cancel(b), 404, 'not_found');
      // Sessions sent as Bearer are counted each under its own id too, not under one shared key.
      const x = await signedIn('tokx');
      const y = await signedIn('toky');
      const asBearer = (sessionId: string, path: string) => api(undefined, limited.url).post(path, {}, { headers: { authorization: `Bearer ${sessionId}` } });
      for (let i = 0; i < 2; i++) expect((await asBearer(x.sessionId, `/api/profiles/~/p${i}`)).status).to.equal(201);
      expectError(await asBearer(x.sessionId, '/api/profiles/~/p2'), 429, 'write_limit');
      expect((await asBearer(y.sessionId, '/api/profiles/~/p0')).status).to.equal(201);
    } finally {
      await limited.close();
    }
  });

  it('leaves the session cookie and a Bearer session id working as before', async () => {
    expect((await api(undefined).get('/api/tokens/~', { headers: { authorization: `Bearer ${me.sessionId}` } })).status).to.equal(200);
    expect((await me.api.get('/api/tokens/~')).status).to.equal(200);
  });
});

describe('access tokens: the table of routes they may call', () => {
  it('names only routes the routers register, and the OpenAPI document gives exactly those the accessToken scheme', async () => {
    const stack = getStack();
    const app = createApp({ config: stack.config, logger: stack.logger, db: stack.db, keyring: stack.keyring, temporal: stack.temporal });
    const routers = (app.middleware as Array<{ router?: Router }>).map((m) => m.router).filter((r): r is Router => r !== undefined);
    const registered = new Set(routers.flatMap((r) => r.stack).flatMap((layer) => layer.methods.map((m) => `${m} ${String(layer.path)}`)));
    const unknown = [...TOKEN_ROUTES.keys()].filter((key) => !registered.has(key));
    expect(unknown, 'TOKEN_ROUTES entries no router registers').to.deep.equal([]);

    const doc = (await api(undefined).get('/api/openapi.json')).body as { paths: Record<string, Record<string, { security?: Array<Record<string, string[]>> }>> };
    const documented = new Map<string, string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const scope = op.security?.find((s) => 'accessToken' in s)?.accessToken;
        if (scope) documented.set(`${method.toUpperCase()} ${path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1')}`, scope.join());
      }
    }
    expect(Object.fromEntries(documented)).to.deep.equal(Object.fromEntries([...TOKEN_ROUTES].map(([key, route]) => [key, route.scope])));
  });
});
