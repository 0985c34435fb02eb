import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { api, uniqueUser } from '../helpers/api';
import { getStack } from '../helpers/stack';

const root = path.resolve(__dirname, '../..');

/** Runs the helper as an operator would; only the database address is needed (no Temporal, no signing secret). */
async function sessionCli(args: string[], env: Record<string, string> = { MONGO_URL: getStack().env.MONGO_URL! }) {
  // node itself runs tsx, so the child needs no PATH and gets exactly `env`.
  const tsx = path.join(root, 'node_modules/tsx/dist/cli.mjs');
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [tsx, 'src/cli/session.ts', ...args], { cwd: root, env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the session helper (npm run session)', function () {
  // Each call starts a TypeScript process.
  this.timeout(60_000);

  it('creates a user and a session, prints "Session: <id>" on its own line, and the id works as the cookie', async () => {
    const username = uniqueUser('cli');
    const res = await sessionCli(['create', '--user', username]);
    expect(res.code, res.stderr).to.equal(0);
    const id = /^Session: (\S+)$/m.exec(res.stdout)?.[1];
    expect(id).to.match(new RegExp(`^ptr/${username}/`));
    const me = await api(id).get('/api/users/~');
    expect(me.status).to.equal(200);
    expect(me.body.username).to.equal(username);
  });

  it('lists sessions by hint and revokes one, after which it is refused', async () => {
    const username = uniqueUser('cli');
    const created = await sessionCli(['create', '--user', username]);
    const id = /^Session: (\S+)$/m.exec(created.stdout)![1]!;
    const listed = await sessionCli(['list', '--user', username]);
    expect(listed.stdout).to.contain(id.slice(-6)).and.contain('active');
    expect(listed.stdout).not.to.contain(id);
    const revoked = await sessionCli(['revoke', '--user', username, '--id', id.slice(-6)]);
    expect(revoked.code).to.equal(0);
    expect(revoked.stdout).to.contain('Revoked 1 session');
    expect((await sessionCli(['list', '--user', username])).stdout).to.contain('revoked');
    await new Promise((r) => setTimeout(r, getStack().config.SESSION_CACHE_MS + 50));
    expect((await api(id).get('/api/users/~')).status).to.equal(401);
  });

  it('revokes every session of a user with --all', async () => {
    const username = uniqueUser('cli');
    const ids = [];
    for (let i = 0; i < 2; i++) {
      const created = await sessionCli(['create', '--user', username]);
      expect(created.code).to.equal(0);
      ids.push(/^Session: (\S+)$/m.exec(created.stdout)![1]!);
    }
    const res = await sessionCli(['revoke', '--user', username, '--all']);
    expect(res.code).to.equal(0);
    expect(res.stdout).to.contain('Revoked 2 sessions');
    await new Promise((r) => setTimeout(r, getStack().config.SESSION_CACHE_MS + 50));
    for (const id of ids) expect((await api(id).get('/api/users/~')).status).to.equal(401);
  });

  it('prints usage and exits 2 for a wrong command line', async () => {
    for (const args of [[], ['create'], ['make', '--user', 'x'], ['revoke', '--user', 'x'], ['create', '--user', 'bad name']]) {
      const res = await sessionCli(args);
      expect(res.code, args.join(' ')).to.equal(2);
      expect(res.stderr).to.contain('Usage:');
    }
  });

  it('says which setting is missing when MONGO_URL is not set', async () => {
    const res = await sessionCli(['create', '--user', 'x'], {});
    expect(res.code).to.equal(2);
    expect(res.stderr).to.contain('MONGO_URL: required but not set');
    expect(res.stderr).not.to.match(/TEMPORAL_ADDRESS|SIGNING_SECRET|at .*\.ts:\d+/);
  });
});
