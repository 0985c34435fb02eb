import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { revokeAllUrls, signTaskUrl } from '../../src/store/signed-urls';
import { childEnv } from '../helpers/env';

describe('runs: signed URLs', () => {
  beforeEach(() => getStack().fake.reset());

  it('refuses a signed URL altered in any character after its route with 403, starting nothing', async () => {
    const { api, username } = await signedIn();
    const { db, fake } = getStack();
    const key = 'sk-guarded-only-0123456789';
    await createTask(api, 'default', 'guarded', { key });
    const url = await signedUrl(api, 'default', 'guarded');
    const start = url.indexOf('/signed/tasks/') + '/signed/tasks/'.length;
    const statuses = new Set<number>();
    for (let i = start; i < url.length; i++) {
      const c = url[i]!;
      const swapped = c === 'a' ? 'b' : c === '0' ? '1' : c === '/' || c === '?' || c === '&' || c === '=' ? null : 'a';
      if (!swapped) continue;
      const res = await postSigned(url.slice(0, i) + swapped + url.slice(i + 1), { text: 'x' }, { 'run-id': `alt-${i}` });
      statuses.add(res.status);
      expect(res.status, `character ${i} (${c}) altered: ${res.text}`).to.equal(403);
    }
    expect([...statuses]).to.deep.equal([403]);
    expect(await db.models.Run.countDocuments({ owner: username })).to.equal(0);
    expect(fake.requests.filter((r) => r.headers.authorization === `Bearer ${key}`)).to.have.length(0);
    expect((await postSigned(url, { text: 'x' })).status).to.equal(201);
  });

  it('refuses an expired signed URL with 403', async () => {
    const { api, username } = await signedIn();
    const { db, config } = getStack();
    await createTask(api, 'default', 'old');
    const task = await db.models.Task.findOne({ owner: username, name: 'old' }).lean();
    const expired = signTaskUrl(
      { secret: config.SIGNING_SECRET, publicUrl: config.PUBLIC_URL, ttlDays: 1 },
      { _id: task!._id, owner: username, profile: 'default', name: 'old' },
      Date.now() - 2 * 86_400_000,
    );
    const res = await postSigned(expired, { text: 'x' });
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('signed_url_expired');
  });

  it('revokes one URL through the API while others keep working, and all of them at once', async () => {
    const { api } = await signedIn();
    await createTask(api, 'default', 'rev');
    const one = await signedUrl(api, 'default', 'rev');
    const two = await signedUrl(api, 'default', 'rev');
    expect((await postSigned(one, {})).status, 'used (and its lookups cached) before the revocation').to.equal(201);
    await createTask(api, 'default', 'elsewhere-rev');
    const foreign = await api.post('/api/tasks/~/default/rev/signed/revoke', { url: await signedUrl(api, 'default', 'elsewhere-rev') });
    expect(foreign.status, 'a URL of another task').to.equal(400);
    expect(foreign.body.error.message).to.equal('url: not a signed URL of this task');
    const revoked = await api.post('/api/tasks/~/default/rev/signed/revoke', { url: one });
    expect(revoked.status).to.equal(204);
    expect((await postSigned(one, {})).body.error.code).to.equal('signed_url_revoked');
    expect((await postSigned(two, {})).status).to.equal(201);
    expect((await api.delete('/api/tasks/~/default/rev/signed')).status).to.equal(204);
    expect((await postSigned(two, {})).status).to.equal(403);
    const three = await signedUrl(api, 'default', 'rev');
    expect((await postSigned(three, {})).status, 'a URL issued after revoke-all works').to.equal(201);
  });

  it('honours a revocation written by another process within TRIGGER_CACHE_MS, and a task change here at once', async () => {
    const { api, username } = await signedIn();
    const { db, config, fake } = getStack();
    await createTask(api, 'default', 'elsewhere');
    const url = await signedUrl(api, 'default', 'elsewhere');
    expect((await postSigned(url, { text: 'x' })).status).to.equal(201);
    // Another API process (or the CLI) revokes every URL of the task: this process learns of it within the bound.
    const task = await db.models.Task.findOne({ owner: username, name: 'elsewhere' }).lean();
    await revokeAllUrls(db.models, task!._id);
    await new Promise((r) => setTimeout(r, config.TRIGGER_CACHE_MS + 50));
    expect((await postSigned(url, { text: 'x' })).body.error?.code).to.equal('signed_url_revoked');

    // A task saved through this process: the very next trigger runs the new version.
    const fresh = await signedUrl(api, 'default', 'elsewhere');
    expect((await postSigned(fresh, { text: 'x' }, { 'run-id': 'v1' })).status).to.equal(201);
    await createTask(api, 'default', 'elsewhere', { prompt: 'Second version: {{ text }}' });
    const second = await postSigned(fresh, { text: 'x' }, { 'run-id': 'v2' });
    await waitForRun(api, second.body.url);
    expect(fake.requests.some((r) => JSON.stringify(r.body).includes('Second version: x'))).to.equal(true);
  });

  it('revokes a URL with the signed-urls command', async () => {
    const { api, username } = await signedIn();
    const { env } = getStack();
    await createTask(api, 'default', 'cli');
    const url = await signedUrl(api, 'default', 'cli');
    const other = await signedUrl(api, 'default', 'cli');
    const tsx = path.resolve('node_modules/.bin/tsx');
    const { stdout } = await promisify(execFile)(tsx, ['src/cli/signed-urls.ts', 'revoke', '--url', url], { env: childEnv(env) });
    expect(stdout).to.match(/^Revoked signed URL \S+ of .*\/default\/cli\.$/m);
    expect((await postSigned(url, {})).status).to.equal(403);
    const all = await promisify(execFile)(tsx, ['src/cli/signed-urls.ts', 'revoke-all', '--user', username, '--profile', 'default', '--task', 'cli'], { env: childEnv(env) });
    expect(all.stdout).to.contain('Revoked every signed URL');
    // Another process wrote it: the API honours it within TRIGGER_CACHE_MS.
    await new Promise((r) => setTimeout(r, getStack().config.TRIGGER_CACHE_MS + 50));
    expect((await postSigned(other, {})).body.error?.code, 'revoke-all kills the URLs issued before it').to.equal('signed_url_revoked');
  });

  it('kills a task\'s signed URLs for good when the task is deleted, even if a task of the same name comes back', async () => {
    const { api } = await signedIn();
    await createTask(api, 'default', 'phoenix');
    const url = await signedUrl(api, 'default', 'phoenix');
    const run = await postSigned(url, { text: 'x' }, { 'run-id': 'before' });
    await waitForRun(api, run.body.url);
    expect((await api.delete('/api/tasks/~/default/phoenix')).status).to.equal(204);
    expect((await postSigned(url, {})).status).to.equal(403);
    await createTask(api, 'default', 'phoenix');
    expect((await postSigned(url, {})).status).to.equal(403);
    expect((await api.get(new URL(run.body.url).pathname)).status, 'the old run is gone with its task').to.equal(404);
  });
});
