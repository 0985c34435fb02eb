/**
 * `npm run stack:cluster`: the topology a team deploys (docker-compose.yml, docs/deploy.md), on this machine without
 * Docker: PostgreSQL; the real Temporal server on it (persistence and SQL visibility, our search attributes, the
 * dynamic config of deploy/); FerretDB on it unless MONGO_URL names a MongoDB; two APIs and two workers sharing one
 * set of secrets. Builds what is missing first (scripts/install-tools.sh --cluster). Prints where everything is;
 * Ctrl-C stops everything, PostgreSQL last; a second start reuses the data. The Temporal Web UI's server (ui-server,
 * the temporalio/ui image's) against the Temporal server, showing stored contents through the first API's codec
 * endpoint.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ConfigError, loadClusterConfig, loadConfig } from '../config';
import { connectDb } from '../store/connect';
import { createSession } from '../store/sessions';
import { assertPortFree, portOpen, ProcessGroup, waitFor } from './dev-processes';
import { removeDevStack, writeDevStack } from './dev-stack-file';
import { initPostgres, logFile, runningPid, startPostgres, stopPostgres } from './cluster-postgres';
import { createDatabase, registerNamespace, serverArgs, serverConfigFile, setUpSchemas, uiArgs, writeServerConfig, writeUiConfig, type TemporalServerTools } from './cluster-temporal';
import {
  apiProcess, clusterPaths, clusterPorts, FERRETDB_DB, ferretDbProcess, loadOrCreateClusterSecrets, POSTGRES_USER, workerProcess, type ClusterProcess,
} from './cluster-topology';
import { alive, dropUnreachableStacks, registerStack, unregisterStack } from './stack-registry';

const root = path.resolve(__dirname, '../..');
const log = (msg: string) => process.stdout.write(`[cluster] ${msg}\n`);

type Tools = TemporalServerTools & { POSTGRES_BIN_DIR: string; FERRETDB_BIN?: string; TEMPORAL_UI_SERVER_BIN: string };

async function installTools(): Promise<Tools> {
  log('checking tools (the first build of the Temporal server takes several minutes)...');
  const { stdout } = await promisify(execFile)('bash', [path.join(root, 'scripts/install-tools.sh'), '--cluster'], { env: process.env, maxBuffer: 1 << 20 }).catch(
    (err: { stderr?: string }) => {
      throw new Error(`tool installation failed:\n${err.stderr ?? err}`);
    },
  );
  return Object.fromEntries(stdout.trim().split('\n').filter((l) => l.includes('=')).map((l) => l.split('=', 2) as [string, string])) as unknown as Tools;
}

/**
 * One cluster command per data directory: `<dataDir>/cluster.pid` names the one running. A second start would stop
 * the first's PostgreSQL (taken for a leftover) and fight over its ports.
 */
const lockFile = (dataDir: string) => path.join(dataDir, 'cluster.pid');
function holdLock(dataDir: string) {
  const file = lockFile(dataDir);
  const other = Number(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : 0);
  if (other && other !== process.pid && alive(other)) throw new Error(`a cluster already runs from ${dataDir} (pid ${other}): stop it (Ctrl-C), or set CLUSTER_DATA_DIR and CLUSTER_BASE_PORT for another`);
  fs.writeFileSync(file, String(process.pid), { mode: 0o600 });
}
function releaseLock(dataDir: string) {
  const file = lockFile(dataDir);
  if (fs.existsSync(file) && Number(fs.readFileSync(file, 'utf8')) === process.pid) fs.rmSync(file);
}

async function main() {
  const cluster = loadClusterConfig();
  const paths = clusterPaths(cluster);
  const ports = clusterPorts(cluster.CLUSTER_BASE_PORT);
  const cacheEnv = { XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, HOME: process.env.HOME };
  fs.mkdirSync(paths.logDir, { recursive: true, mode: 0o700 });
  const group = new ProcessGroup();
  let postgres: Parameters<typeof stopPostgres>[0] | undefined;
  let shuttingDown = false;
  let registered: string | undefined;
  const shutdown = async (code: number) => {
    if (shuttingDown) return;
    shuttingDown = true;
    removeDevStack(paths.dataDir);
    releaseLock(paths.dataDir);
    if (registered) unregisterStack(registered);
    log('stopping...');
    await group.stopAll();
    if (postgres) {
      log('stopping PostgreSQL...');
      await stopPostgres(postgres).catch((err: Error) => console.error(`[cluster] ${err.message}`));
    }
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  group.onUnexpectedExit = (name, code) => {
    console.error(`[cluster] ${name} exited unexpectedly (code ${code}); stopping everything. Its log: ${path.join(paths.logDir, `${name}.log`)}`);
    void shutdown(1);
  };
  const start = (p: ClusterProcess) => group.start(p.name, p.command, p.args, { env: { ...process.env, ...p.env }, logFile: path.join(paths.logDir, `${p.name}.log`) });

  try {
    holdLock(paths.dataDir);
    const tools = await installTools();
    const secrets = loadOrCreateClusterSecrets(paths.secretsFile, log);
    const pg = { binDir: tools.POSTGRES_BIN_DIR, dataDir: paths.pgData, port: ports.postgres, user: POSTGRES_USER, password: secrets.POSTGRES_PASSWORD };
    const leftover = runningPid(paths.pgData);
    if (leftover) {
      log(`PostgreSQL of an earlier start still runs on ${paths.pgData} (pid ${leftover}): stopping it first`);
      await stopPostgres(pg);
    }
    const needed: Array<[number, string]> = [
      [ports.postgres, 'PostgreSQL'],
      ...(cluster.MONGO_URL ? [] : [[ports.mongo, 'FerretDB'] as [number, string]]),
      [ports.temporal, 'Temporal frontend (gRPC)'], [ports.temporalHttp, 'Temporal frontend (HTTP)'],
      [ports.temporalFrontendMembership, 'Temporal membership'], [ports.temporalHistory, 'Temporal history'],
      [ports.temporalHistoryMembership, 'Temporal membership'], [ports.temporalMatching, 'Temporal matching'],
      [ports.temporalMatchingMembership, 'Temporal membership'], [ports.temporalWorker, 'Temporal worker service'],
      [ports.temporalWorkerMembership, 'Temporal membership'], [ports.temporalMetrics, 'Temporal metrics'],
      [ports.temporalUi, 'Temporal Web UI'],
      ...[ports.api1, ports.api2].slice(0, cluster.CLUSTER_APIS).map((p, i) => [p, `API ${i + 1}`] as [number, string]),
      ...[ports.workerHttp1, ports.workerHttp2].slice(0, cluster.CLUSTER_WORKERS).map((p, i) => [p, `worker ${i + 1} metrics`] as [number, string]),
    ];
    for (const [port, what] of needed) await assertPortFree(port, what, `set CLUSTER_BASE_PORT to another block of 16 ports (now ${cluster.CLUSTER_BASE_PORT})`);

    if (await initPostgres(pg)) log(`created a PostgreSQL cluster in ${paths.pgData}`);
    log(`starting PostgreSQL on 127.0.0.1:${ports.postgres} (data: ${paths.pgData})`);
    await startPostgres(pg);
    postgres = pg;
    const sql = { port: ports.postgres, user: POSTGRES_USER, password: secrets.POSTGRES_PASSWORD };
    await setUpSchemas(tools, sql, log);

    writeServerConfig(paths.temporalConfig, { ports, sql });
    log(`starting the Temporal server on 127.0.0.1:${ports.temporal} (config: ${serverConfigFile(paths.temporalConfig)})`);
    start({ name: 'temporal-server', command: tools.TEMPORAL_SERVER_BIN, args: serverArgs(paths.temporalConfig), env: {} });
    const temporalAddress = `127.0.0.1:${ports.temporal}`;
    const serviceEnvBase = loadConfig({ ...process.env, ...secrets, MONGO_URL: 'mongodb://placeholder/x', TEMPORAL_ADDRESS: temporalAddress });
    await registerNamespace(temporalAddress, serviceEnvBase.TEMPORAL_NAMESPACE);

    let mongoUrl = cluster.MONGO_URL;
    if (!mongoUrl) {
      await createDatabase(tools, sql, FERRETDB_DB);
      log(`starting FerretDB (PostgreSQL backend) on 127.0.0.1:${ports.mongo}`);
      start(ferretDbProcess(tools.FERRETDB_BIN!, ports, secrets.POSTGRES_PASSWORD));
      mongoUrl = `mongodb://127.0.0.1:${ports.mongo}/prompt-task-runner`;
      await waitFor(() => portOpen(ports.mongo), 'FerretDB', 30_000);
    }

    const logFormat = cluster.LOG_FORMAT ?? 'json';
    const serviceEnv = { MASTER_KEY: secrets.MASTER_KEY, SIGNING_SECRET: secrets.SIGNING_SECRET, MONGO_URL: mongoUrl, TEMPORAL_ADDRESS: temporalAddress, LOG_FORMAT: logFormat };
    const workers = [1, 2].slice(0, cluster.CLUSTER_WORKERS).map((n) => workerProcess(n, ports, serviceEnv));
    const apis = [1, 2].slice(0, cluster.CLUSTER_APIS).map((n) => apiProcess(n, ports, serviceEnv));
    log(`starting ${workers.length} workers and ${apis.length} APIs`);
    for (const p of [...workers, ...apis]) start(p);
    const apiUrls = apis.map((a) => a.env.PUBLIC_URL!);
    for (const url of apiUrls) await waitFor(async () => (await fetch(`${url}/healthz`)).ok, `the API at ${url}`, 90_000);

    const config = loadConfig({ ...process.env, ...serviceEnv, ...apis[0]!.env });
    // The Web UI shows stored prompts and answers through the first API's codec endpoint; with CODEC_TOKEN set, the
    // API wants it, and the UI can only send it in the path.
    const codec = `${apiUrls[0]}/codec`;
    writeUiConfig(paths.temporalConfig, { ports, namespace: config.TEMPORAL_NAMESPACE, codecEndpoint: config.CODEC_TOKEN ? `${codec}/${encodeURIComponent(config.CODEC_TOKEN)}` : codec });
    log(`starting the Temporal Web UI on 127.0.0.1:${ports.temporalUi}`);
    start({ name: 'temporal-ui', command: tools.TEMPORAL_UI_SERVER_BIN, args: uiArgs(paths.temporalConfig), env: {} });
    await waitFor(() => portOpen(ports.temporalUi), 'the Temporal Web UI', 30_000);
    const db = await connectDb(mongoUrl);
    const session = await createSession(db.models, cluster.CLUSTER_USER, config.SESSION_TTL_HOURS);
    await db.close();
    if (shuttingDown) return;
    writeDevStack(paths.dataDir, {
      pid: process.pid,
      apiUrl: apiUrls[0]!,
      mongoUrl,
      temporalAddress,
      temporalNamespace: config.TEMPORAL_NAMESPACE,
      secretsFile: paths.secretsFile,
      startedAt: new Date().toISOString(),
    });
    await dropUnreachableStacks(cacheEnv);
    registered = registerStack(cacheEnv, { dataDir: paths.dataDir, stack: { pid: process.pid, apiUrl: apiUrls[0]! } });
    const metrics = [ports.workerHttp1, ports.workerHttp2].slice(0, workers.length).map((p) => `http://127.0.0.1:${p}/metrics`);
    process.stdout.write(`
The cluster topology is up (docs/deploy.md).
  APIs:             ${apiUrls.join('   ')}   (every route: ${apiUrls[0]}/docs; one PUBLIC_URL each: behind a load balancer, set it to the balancer's)
  Workers:          ${workers.length}, metrics at ${metrics.join('   ')}
  Temporal gRPC:    ${temporalAddress}   (temporal-server ${tools.TEMPORAL_SERVER_BIN}; namespace ${config.TEMPORAL_NAMESPACE}; metrics http://127.0.0.1:${ports.temporalMetrics}/metrics)
  Temporal config:  ${serverConfigFile(paths.temporalConfig)}   (dynamic config: deploy/temporal-dynamic-config.yaml)
  Temporal Web UI:  http://127.0.0.1:${ports.temporalUi}   (ui-server ${tools.TEMPORAL_UI_SERVER_BIN}; stored contents through ${config.CODEC_TOKEN ? `${codec}/<CODEC_TOKEN>` : codec})
  PostgreSQL:       127.0.0.1:${ports.postgres}   user ${POSTGRES_USER}, databases temporal, temporal_visibility${cluster.MONGO_URL ? '' : `, ${FERRETDB_DB}`}; password in ${paths.secretsFile}; data ${paths.pgData}; log ${logFile(pg)}
  MongoDB:          ${mongoUrl.replace(/\/\/[^@]*@/, '//***@')}${cluster.MONGO_URL ? '' : '   (FerretDB on PostgreSQL)'}
  Logs:             ${paths.logDir}
  Secrets:          ${paths.secretsFile}   (MASTER_KEY, SIGNING_SECRET shared by every API and worker)

A session for user "${cluster.CLUSTER_USER}":
Session: ${session.id}

Try it:
  curl -s -H 'Cookie: sessionId=${session.id}' ${apiUrls[0]}/api/users/~
The helpers find this stack with: export DEV_DATA_DIR=${paths.dataDir}
Ctrl-C stops everything.
`);
  } catch (err) {
    const message = err instanceof ConfigError ? err.message : (err as Error).message;
    console.error(`[cluster] ${message}`);
    await shutdown(1);
  }
}

void main();
