import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createRunView } from '../../src/cli/ptr/run-view';
import { createSseParser, type SseEvent } from '../../src/cli/ptr/sse';
import type { Context } from '../../src/cli/ptr/context';
import { signedIn, uniqueUser, type Api } from '../helpers/api';
import { childEnv } from '../helpers/env';
import { openaiText, openaiToolCall, providerError } from '../helpers/fake-provider';
import { createTask, until, waitForRun } from '../helpers/runs';
import { buildTestServlets, installServlet } from '../helpers/servlets';
import { writeDevStack } from '../../src/cli/dev-stack-file';
import { registerStack, unregisterStack } from '../../src/cli/stack-registry';
import { atTeardown, getStack } from '../helpers/stack';

const BIN = path.join(__dirname, '..', '..', 'bin', 'ptr');

interface Done {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs bin/ptr as a user would; `output()` shows what it printed so far, `done` its exit code and output. */
function spawnPtr(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(BIN, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const done = new Promise<Done>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  atTeardown(async () => void child.kill());
  return { output: () => stdout, done };
}

const ptr = (args: string[], env: NodeJS.ProcessEnv) => spawnPtr(args, env).done;

/** A loopback TCP proxy to the API whose open connections a test can cut (a stream that drops); keeps what clients sent. */
async function droppingProxy(target: string) {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  let sent = '';
  const server = net.createServer((client) => {
    client.on('data', (c: Buffer) => (sent += c.toString('latin1')));
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.once('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  atTeardown(close);
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    dropAll: () => sockets.forEach((s) => s.destroy()),
    sent: () => sent,
  };
}

const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('ptr (the command line), run as a process against the API', function () {
  this.timeout(90_000);
  let user: { username: string; sessionId: string; api: Api };
  let dir: string;
  /** The environment of a user of the Python client: MCP_RUN_ORIGIN and MCP_RUN_SESSION_ID; a HOME of its own. */
  let env: NodeJS.ProcessEnv;
  /** No dev stack either: DEV_DATA_DIR is an empty directory (`npm run dev` may be running in this checkout). */
  const isolated = (extra: Record<string, string>) =>
    childEnv({
      HOME: dir,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      MCP_RUN_ORIGIN: '',
      MCP_RUN_SESSION_ID: '',
      MCPX_SESSION_ID: '',
      PTR_CONFIG: '',
      DEV_DATA_DIR: path.join(dir, 'no-dev-stack'),
      PUBLIC_URL: '',
      ...extra,
    });

  before(async () => {
    user = await signedIn('cli');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-cli-'));
    atTeardown(async () => fs.rmSync(dir, { recursive: true, force: true }));
    env = isolated({ MCP_RUN_ORIGIN: getStack().apiUrl, MCP_RUN_SESSION_ID: user.sessionId });
    // What the run tests trigger (the first two tests make their own through the CLI).
    expect((await user.api.post('/api/profiles/~/work')).status).to.equal(201);
    await createTask(user.api, 'work', 'echo');
  });
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('creates a profile and lists it as JSON', async () => {
    const created = await ptr(['profile', 'create', 'made', '--description', 'from the CLI'], env);
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stdout).to.equal(`created profile ${user.username}/made\n`);
    const listed = await ptr(['profile', 'list', '--json'], env);
    expect(listed.code, listed.stderr).to.equal(0);
    const profiles = JSON.parse(listed.stdout);
    expect(profiles.map((p: { slug: string }) => p.slug)).to.deep.equal(['default', 'work', 'made'].map((p) => `${user.username}/${p}`));
    expect(profiles[2].description).to.equal('from the CLI');
  });

  it('creates a task from a YAML file, as the API takes its body, and lists it as JSON', async () => {
    const file = path.join(dir, 'haiku.yaml');
    fs.writeFileSync(file, ['runner: openai', 'openai:', '  prompt: "Say {{ text }}"', '  model: test-model', 'settings:', '  key: sk-test-key-0123456789abcdef', ''].join('\n'));
    const created = await ptr(['task', 'create', 'haiku', '--profile', 'made', '--file', file], env);
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stdout).to.equal(`created task ${user.username}/made/haiku (openai test-model)\n`);
    const listed = await ptr(['--json', 'task', 'list', '--profile', 'made'], env);
    expect(listed.code, listed.stderr).to.equal(0);
    const [task, ...more] = JSON.parse(listed.stdout);
    expect(more).to.deep.equal([]);
    expect(task).to.include({ slug: `${user.username}/made/haiku`, runner: 'openai' });
    expect(task.openai).to.include({ prompt: 'Say {{ text }}', model: 'test-model' });
    expect(task.settings).to.deep.equal({ key_set: true });
  });

  it('follows a triggered run to `ready`: prints its entries as they come and exits 0', async () => {
    const res = await ptr(['run', 'trigger', 'echo', '-p', 'work', '--run', 'r1', '--data', 'text=tides', '--follow'], env);
    expect(res.code, res.stderr).to.equal(0);
    const run = (await user.api.get('/api/runs/~/work/echo/r1')).body;
    expect(run.status).to.equal('ready');
    const lines = res.stdout.split('\n');
    expect(lines[0]).to.equal(`started: ${getStack().config.PUBLIC_URL}/api/runs/${user.username}/work/echo/r1`);
    // Every entry once, in order, by its index; the prompt and the answer with their content.
    const heads = lines.filter((l) => /^ {0,2}\d+ /.test(l)).map((l) => Number(l.trim().split(' ')[0]));
    expect(heads).to.deep.equal(run.results.map((_: unknown, i: number) => i));
    expect(res.stdout).to.include('    user: Say tides\n');
    expect(res.stdout).to.include('    assistant: echo: Say tides\n');
    // Not a terminal: plain status lines, and the end.
    expect(res.stdout).to.match(/^-- r1: running$/m);
    // Where docs/cli.md shows it: under the entries that came with the change (the run's start and its prompt).
    expect(lines.indexOf('-- r1: running')).to.be.greaterThan(lines.indexOf('    user: Say tides'));
    expect(lines.at(-2)).to.equal(`-- r1: ready (${run.results.length} entries)`);
    expect(res.stderr).to.equal('');
  });

  it('follows a run that ends in `error` as JSON lines and exits 1 with the reason on stderr', async () => {
    getStack().fake.script([providerError('openai', 400, 'the model refuses')]);
    const res = await ptr(['--json', 'run', 'trigger', 'echo', '-p', 'work', '--run', 'r2', '--follow', '--data', 'text=x'], env);
    expect(res.code, res.stderr).to.equal(1);
    const events = jsonLines(res.stdout);
    expect(events[0]).to.deep.include({ event: 'triggered', run: 'r2', created: true });
    const run = (await user.api.get('/api/runs/~/work/echo/r2')).body;
    const entries = events.filter((e) => e.event === 'entry');
    expect(entries.map((e) => e.entry)).to.deep.equal(run.results);
    expect(entries.map((e) => e.id)).to.deep.equal(run.results.map((_: unknown, i: number) => i));
    expect(events.at(-1)).to.deep.equal({ event: 'end', status: 'error', modified_at: run.modified_at });
    expect(res.stderr).to.match(/^error run_error: run r2 ended in error: .*the model refuses/);
  });

  it('resumes a dropped event stream with Last-Event-ID: every entry once, in order', async () => {
    const { fake } = getStack();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    // A first turn (a tool the profile lacks: its error goes back to the model), then a second call held: the run
    // has entries to stream before it waits.
    fake.script([
      openaiToolCall([{ name: 'nothing__here', arguments: {} }]),
      async () => {
        await released;
        return openaiText('late');
      },
    ]);
    const proxy = await droppingProxy(getStack().apiUrl);
    // Through the proxy: the signed URL and the run URL (built from PUBLIC_URL) are requested on the proxy's address.
    const child = spawnPtr(['--json', 'run', 'trigger', 'echo', '-p', 'work', '--run', 'r3', '--follow', '--data', 'text=y'], { ...env, MCP_RUN_ORIGIN: proxy.url });
    await until('the first entries', () => child.output().includes('"event":"entry"') && fake.requests.length > 1);
    proxy.dropAll();
    await until('the reconnection', () => child.output().includes('"event":"reconnecting"'));
    release();
    const res = await child.done;
    expect(res.code, res.stderr).to.equal(0);
    const run = (await user.api.get('/api/runs/~/work/echo/r3')).body;
    const events = jsonLines(res.stdout);
    const entries = events.filter((e) => e.event === 'entry');
    expect(entries.map((e) => e.id)).to.deep.equal(run.results.map((_: unknown, i: number) => i));
    expect(entries.map((e) => e.entry)).to.deep.equal(run.results);
    expect(events.at(-1)).to.include({ event: 'end', status: 'ready' });
    // The second stream asked for the entries after the last one the first brought, and brought the rest.
    const cut = events.findIndex((e) => e.event === 'reconnecting');
    const lastBefore = events.slice(0, cut).filter((e) => e.event === 'entry').at(-1);
    expect(proxy.sent().match(/^last-event-id: .*$/gim)).to.deep.equal([`last-event-id: ${lastBefore.id}`]);
    expect(events.slice(cut).filter((e) => e.event === 'entry')).to.not.deep.equal([]);
  });

  it('cancels a live run', async () => {
    getStack().fake.script(() => ({ hang: true }));
    const started = await ptr(['run', 'trigger', 'echo', '-p', 'work', '--run', 'r4', '--data', 'text=z'], env);
    expect(started.code, started.stderr).to.equal(0);
    expect(started.stdout).to.match(/^started: run r4, http:\/\//);
    await until('the provider call', () => getStack().fake.requests.length > 0);
    const cancelled = await ptr(['run', 'cancel', 'echo', 'r4', '-p', 'work'], env);
    expect(cancelled.code, cancelled.stderr).to.equal(0);
    expect(cancelled.stdout).to.equal('cancel requested: run r4\n');
    const run = await waitForRun(user.api, `http://x/api/runs/~/work/echo/r4`);
    expect(run.status).to.equal('error');
    expect(run.results.at(-1).error).to.equal(`cancelled by ${user.username}`);
  });

  it('updates only a task that exists: `task update` of a missing one fails and creates nothing', async () => {
    const file = path.join(dir, 'update.json');
    fs.writeFileSync(file, JSON.stringify({ runner: 'openai', openai: { prompt: 'Hi {{ text }}', model: 'test-model' }, settings: { key: 'sk-test-key-0123456789abcdef' } }));
    const missing = await ptr(['task', 'update', 'not-there', '-p', 'work', '--file', file], env);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.equal('error not_found: task "work/not-there" not found\n');
    expect((await user.api.get('/api/tasks/~/work/not-there')).status).to.equal(404);
    await createTask(user.api, 'work', 'to-update');
    const updated = await ptr(['task', 'update', 'to-update', '-p', 'work', '--file', file], env);
    expect(updated.code, updated.stderr).to.equal(0);
    expect(updated.stdout).to.equal(`updated task ${user.username}/work/to-update (openai test-model)\n`);
    expect((await user.api.get('/api/tasks/~/work/to-update')).body.openai.prompt).to.equal('Hi {{ text }}');
  });

  it('triggers with the --payload file as the trigger data, each --data field set on top', async () => {
    await createTask(user.api, 'work', 'two', { prompt: 'Say {{ a }} and {{ b }}' });
    const file = path.join(dir, 'payload.yaml');
    fs.writeFileSync(file, 'a: from-file\nb: from-file\n');
    const res = await ptr(['run', 'trigger', 'two', '-p', 'work', '--run', 'p1', '--payload', file, '--data', 'b=from-flag'], env);
    expect(res.code, res.stderr).to.equal(0);
    const run = await waitForRun(user.api, 'http://x/api/runs/~/work/two/p1');
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say from-file and from-flag');
  });

  it('approves a tool call a run waits on', async () => {
    const other = await signedIn('cli-approve');
    const otherEnv = isolated({ MCP_RUN_ORIGIN: getStack().apiUrl, MCP_RUN_SESSION_ID: other.sessionId });
    await installServlet(other.api, other.username, 'greeter', 'gate');
    const gated = await other.api.post('/api/profiles/~/default/installations', { servlet_slug: `${other.username}/greeter`, name: 'gate', settings: { approval: '*' } });
    expect(gated.status, gated.text).to.equal(200);
    await createTask(other.api, 'default', 'gated');
    getStack().fake.script([openaiToolCall([{ id: 'c1', name: 'gate__greet', arguments: { name: 'Ann' } }]), openaiText('greeted')]);
    const following = spawnPtr(['run', 'trigger', 'gated', '--run', 'a1', '--data', 'text=x', '--follow'], otherEnv);
    // Following prints the decide command, ready to paste.
    const decide = await until('the decide command', async () => /^ {4}decide: ptr (.*?) {3}\(or: /m.exec(following.output())?.[1]);
    const approval = (await other.api.get('/api/runs/~/default/gated/a1')).body.results.find((e: any) => e.approval).approval;
    expect(decide).to.equal(`run approve gated a1 ${approval.id}`);
    const approved = await ptr(decide.split(' '), otherEnv);
    expect(approved.code, approved.stderr).to.equal(0);
    expect(approved.stdout).to.equal(`approved: ${approval.id}\n`);
    expect((await following.done).code).to.equal(0);
    const run = await waitForRun(other.api, 'http://x/api/runs/~/default/gated/a1');
    expect(run.status).to.equal('ready');
    expect(run.results.map((e: any) => e.msg)).to.include(`approved by ${other.username}: gate__greet`);
    expect(run.usage.tool_calls).to.equal(1);
  });

  it('prints an error of the API as `error <code>: <message>` on stderr and exits 1', async () => {
    const res = await ptr(['task', 'get', 'nope', '--profile', 'work'], env);
    expect(res.code).to.equal(1);
    expect(res.stdout).to.equal('');
    expect(res.stderr).to.equal('error not_found: task "work/nope" not found\n');
  });

  it('exits 2 on a usage error, before any request', async () => {
    const res = await ptr(['run', 'trigger', 'echo', '--data', 'no-equals-sign'], isolated({ MCP_RUN_ORIGIN: 'http://127.0.0.1:9' }));
    expect(res.code).to.equal(2);
    expect(res.stderr).to.match(/^error: --data: expected key=value, got "no-equals-sign"/);
  });

  it('names the file or address it cannot use, without a stack trace: bad YAML (with its line), a missing file, an origin that is no URL, an API that refuses connections', async () => {
    const bad = path.join(dir, 'bad.yaml');
    fs.writeFileSync(bad, 'runner: openai\nopenai: [\n');
    const badYaml = await ptr(['task', 'create', 'broken', '--file', bad], env);
    expect(badYaml.code, 'a usage error').to.equal(2);
    expect(badYaml.stderr).to.match(new RegExp(`^error: ${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .* at line \\d+, column \\d+`));
    expect(badYaml.stderr, 'the whole message: the line in question, marked').to.contain('\nopenai: [\n');
    const missing = await ptr(['task', 'create', 'broken', '--file', path.join(dir, 'nowhere.yaml')], env);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.match(/^error: cannot read .*nowhere\.yaml: ENOENT/);
    const notUrl = await ptr(['task', 'list'], isolated({ MCP_RUN_ORIGIN: 'api.example', MCP_RUN_SESSION_ID: user.sessionId }));
    expect(notUrl.code).to.equal(2);
    expect(notUrl.stderr).to.match(/^error: MCP_RUN_ORIGIN: expected a URL such as http:\/\/127\.0\.0\.1:8080, got "api\.example"/);
    // A loopback port that was free a moment ago: nothing listens there.
    const closed = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const refused = await ptr(['task', 'list'], isolated({ MCP_RUN_ORIGIN: `http://127.0.0.1:${closed}`, MCP_RUN_SESSION_ID: user.sessionId }));
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.equal(`error connection_failed: cannot reach http://127.0.0.1:${closed}: ECONNREFUSED\n`);
    for (const res of [badYaml, missing, notUrl, refused]) {
      expect(res.stdout).to.equal('');
      expect(res.stderr, 'no stack trace').not.to.match(/\n\s+at /);
    }
  });

  it('reads --file relative to where `npm run ptr` was typed, not the checkout', async () => {
    const where = fs.mkdtempSync(path.join(dir, 'cwd-'));
    fs.writeFileSync(path.join(where, 'here.yaml'), 'runner: openai\nopenai:\n  prompt: "Say {{ text }}"\n  model: m\nsettings:\n  key: sk-cli-0123456789abcdef\n');
    const root = path.join(__dirname, '..', '..');
    const res = await new Promise<Done>((resolve, reject) => {
      const child = spawn('npm', ['--prefix', root, 'run', '-s', 'ptr', '--', '--json', 'task', 'create', 'from-here', '--file', 'here.yaml'], { cwd: where, env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(res.code, res.stderr).to.equal(0);
    expect((await user.api.get('/api/tasks/~/default/from-here')).status).to.equal(200);
  });

  it('publishes a servlet, installs it into the default profile and lists the installs', async () => {
    const file = path.join(dir, 'greeter.wasm');
    fs.writeFileSync(file, (await buildTestServlets()).greeter);
    const published = await ptr(['servlet', 'publish', 'greeter', file, '--description', 'Greets'], env);
    expect(published.code, published.stderr).to.equal(0);
    expect(published.stdout).to.equal(`published servlet ${user.username}/greeter from greeter.wasm (private; tools: greet)\n`);
    const installed = await ptr(['servlet', 'install', 'greeter', '--name', 'hello', '--config', 'greeting=Howdy', '--domain', 'api.example.com'], env);
    expect(installed.code, installed.stderr).to.equal(0);
    expect(installed.stdout).to.equal(`installed ${user.username}/greeter as hello in profile default (tools: hello__greet)\n`);
    const listed = await ptr(['servlet', 'installs', '--json'], env);
    expect(listed.code, listed.stderr).to.equal(0);
    const { installs } = JSON.parse(listed.stdout);
    expect(installs).to.have.length(1);
    expect(installs[0]).to.deep.include({ name: 'hello' });
    expect(installs[0].servlet.slug).to.equal(`${user.username}/greeter`);
    expect(installs[0].settings.config).to.deep.equal({ greeting: 'Howdy' });
    expect(installs[0].settings.permissions.network.domains).to.deep.equal(['api.example.com']);
    // The approval setting, in the human list.
    expect((await ptr(['servlet', 'install', 'greeter', '--name', 'gated', '--approval', 'greet'], env)).code).to.equal(0);
    const table = (await ptr(['servlet', 'installs'], env)).stdout.split('\n');
    expect(table[0]).to.match(/^NAME +SERVLET +HOSTS +APPROVAL +TOOLS$/);
    expect(table.find((l) => l.startsWith('gated '))).to.match(/ greet +greet$/);
    expect(table.find((l) => l.startsWith('hello '))).to.match(/ api\.example\.com +- +greet$/);
    // Search: by name, description or tool, one's own private servlets included.
    const found = await ptr(['servlet', 'search', 'Greets', '--json'], env);
    expect(found.code, found.stderr).to.equal(0);
    expect(JSON.parse(found.stdout).map((s: { slug: string }) => s.slug)).to.include(`${user.username}/greeter`);
    const none = await ptr(['servlet', 'search', 'no-such-servlet-anywhere'], env);
    expect(none.stdout).to.equal('no servlets matching "no-such-servlet-anywhere"\n');
  });

  it("saves, lists, reads and deletes a task's schedules", async () => {
    const file = path.join(dir, 'hourly.yaml');
    fs.writeFileSync(file, 'every: 1h\npaused: true\npayload:\n  text: tides\n');
    const put = await ptr(['schedule', 'put', 'echo', 'hourly', '-p', 'work', '--file', file], env);
    expect(put.code, put.stderr).to.equal(0);
    expect(put.stdout).to.equal('created schedule hourly of task echo: every 1h, paused\n');
    const listed = await ptr(['schedule', 'list', 'echo', '-p', 'work', '--json'], env);
    expect(JSON.parse(listed.stdout).schedules.map((s: { name: string }) => s.name)).to.deep.equal(['hourly']);
    const got = await ptr(['schedule', 'get', 'echo', 'hourly', '-p', 'work'], env);
    expect(got.stdout.split('\n')[0]).to.equal('hourly: every 1h, paused');
    expect(got.stdout).to.contain('  data:     {"text":"tides"}\n');
    const deleted = await ptr(['schedule', 'delete', 'echo', 'hourly', '-p', 'work'], env);
    expect(deleted.stdout).to.equal('deleted schedule hourly of task echo\n');
    const gone = await ptr(['schedule', 'get', 'echo', 'hourly', '-p', 'work'], env);
    expect(gone.code).to.equal(1);
    expect(gone.stderr).to.match(/^error not_found: /);
  });

  it("issues and revokes a task's signed URLs, and lists its webhook deliveries", async () => {
    const issued = await ptr(['signed', 'create', 'echo', '-p', 'work'], env);
    expect(issued.code, issued.stderr).to.equal(0);
    const url = issued.stdout.trim();
    expect(url).to.match(/\/signed\/tasks\//);
    const revoked = await ptr(['signed', 'revoke', 'echo', url, '-p', 'work'], env);
    expect(revoked.code, revoked.stderr).to.equal(0);
    const refused = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(refused.status).to.equal(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).to.equal('signed_url_revoked');
    const second = (await ptr(['signed', 'create', 'echo', '-p', 'work'], env)).stdout.trim();
    expect((await ptr(['signed', 'revoke-all', 'echo', '-p', 'work'], env)).code).to.equal(0);
    expect((await fetch(second, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).to.equal(403);
    const deliveries = await ptr(['webhook', 'deliveries', 'echo', '-p', 'work'], env);
    expect(deliveries.code, deliveries.stderr).to.equal(0);
    expect(deliveries.stdout).to.equal('no webhook deliveries for task echo\n');
  });

  it('says the database cannot be reached when creating a session, naming its host and not its credentials', async function () {
    this.timeout(60_000);
    const res = await ptr(['session', 'create', '--user', 'nobody'], isolated({ MONGO_URL: 'mongodb://admin:hunter2@127.0.0.1:9/x' }));
    expect(res.code).to.equal(1);
    expect(res.stderr).to.match(/^error mongodb_unavailable: cannot reach the database at 127\.0\.0\.1:9: /);
    expect(res.stderr).not.to.include('hunter2');
    expect(res.stderr.split('\n').filter(Boolean), 'one line, no stack').to.have.length(1);
  });

  it('creates a session locally, saves it with the origin in its config file, and uses it from there', async () => {
    const home = isolated({ MONGO_URL: getStack().config.MONGO_URL });
    const name = uniqueUser('cfg');
    const created = await ptr(['session', 'create', '--user', name, '--origin', getStack().apiUrl], home);
    expect(created.code, created.stderr).to.equal(0);
    const file = path.join(dir, 'config', 'ptr', 'config.json');
    const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(saved).to.deep.equal({ session: created.stdout.match(/^Session: (\S+)$/m)![1], origin: getStack().apiUrl });
    expect(fs.statSync(file).mode & 0o777, 'the file holds a credential').to.equal(0o600);
    const me = await ptr(['whoami', '--json'], { ...home, MONGO_URL: '' });
    expect(me.code, me.stderr).to.equal(0);
    expect(JSON.parse(me.stdout).username).to.equal(name);
  });

  describe('with a running dev stack (the file npm run dev writes)', () => {
    let dataDir: string;
    beforeEach(() => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-dev-stack-'));
      // This process stands in for `npm run dev`: alive, serving the test API on the test database.
      writeDevStack(dataDir, {
        pid: process.pid,
        apiUrl: getStack().apiUrl,
        mongoUrl: getStack().config.MONGO_URL,
        temporalAddress: '127.0.0.1:1',
        temporalNamespace: 'default',
        secretsFile: path.join(dataDir, 'secrets.json'),
        startedAt: new Date().toISOString(),
      });
    });
    afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

    it("talks to the dev stack's API when no origin is configured, and to 127.0.0.1:8080 without one", async () => {
      const noFile = path.join(dataDir, 'none.json');
      const withStack = isolated({ DEV_DATA_DIR: dataDir, PTR_CONFIG: noFile, MCP_RUN_SESSION_ID: user.sessionId });
      const shown = await ptr(['config', 'show', '--json'], withStack);
      expect(shown.code, shown.stderr).to.equal(0);
      expect(JSON.parse(shown.stdout)).to.include({ origin: getStack().apiUrl, origin_from: 'dev-stack' });
      const me = await ptr(['whoami', '--json'], withStack);
      expect(me.code, me.stderr).to.equal(0);
      expect(JSON.parse(me.stdout).username).to.equal(user.username);
      const without = await ptr(['config', 'show', '--json'], isolated({ PTR_CONFIG: noFile }));
      expect(JSON.parse(without.stdout)).to.include({ origin: 'http://127.0.0.1:8080', origin_from: 'default' });
    });

    it('finds the only registered dev stack without DEV_DATA_DIR, says so, and refuses to guess between two', async () => {
      const cache = path.join(dataDir, 'cache');
      const register = (dir: string, pid = process.pid) => registerStack({ XDG_CACHE_HOME: cache }, { dataDir: dir, stack: { pid, apiUrl: getStack().apiUrl } });
      const registered = register(dataDir);
      const unset = isolated({ DEV_DATA_DIR: '', XDG_CACHE_HOME: cache, PTR_CONFIG: path.join(dataDir, 'none.json'), MCP_RUN_SESSION_ID: user.sessionId });
      const me = await ptr(['whoami', '--json'], unset);
      expect(me.code, me.stderr).to.equal(0);
      expect(me.stderr).to.equal(`[ptr] using ${getStack().apiUrl}: the dev stack of ${path.join(dataDir, 'dev-stack.json')} (the only dev stack running); no origin configured\n`);
      // A second stack, in another data directory (its process stood for by this one's parent): which one is meant?
      const other = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-dev-stack-'));
      atTeardown(async () => fs.rmSync(other, { recursive: true, force: true }));
      writeDevStack(other, { ...JSON.parse(fs.readFileSync(path.join(dataDir, 'dev-stack.json'), 'utf8')), pid: process.ppid, secretsFile: path.join(other, 'secrets.json') });
      const second = register(other, process.ppid);
      atTeardown(async () => unregisterStack(second));
      const unsure = await ptr(['whoami'], unset);
      expect(unsure.code).to.equal(2);
      expect(unsure.stderr).to.contain('2 dev stacks are running; say which');
      expect(unsure.stderr).to.contain(`export DEV_DATA_DIR=${dataDir} `);
      expect(unsure.stderr).to.contain(`export DEV_DATA_DIR=${other} `);
      expect(unsure.stdout).to.equal('');
      // An entry whose process is gone is dropped.
      unregisterStack(second);
      unregisterStack(registered);
      fs.writeFileSync(registered, JSON.stringify({ dataDir, stack: { pid: 2 ** 22 + 1, apiUrl: getStack().apiUrl } }));
      expect(JSON.parse((await ptr(['config', 'show', '--json'], unset)).stdout)).to.include({ origin_from: 'default' });
      expect(fs.existsSync(registered)).to.equal(false);
    });

    it("creates a session in the dev stack's database and saves its API as the origin", async () => {
      const home = isolated({ DEV_DATA_DIR: dataDir, PTR_CONFIG: path.join(dataDir, 'ptr.json'), MONGO_URL: '' });
      const name = uniqueUser('dev');
      const created = await ptr(['session', 'create', '--user', name], home);
      expect(created.code, created.stderr).to.equal(0);
      expect(created.stderr).to.equal(`[ptr] using MONGO_URL, PUBLIC_URL of the dev stack started by npm run dev (${path.join(dataDir, 'dev-stack.json')}; DEV_DATA_DIR=${dataDir})\n`);
      const saved = JSON.parse(fs.readFileSync(path.join(dataDir, 'ptr.json'), 'utf8'));
      expect(saved).to.deep.equal({ session: created.stdout.match(/^Session: (\S+)$/m)![1], origin: getStack().apiUrl });
      // The saved origin is used even once the dev stack is gone.
      fs.rmSync(path.join(dataDir, 'dev-stack.json'));
      const me = await ptr(['whoami', '--json'], home);
      expect(me.code, me.stderr).to.equal(0);
      expect(JSON.parse(me.stdout).username).to.equal(name);
    });
  });
});

describe('ptr: reading event streams and drawing the status line (in process)', () => {
  it('parses events cut anywhere, with \\n, \\r\\n or \\r line ends, and reports comments apart', () => {
    const text = ': run events\r\n\r\nid: 0\r\nevent: entry\r\ndata: {"msg":"a"}\r\n\r\n: keep-alive\n\nevent: status\rdata: {"status":"running"}\r\revent: end\ndata: {"status":"ready"}\n\n';
    const expected = [
      { event: 'entry', id: '0', data: '{"msg":"a"}' },
      { event: 'status', data: '{"status":"running"}' },
      { event: 'end', data: '{"status":"ready"}' },
    ];
    for (const cut of [1, 2, 3, 7, text.length]) {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      const parser = createSseParser((e) => events.push(e), { onComment: (c) => comments.push(c) });
      for (let at = 0; at < text.length; at += cut) parser.push(text.slice(at, at + cut));
      expect(events, `pieces of ${cut}`).to.deep.equal(expected);
      expect(comments, `pieces of ${cut}`).to.deep.equal(['run events', 'keep-alive']);
    }
  });

  it('parses an event of megabytes arriving in many pieces into one event', () => {
    const data = JSON.stringify({ msg: 'prompt', exchange: { role: 'user', content: 'x'.repeat(4 * 1024 * 1024) } });
    const text = `id: 7\r\nevent: entry\r\ndata: ${data}\r\n\r\n`;
    const events: SseEvent[] = [];
    const parser = createSseParser((e) => events.push(e));
    for (let at = 0; at < text.length; at += 65_535) parser.push(text.slice(at, at + 65_535));
    expect(events).to.have.length(1);
    expect(events[0]).to.include({ event: 'entry', id: '7' });
    expect(events[0]!.data === data, 'the data, whole').to.equal(true);
  });

  it('not on a terminal, prints a status change under the entries the stream brought with it', () => {
    let written = '';
    const stdout = { isTTY: false, write: (s: string) => (written += s) };
    const view = createRunView({ json: false, stdout, stderr: stdout } as unknown as Context, 'r1', { profile: 'work', task: 'haiku', run: 'r1' });
    view.status({ status: 'running', modified_at: '2026-01-01T00:00:00.000Z' });
    view.read();
    view.entry(0, { msg: 'run started' });
    view.entry(1, { msg: 'prompt', exchange: { role: 'user', content: 'hi' } });
    view.read();
    view.entry(2, { msg: 'approval asked', approval: { id: 'ap1', tool: 'gate__greet', arguments: { name: 'Ann' } } });
    view.read();
    view.end({ status: 'ready', modified_at: '2026-01-01T00:00:01.000Z' });
    expect(written.split('\n')).to.deep.equal([
      '  0 run started',
      '  1 prompt',
      '    user: hi',
      '-- r1: running',
      '  2 approval asked',
      '    gate__greet {"name":"Ann"}',
      '    decide: ptr run approve haiku r1 ap1 -p work   (or: ptr run approve haiku r1 ap1 -p work --deny --reason TEXT)',
      '-- r1: ready (3 entries)',
      '',
    ]);
  });

  it('on a terminal, keeps one status line under the entries, redrawn in place, and ends on a plain line', () => {
    let written = '';
    const stdout = { isTTY: true, write: (s: string) => (written += s) };
    const ctx = { json: false, stdout, stderr: stdout } as unknown as Context;
    const view = createRunView(ctx, 'r1');
    view.status({ status: 'running', modified_at: '2026-01-01T00:00:00.000Z' });
    view.entry(0, { msg: 'prompt', exchange: { role: 'user', content: 'hi' } });
    view.end({ status: 'ready', modified_at: '2026-01-01T00:00:01.000Z' });
    // What the terminal shows: each \r\x1b[2K erases the line drawn since the last newline.
    const screen = written.split('\n').map((line) => line.split('\r\x1b[2K').at(-1));
    expect(screen).to.deep.equal(['  0 prompt', '    user: hi', '-- r1: ready (1 entry)', '']);
    expect(written).to.match(/-- r1: running · 0 entries · [\d.]+ s\r\x1b\[2K  0 prompt/);
  });
});
