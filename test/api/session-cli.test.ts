import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { api, uniqueUser } from '../helpers/api';
import { getStack } from '../helpers/stack';
import { writeDevStack } from '../../src/cli/dev-stack-file';

const root = path.resolve(__dirname, '../..');

/** Runs the helper as an operator would; only the database address is needed (no Temporal, no signing secret). */
async function sessionCli(args: string[], env: Record<string, string> = { MONGO_URL: getStack().env.MONGO_URL! }) {
  return helper('src/cli/session.ts', args, env);
}

async function helper(file: string, args: string[], env: Record<string, string>) {
  // node itself runs tsx, so the child needs no PATH and gets exactly `env`.
  const tsx = path.join(root, 'node_modules/tsx/dist/cli.mjs');
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [tsx, file, ...args], { cwd: root, env });
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
    const revoked = await sessionCli(['revoke', '--user', username, `--id=${id.slice(-6)}`]);
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

  describe('with the file of a dev stack (npm run dev writes it; test/foundation/dev-command.test.ts runs the real one)', () => {
    let dataDir: string;
    const MASTER_KEY = `dev-test:${Buffer.alloc(32, 7).toString('base64')}`;
    const SIGNING_SECRET = 's'.repeat(40);
    /** A dev stack file in a fresh data directory: by default this process's (alive), on the test database. */
    const devStack = (overrides: { pid?: number; mongoUrl?: string } = {}) =>
      writeDevStack(dataDir, {
        pid: overrides.pid ?? process.pid,
        apiUrl: getStack().apiUrl,
        mongoUrl: overrides.mongoUrl ?? getStack().env.MONGO_URL!,
        temporalAddress: '127.0.0.1:1',
        temporalNamespace: 'default',
        secretsFile: path.join(dataDir, 'secrets.json'),
        startedAt: new Date().toISOString(),
      });
    beforeEach(() => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-helpers-'));
      fs.writeFileSync(path.join(dataDir, 'secrets.json'), JSON.stringify({ MASTER_KEY, SIGNING_SECRET }), { mode: 0o600 });
    });
    afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

    it('takes MONGO_URL from the running dev stack when it is not set, and says so on stderr', async () => {
      devStack();
      const username = uniqueUser('cli');
      const res = await sessionCli(['create', '--user', username], { DEV_DATA_DIR: dataDir });
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stderr.trim()).to.equal(`[session] using MONGO_URL, PUBLIC_URL of the dev stack started by npm run dev (${path.join(dataDir, 'dev-stack.json')}; DEV_DATA_DIR=${dataDir})`);
      // Its sign-in link is on the dev stack's API.
      expect(res.stdout).to.contain(`Sign in:  ${getStack().apiUrl}/console#token=`);
      const id = /^Session: (\S+)$/m.exec(res.stdout)![1];
      expect((await api(id).get('/api/users/~')).body.username).to.equal(username);
    });

    it('uses MONGO_URL from the environment over the dev stack\'s, silently', async () => {
      devStack({ mongoUrl: 'mongodb://127.0.0.1:1/not-this-one' });
      const res = await sessionCli(['create', '--user', uniqueUser('cli')], { DEV_DATA_DIR: dataDir, MONGO_URL: getStack().env.MONGO_URL! });
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stderr).to.equal('');
    });

    it('ignores the file of a dev command that is no longer running, and says to set MONGO_URL or start npm run dev', async () => {
      const gone = spawnSync(process.execPath, ['-e', '']).pid;
      devStack({ pid: gone });
      const res = await sessionCli(['create', '--user', 'x'], { DEV_DATA_DIR: dataDir });
      expect(res.code).to.equal(2);
      expect(res.stderr).to.contain('MONGO_URL: required but not set');
      expect(res.stderr).to.contain('Set MONGO_URL in the environment, or start `npm run dev` (no running dev stack found through');
    });

    it("never mixes: with MONGO_URL naming another database, the dev stack's signing secret is not used", async () => {
      devStack({ mongoUrl: 'mongodb://127.0.0.1:1/the-dev-stack' });
      const res = await helper('src/cli/signed-urls.ts', ['revoke-all', '--user', 'u', '--profile', 'p', '--task', 't'], {
        DEV_DATA_DIR: dataDir,
        MONGO_URL: getStack().env.MONGO_URL!,
      });
      expect(res.code).to.equal(2);
      expect(res.stderr).to.contain('SIGNING_SECRET: required but not set');
      expect(res.stderr).to.contain('was not used: MONGO_URL differs from its own');
    });
  });

  it('says which setting is missing when MONGO_URL is not set, and what to do', async () => {
    // an empty data directory: no dev stack, whatever runs in this checkout
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-helpers-'));
    try {
      const res = await sessionCli(['create', '--user', 'x'], { DEV_DATA_DIR: dataDir });
      expect(res.code).to.equal(2);
      expect(res.stderr).to.contain('MONGO_URL: required but not set');
      expect(res.stderr).to.contain('or start `npm run dev`');
      expect(res.stderr).not.to.match(/TEMPORAL_ADDRESS|SIGNING_SECRET|at .*\.ts:\d+/);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
