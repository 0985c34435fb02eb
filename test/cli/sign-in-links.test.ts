import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { api, signedIn, uniqueUser } from '../helpers/api';
import { ptrAs } from '../helpers/ptr';
import { atTeardown, getStack } from '../helpers/stack';

const root = path.resolve(__dirname, '../..');

/** `npm run session -- <args>` as an operator runs it (node runs tsx, so the child gets exactly `env`). */
async function sessionCli(args: string[], env: Record<string, string>) {
  // An empty data directory: no dev stack is found, whatever runs in this checkout.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-sign-in-'));
  atTeardown(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  const tsx = path.join(root, 'node_modules/tsx/dist/cli.mjs');
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [tsx, 'src/cli/session.ts', ...args], { cwd: root, env: { DEV_DATA_DIR: dataDir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The `Sign in:  <link>` line's link. */
const signInLine = (stdout: string) => /^Sign in: {2}(\S+)$/m.exec(stdout)?.[1];
const tokenOf = (url: string) => /#token=([A-Za-z0-9_-]+)$/.exec(url)![1]!;

/** Signs in with the link's token on the stack's API: the session id the cookie holds, or the refusal. */
async function exchange(url: string) {
  const res = await api(undefined).post('/api/sign-in', { token: tokenOf(url) });
  const id = /^sessionId=([^;]+);/.exec(res.headers.get('set-cookie') ?? '')?.[1];
  return { status: res.status, id };
}

describe('sign-in links on the command line', function () {
  // Each session helper call starts a TypeScript process.
  this.timeout(60_000);

  it('npm run session -- create prints "Sign in:  <PUBLIC_URL>/console#token=…", a link that signs the user in once', async () => {
    const username = uniqueUser('cli');
    const publicUrl = 'https://ptr.example.com';
    const res = await sessionCli(['create', '--user', username], { MONGO_URL: getStack().env.MONGO_URL!, PUBLIC_URL: publicUrl });
    expect(res.code, res.stderr).to.equal(0);
    const link = signInLine(res.stdout);
    expect(link, res.stdout).to.match(/^https:\/\/ptr\.example\.com\/console#token=[A-Za-z0-9_-]{43,}$/);
    const session = /^Session: (\S+)$/m.exec(res.stdout)![1];
    const used = await exchange(link!);
    expect(used.status).to.equal(204);
    expect(used.id).to.match(new RegExp(`^ptr/${username}/`)).and.not.equal(session);
    expect((await api(used.id).get('/api/users/~')).body.username).to.equal(username);
    expect((await exchange(link!)).status).to.equal(401);
  });

  it('npm run session -- create builds the link on HOST and PORT when PUBLIC_URL is unset, as the API does', async () => {
    const res = await sessionCli(['create', '--user', uniqueUser('cli')], { MONGO_URL: getStack().env.MONGO_URL!, HOST: '0.0.0.0', PORT: '9123' });
    expect(res.code, res.stderr).to.equal(0);
    expect(signInLine(res.stdout)).to.match(/^http:\/\/127\.0\.0\.1:9123\/console#token=/);
  });

  it("ptr console prints the link alone on stdout, for the CLI's own user, and how long it works on stderr", async () => {
    const me = await signedIn('ptr-console');
    const res = await ptrAs(['console'], me.sessionId);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout).to.match(new RegExp(`^${getStack().config.PUBLIC_URL.replace(/[.:/]/g, '\\$&')}/console#token=[A-Za-z0-9_-]{43,}\\n$`));
    expect(res.stderr).to.match(/once, until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    const used = await exchange(res.stdout.trim());
    expect(used.status).to.equal(204);
    expect((await api(used.id).get('/api/users/~')).body.username).to.equal(me.username);
  });

  it('ptr --json console prints the link and its expiry as JSON', async () => {
    const me = await signedIn('ptr-console');
    const res = await ptrAs(['--json', 'console'], me.sessionId);
    expect(res.code, res.stderr).to.equal(0);
    const doc = JSON.parse(res.stdout);
    expect(Object.keys(doc).sort()).to.deep.equal(['expires_at', 'url']);
    expect(Date.parse(doc.expires_at)).to.be.greaterThan(Date.now());
    expect((await exchange(doc.url)).status).to.equal(204);
  });
});
