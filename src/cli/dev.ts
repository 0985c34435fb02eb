/**
 * `npm run dev`: the whole service on one machine. Builds the tools when missing, starts the Temporal dev server
 * (Web UI on) and FerretDB with their data in .data/ unless TEMPORAL_ADDRESS / MONGO_URL name running servers,
 * then the API and a worker; prints where everything is and a ready session. Ctrl-C stops every child. While the
 * stack runs, <DEV_DATA_DIR>/dev-stack.json tells the command-line helpers where it is (dev-stack-file.ts), and an
 * entry under $XDG_CACHE_HOME/prompt-task-runner/stacks/ lets them find it without DEV_DATA_DIR (stack-registry.ts).
 * Its children log LOG_FORMAT=pretty when its own output is a terminal (theirs never is), JSON otherwise.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ConfigError, loadConfig, loadConfigSubset, loadDevConfig, type DevConfig } from '../config';
import { connectDb } from '../store/connect';
import { createSession } from '../store/sessions';
import { createSignInLink, signInUrl } from '../store/sign-in-links';
import { searchAttributeFlags } from '../temporal/search-attributes';
import { devServerDynamicConfigFlags, devServerSqliteFlags } from '../temporal/dev-server-config';
import { assertPortFree, ferretDbArgs, portOpen, ProcessGroup, waitFor } from './dev-processes';
import { removeDevStack, resolveDataDir, writeDevStack } from './dev-stack-file';
import { dropUnreachableStacks, registerStack, stacksDir, unregisterStack } from './stack-registry';
import { tracingSettings } from '../telemetry/settings';

const root = path.resolve(__dirname, '../..');
const log = (msg: string) => process.stdout.write(`[dev] ${msg}\n`);

/** Master key and signing secret: generated on first start, kept in .data/secrets.json (0600) for later starts. */
function loadOrCreateSecrets(file: string): { MASTER_KEY: string; SIGNING_SECRET: string } {
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8'));
  const secrets = {
    MASTER_KEY: `dev-${new Date().toISOString().slice(0, 10)}:${crypto.randomBytes(32).toString('base64')}`,
    SIGNING_SECRET: crypto.randomBytes(32).toString('hex'),
  };
  fs.writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  log(`generated a master key and a signing secret in ${file} (mode 0600)`);
  return secrets;
}

async function installTools(dev: DevConfig): Promise<{ TEMPORAL_CLI?: string; FERRETDB_BIN?: string }> {
  if (dev.TEMPORAL_ADDRESS && dev.MONGO_URL) return {};
  log('checking tools (the first build takes a few minutes)...');
  const { stdout } = await promisify(execFile)('bash', [path.join(root, 'scripts/install-tools.sh')], {
    env: process.env,
    maxBuffer: 1 << 20,
  }).catch((err: { stderr?: string }) => {
    throw new Error(`tool installation failed:\n${err.stderr ?? err}`);
  });
  return Object.fromEntries(stdout.trim().split('\n').filter(Boolean).map((l) => l.split('=', 2) as [string, string]));
}

async function main() {
  const dev = loadDevConfig();
  // Where the stacks are registered (stack-registry.ts): read as the helpers read it.
  const cacheEnv = { XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, HOME: process.env.HOME };
  const dataDir = resolveDataDir(dev.DEV_DATA_DIR);
  const secretsFile = path.join(dataDir, 'secrets.json');
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const group = new ProcessGroup();
  let shuttingDown = false;
  let registered: string | undefined;
  const shutdown = async (code: number) => {
    if (shuttingDown) return;
    shuttingDown = true;
    removeDevStack(dataDir);
    if (registered) unregisterStack(registered);
    log('stopping...');
    await group.stopAll();
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  group.onUnexpectedExit = (name, code) => {
    console.error(`[dev] ${name} exited unexpectedly (code ${code}); stopping everything.`);
    void shutdown(1);
  };

  try {
    const tools = await installTools(dev);
    const secrets = loadOrCreateSecrets(secretsFile);
    // The Web UI shows stored prompts and answers through the API's codec endpoint; with CODEC_TOKEN set, the API
    // wants it, and the UI can only send it in the path.
    const { CODEC_TOKEN, TEMPORAL_UI_URL } = loadConfigSubset(['CODEC_TOKEN', 'TEMPORAL_UI_URL']);
    const codecEndpoint = `http://127.0.0.1:${dev.PORT}/codec${CODEC_TOKEN ? `/${encodeURIComponent(CODEC_TOKEN)}` : ''}`;
    const codecShown = CODEC_TOKEN ? `http://127.0.0.1:${dev.PORT}/codec/<CODEC_TOKEN>` : codecEndpoint;
    let temporalAddress = dev.TEMPORAL_ADDRESS;
    let uiUrl = TEMPORAL_UI_URL ?? 'your Temporal cluster\'s Web UI';
    let codecNote = "set it as your Web UI's codec endpoint to see stored contents";
    if (!temporalAddress) {
      await assertPortFree(dev.DEV_TEMPORAL_PORT, 'Temporal', 'set DEV_TEMPORAL_PORT, or TEMPORAL_ADDRESS to use a running server');
      await assertPortFree(dev.DEV_TEMPORAL_UI_PORT, 'Temporal Web UI', 'set DEV_TEMPORAL_UI_PORT');
      log(`starting the Temporal dev server on 127.0.0.1:${dev.DEV_TEMPORAL_PORT} (data: ${dev.DEV_DATA_DIR}/temporal.db)`);
      group.start(
        'temporal',
        tools.TEMPORAL_CLI!,
        [
          'server', 'start-dev', '--ip', '127.0.0.1', '--port', String(dev.DEV_TEMPORAL_PORT),
          '--ui-port', String(dev.DEV_TEMPORAL_UI_PORT), '--ui-codec-endpoint', codecEndpoint,
          '--db-filename', path.join(dataDir, 'temporal.db'), ...devServerSqliteFlags(),
          '--log-level', 'error', ...devServerDynamicConfigFlags(),
          ...searchAttributeFlags(),
        ],
        { quiet: true },
      );
      temporalAddress = `127.0.0.1:${dev.DEV_TEMPORAL_PORT}`;
      uiUrl = `http://127.0.0.1:${dev.DEV_TEMPORAL_UI_PORT}`;
      codecNote = 'the Web UI shows stored prompts and answers through it';
      await waitFor(() => portOpen(dev.DEV_TEMPORAL_PORT), 'the Temporal dev server', 60_000);
    }
    let mongoUrl = dev.MONGO_URL;
    if (!mongoUrl) {
      await assertPortFree(dev.DEV_MONGO_PORT, 'FerretDB', 'set DEV_MONGO_PORT, or MONGO_URL to use a running MongoDB');
      const dbDir = path.join(dataDir, 'ferretdb');
      fs.mkdirSync(dbDir, { recursive: true });
      log(`starting FerretDB (SQLite) on 127.0.0.1:${dev.DEV_MONGO_PORT} (data: ${dev.DEV_DATA_DIR}/ferretdb)`);
      group.start(
        'ferretdb',
        tools.FERRETDB_BIN!,
        ferretDbArgs({ dir: dbDir, port: dev.DEV_MONGO_PORT }),
        { quiet: true },
      );
      mongoUrl = `mongodb://127.0.0.1:${dev.DEV_MONGO_PORT}/prompt-task-runner`;
      await waitFor(() => portOpen(dev.DEV_MONGO_PORT), 'FerretDB', 30_000);
    }

    // The children's output is a pipe, never a terminal: this command decides for them.
    const logFormat = dev.LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'json');
    // The console links each run to its workflow in the Web UI: this one's, unless TEMPORAL_UI_URL names another.
    const webUi = TEMPORAL_UI_URL ?? (dev.TEMPORAL_ADDRESS ? undefined : uiUrl);
    const env = { ...process.env, ...secrets, MONGO_URL: mongoUrl, TEMPORAL_ADDRESS: temporalAddress, PORT: String(dev.PORT), LOG_FORMAT: logFormat, ...(webUi ? { TEMPORAL_UI_URL: webUi } : {}) };
    const config = loadConfig(env);
    // The worker's /metrics (its `ptr_` metrics), /healthz and /readyz: next to the API unless set.
    const workerHttpPort = config.WORKER_HTTP_PORT ?? dev.PORT + 1;
    await assertPortFree(config.PORT, 'API', 'set PORT');
    await assertPortFree(workerHttpPort, "the worker's metrics", 'set WORKER_HTTP_PORT');
    // `node --import tsx`: one process per child, so stopping it stops it (the tsx wrapper would fork another).
    // Extism's WASI is experimental on Node: its warning says nothing to a user, twice.
    const ts = (file: string) => ['--disable-warning=ExperimentalWarning', '--import', 'tsx', path.join(root, file)];
    log('starting a worker and the API');
    group.start('worker', process.execPath, ts('src/worker.ts'), { env: { ...env, WORKER_HTTP_PORT: String(workerHttpPort) } });
    group.start('api', process.execPath, ts('src/server.ts'), { env });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${config.PORT}/healthz`)).ok, 'the API', 60_000);

    const db = await connectDb(mongoUrl);
    const session = await createSession(db.models, dev.DEV_USER, config.SESSION_TTL_HOURS);
    const link = await createSignInLink(db.models, dev.DEV_USER);
    await db.close();

    const api = config.PUBLIC_URL;
    // not once stopping has begun (Ctrl-C during start-up): the file would outlive the stack
    if (shuttingDown) return;
    writeDevStack(dataDir, {
      pid: process.pid,
      apiUrl: api,
      mongoUrl,
      temporalAddress,
      temporalNamespace: config.TEMPORAL_NAMESPACE,
      secretsFile,
      startedAt: new Date().toISOString(),
    });
    await dropUnreachableStacks(cacheEnv);
    registered = registerStack(cacheEnv, { dataDir, stack: { pid: process.pid, apiUrl: api } });
    const metricsHost = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
    const metricsUrl = `http://${metricsHost.includes(':') ? `[${metricsHost}]` : metricsHost}:${workerHttpPort}/metrics`;
    const traced = tracingSettings(config, 'api');
    const traces = traced ? `OTLP ${traced.protocol} to ${traced.url}   (the API and the worker; each run's trace_id on its run object)` : 'off   (set OTEL_EXPORTER_OTLP_ENDPOINT to send them to a collector: docs/observability.md)';
    process.stdout.write(`
Prompt task runner is up.
  API:              ${api}   (every route: ${api}/docs)
  Console:          ${api}/console
  Sign in:          ${signInUrl(api, link.token)}   (as "${dev.DEV_USER}"; once, within 10 minutes; another: npm run -s ptr -- console)
  Temporal Web UI:  ${uiUrl}   (namespace ${config.TEMPORAL_NAMESPACE}; each run is a workflow "run/<user>/<profile>/<task>/<run>")
  Codec endpoint:   ${codecShown}   (${codecNote})
  Temporal gRPC:    ${temporalAddress}
  MongoDB:          ${mongoUrl.replace(/\/\/[^@]*@/, '//***@')}
  Worker metrics:   ${metricsUrl}   (the worker's ptr_ metrics; /healthz and /readyz beside them)
  Traces:           ${traces}
  Data:             ${dataDir}

A session for local user "${dev.DEV_USER}" (more: npm run session -- create --user NAME):
Session: ${session.id}

Try it:
  curl -s -H 'Cookie: sessionId=${session.id}' ${api}/api/users/~

In another terminal, the helpers (npm run session / signed-urls / rotate-key, ptr) find this stack by themselves
while it is the only one running (registered in ${stacksDir(cacheEnv)}). To name it, paste one of:
  export DEV_DATA_DIR=${dataDir}
  npm run -s ptr -- login --session ${session.id} --origin ${api}
Ctrl-C stops everything.
`);
  } catch (err) {
    const message = err instanceof ConfigError ? err.message : (err as Error).message;
    console.error(`[dev] ${message}`);
    await shutdown(1);
  }
}

void main();
