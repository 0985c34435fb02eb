import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { childEnv, testEnv } from '../helpers/env';
import { getStack } from '../helpers/stack';
import { freePort } from '../helpers/net';

interface Dev {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** `npm run dev` as a user runs it (the same entry point), on free ports and a throwaway data directory. */
function startDev(env: Record<string, string>): Dev {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/dev.ts'], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out, exited: new Promise((r) => child.once('exit', (code) => r(code))) };
}

async function waitForOutput(dev: Dev, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = pattern.exec(dev.output());
    if (m) return m;
    if (dev.child.exitCode !== null || Date.now() > deadline) throw new Error(`no ${pattern} in:\n${dev.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * `npm run session -- <args>` as typed in a second terminal of this checkout: no MONGO_URL (nor any other setting of
 * the stack) in its environment, only where the dev command keeps its data, given relative to the checkout.
 */
async function sessionHelper(args: string[], dataDir: string | undefined, extra: Record<string, string> = {}) {
  const root = path.resolve(__dirname, '../..');
  const env = childEnv({ ...extra, DEV_DATA_DIR: dataDir ? path.relative(root, dataDir) : '' });
  for (const name of ['MONGO_URL', 'TEMPORAL_ADDRESS', 'MASTER_KEY', 'SIGNING_SECRET']) delete env[name];
  try {
    const { stdout, stderr } = await promisify(execFile)('npm', ['run', '--silent', 'session', '--', ...args], { cwd: root, env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' }, () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

describe('npm run dev', function () {
  this.timeout(180_000);
  let dataDir: string;
  let env: Record<string, string>;

  let cacheDir: string;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-dev-'));
    cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-dev-cache-'));
    const { fake } = getStack();
    env = {
      DEV_DATA_DIR: dataDir,
      // Its stacks registry in a directory of its own; the tools where they were built.
      XDG_CACHE_HOME: cacheDir,
      PTR_TOOLS_CACHE: path.dirname(path.dirname(testEnv.temporalCli!)),
      WORKER_HTTP_PORT: String(await freePort()),
      PORT: String(await freePort()),
      DEV_TEMPORAL_PORT: String(await freePort()),
      DEV_TEMPORAL_UI_PORT: String(await freePort()),
      DEV_MONGO_PORT: String(await freePort()),
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      LOG_LEVEL: 'warn',
    };
  });
  after(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(cacheDir, { recursive: true, force: true });
  });

  it('says which port is taken and exits non-zero, leaving nothing running', async () => {
    // The API's port is checked last, once Temporal and FerretDB are up: what they opened must be closed again.
    const blocker = net.createServer().listen(Number(env.PORT), '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    try {
      const dev = startDev(env);
      expect(await dev.exited).to.equal(1);
      expect(dev.output()).to.contain('starting FerretDB');
      expect(dev.output()).to.contain(`port ${env.PORT} (API) is already in use`);
      for (const port of [env.DEV_TEMPORAL_PORT, env.DEV_TEMPORAL_UI_PORT, env.DEV_MONGO_PORT]) {
        expect(await listening(Number(port)), `port ${port} closed`).to.equal(false);
      }
    } finally {
      blocker.close();
    }
  });

  it('starts everything, the helpers find it, Ctrl-C stops every process, and a second start still decrypts what the first stored', async () => {
    const { fake } = getStack();
    const first = startDev(env);
    const session = (await waitForOutput(first, /^Session: (\S+)$/m, 150_000))[1]!;
    expect(first.output()).to.match(new RegExp(`Temporal Web UI: +http://127\\.0\\.0\\.1:${env.DEV_TEMPORAL_UI_PORT}`));
    expect(fs.statSync(path.join(dataDir, 'secrets.json')).mode & 0o777).to.equal(0o600);
    const api = `http://127.0.0.1:${env.PORT}`;
    const headers = { cookie: `sessionId=${session}`, 'content-type': 'application/json' };
    const ui = await fetch(`http://127.0.0.1:${env.DEV_TEMPORAL_UI_PORT}/`);
    expect(ui.status).to.equal(200);
    const put = await fetch(`${api}/api/tasks/~/default/kept`, {
      method: 'PUT', headers,
      body: JSON.stringify({ runner: 'openai', openai: { prompt: 'Say {{ text }}', model: 'm' }, settings: { key: 'sk-dev-kept-0123456789' } }),
    });
    expect(put.status).to.equal(201);
    // The console's address, beside it a one-time link that signs the dev user in; the API links runs to this Web UI.
    expect(first.output()).to.contain(`  Console:          ${api}/console\n`);
    const link = /^ {2}Sign in: +(\S+)/m.exec(first.output())?.[1] ?? '';
    expect(link.startsWith(`${api}/console#token=`), link).to.equal(true);
    const signIn = await fetch(`${api}/api/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: link.split('#token=')[1] }) });
    expect(signIn.status).to.equal(204);
    const settings = await (await fetch(`${api}/api/console/settings`, { headers })).json();
    expect(settings).to.deep.include({ username: 'dev', temporal_ui_url: `http://127.0.0.1:${env.DEV_TEMPORAL_UI_PORT}` });

    // A second terminal: the session helper finds the running stack through its file.
    const stackFile = path.join(dataDir, 'dev-stack.json');
    expect(fs.statSync(stackFile).mode & 0o777).to.equal(0o600);
    expect(JSON.parse(fs.readFileSync(stackFile, 'utf8'))).to.include({ pid: first.child.pid, apiUrl: api });
    expect(first.output()).to.contain('the helpers (npm run session / signed-urls / rotate-key, ptr) find this stack by themselves');
    expect(first.output()).to.contain(`  export DEV_DATA_DIR=${dataDir}\n`);
    expect(first.output()).to.contain(`  npm run -s ptr -- login --session ${session} --origin ${api}\n`);
    expect(first.output(), 'no WASI warning').not.to.contain('ExperimentalWarning');
    // The worker's metrics, where the banner says.
    const metricsUrl = `http://127.0.0.1:${env.WORKER_HTTP_PORT}/metrics`;
    expect(first.output()).to.match(new RegExp(`Worker metrics: +${metricsUrl.replace(/\./g, '\\.')}`));
    expect(first.output()).to.match(/Traces: +off +\(set OTEL_EXPORTER_OTLP_ENDPOINT/);
    // Until the worker has bundled its workflows, its endpoint serves the process metrics only.
    let metrics = '';
    for (let i = 0; i < 300 && !metrics.includes('# TYPE ptr_'); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 200));
      // The worker listens once it has connected to the database: on a busy machine, after the API answers.
      metrics = await fetch(metricsUrl).then((r) => r.text(), () => '');
    }
    expect(metrics).to.contain('# TYPE ptr_activities_total');
    // Registered, so a shell without DEV_DATA_DIR finds it too, saying why.
    const entry = path.join(cacheDir, 'prompt-task-runner', 'stacks', `${first.child.pid}.json`);
    expect(JSON.parse(fs.readFileSync(entry, 'utf8'))).to.deep.include({ dataDir });
    const found = await sessionHelper(['create', '--user', 'bob'], undefined, { XDG_CACHE_HOME: cacheDir });
    expect(found.code, found.stderr).to.equal(0);
    expect(found.stderr).to.contain('the only dev stack running');
    const helper = await sessionHelper(['create', '--user', 'alice'], dataDir);
    expect(helper.code, helper.stderr).to.equal(0);
    expect(helper.stderr).to.contain('[session] using MONGO_URL, PUBLIC_URL of the dev stack started by npm run dev');
    const alice = /^Session: (\S+)$/m.exec(helper.stdout)![1];
    const me = await fetch(`${api}/api/users/~`, { headers: { cookie: `sessionId=${alice}` } });
    expect(me.status).to.equal(200);
    expect(((await me.json()) as { username: string }).username).to.equal('alice');

    first.child.kill('SIGINT');
    expect(await first.exited).to.equal(0);
    for (const port of [env.PORT, env.DEV_TEMPORAL_PORT, env.DEV_TEMPORAL_UI_PORT, env.DEV_MONGO_PORT]) {
      expect(await listening(Number(port)), `port ${port} closed`).to.equal(false);
    }
    expect(fs.existsSync(stackFile), 'the dev stack file is removed on stop').to.equal(false);
    expect(fs.existsSync(entry), 'unregistered on stop').to.equal(false);
    const stopped = await sessionHelper(['create', '--user', 'alice'], dataDir);
    expect(stopped.code).to.equal(2);
    expect(stopped.stderr).to.contain('MONGO_URL: required but not set');
    expect(stopped.stderr).to.contain('or start `npm run dev`');

    fake.reset();
    // As at a terminal (this output is a pipe, so the format is asked for): readable lines, no JSON.
    const second = startDev({ ...env, LOG_FORMAT: 'pretty', LOG_LEVEL: 'info' });
    try {
      await waitForOutput(second, /^Session: (\S+)$/m, 150_000);
      expect(second.output()).to.match(/^\d\d:\d\d:\d\d INFO {2}api: API listening url=http/m);
      expect(second.output()).not.to.match(/^\{"level"/m);
      const signed = (await (await fetch(`${api}/api/tasks/~/default/kept/signed`, { method: 'POST', headers })).json()) as { url: string };
      const trigger = (await (await fetch(signed.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":"again"}' })).json()) as { url: string };
      let run: any;
      for (let i = 0; i < 200 && run?.status !== 'ready' && run?.status !== 'error'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        run = await (await fetch(trigger.url, { headers })).json();
      }
      expect(run.status, JSON.stringify(run)).to.equal('ready');
      expect(fake.requests[0]!.headers.authorization).to.equal('Bearer sk-dev-kept-0123456789');
    } finally {
      second.child.kill('SIGINT');
      await second.exited;
    }
  });
});
