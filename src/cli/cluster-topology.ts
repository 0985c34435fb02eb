import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ClusterConfig } from '../config';
import { ferretDbPostgresArgs } from './dev-processes';

/**
 * The production topology on one machine (`npm run stack:cluster`, test/cluster/): PostgreSQL, the real Temporal
 * server on it, FerretDB on it (unless MONGO_URL), and N APIs and N workers sharing one set of secrets. This module
 * says where everything is and how each process is started; cluster.ts and the cluster tests start them.
 */

/** 17 consecutive loopback ports from CLUSTER_BASE_PORT, in this order (docs/deploy.md). */
const PORT_NAMES = [
  'api1', 'api2', 'workerHttp1', 'workerHttp2', 'postgres', 'mongo',
  'temporal', 'temporalHttp', 'temporalFrontendMembership', 'temporalHistory', 'temporalHistoryMembership',
  'temporalMatching', 'temporalMatchingMembership', 'temporalWorker', 'temporalWorkerMembership', 'temporalMetrics',
  'temporalUi',
] as const;
export type ClusterPorts = Record<(typeof PORT_NAMES)[number], number>;

export const clusterPorts = (base: number): ClusterPorts => Object.fromEntries(PORT_NAMES.map((name, i) => [name, base + i])) as ClusterPorts;

export interface ClusterPaths {
  /** Secrets, the server config and the logs. */
  dataDir: string;
  /** PostgreSQL's own data directory. */
  pgData: string;
  secretsFile: string;
  /** The Temporal server's config directory (cluster-temporal.ts writes the file). */
  temporalConfig: string;
  logDir: string;
}

export function clusterPaths(config: Pick<ClusterConfig, 'CLUSTER_DATA_DIR' | 'CLUSTER_PG_DATA' | 'XDG_DATA_HOME'>): ClusterPaths {
  const dataDir = path.resolve(config.CLUSTER_DATA_DIR ?? path.join(config.XDG_DATA_HOME ?? path.join(os.homedir(), '.local/share'), 'prompt-task-runner/cluster'));
  // As root, PostgreSQL runs as `postgres`, who cannot enter root's home (mode 0700): its data goes where that user's
  // own is, one directory per cluster data directory.
  const asRoot = process.getuid?.() === 0;
  const rootPgData = () => `/var/lib/postgresql/prompt-task-runner/${config.CLUSTER_DATA_DIR ? `cluster-${crypto.createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}` : 'cluster'}`;
  const pgData = path.resolve(config.CLUSTER_PG_DATA ?? (asRoot ? rootPgData() : path.join(dataDir, 'postgresql')));
  return { dataDir, pgData, secretsFile: path.join(dataDir, 'secrets.json'), temporalConfig: path.join(dataDir, 'temporal'), logDir: path.join(dataDir, 'logs') };
}

/** The secrets every API and worker of the cluster shares, and the database password: generated once, kept 0600. */
export interface ClusterSecrets {
  MASTER_KEY: string;
  SIGNING_SECRET: string;
  POSTGRES_PASSWORD: string;
}

export function loadOrCreateClusterSecrets(file: string, say: (msg: string) => void): ClusterSecrets {
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as ClusterSecrets;
  const secrets: ClusterSecrets = {
    MASTER_KEY: `cluster-${new Date().toISOString().slice(0, 10)}:${crypto.randomBytes(32).toString('base64')}`,
    SIGNING_SECRET: crypto.randomBytes(32).toString('hex'),
    POSTGRES_PASSWORD: crypto.randomBytes(24).toString('hex'),
  };
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  say(`generated a master key, a signing secret and a database password in ${file} (mode 0600)`);
  return secrets;
}

/** The PostgreSQL role Temporal and FerretDB log in as (the superuser initdb creates). */
export const POSTGRES_USER = 'ptr';
export const FERRETDB_DB = 'ferretdb';

export const postgresUrl = (port: number, password: string, db: string) => `postgres://${POSTGRES_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;

/** A process of the topology: how to start it (always the same way, so a restart finds its port and data). */
export interface ClusterProcess {
  name: string;
  command: string;
  args: string[];
  /** Added to the parent's environment. */
  env: Record<string, string>;
}

/** FerretDB on the cluster's PostgreSQL: the URL (with the password) travels in its environment, not its arguments. */
export const ferretDbProcess = (bin: string, ports: ClusterPorts, password: string, logLevel: 'warn' | 'error' = 'error'): ClusterProcess => ({
  name: 'ferretdb',
  command: bin,
  args: ferretDbPostgresArgs({ port: ports.mongo, logLevel }),
  env: { FERRETDB_POSTGRESQL_URL: postgresUrl(ports.postgres, password, FERRETDB_DB) },
});

const root = path.resolve(__dirname, '../..');
/** `node --import tsx <file>`: one process per service, so a signal reaches the service itself. */
const nodeProcess = (name: string, file: string, env: Record<string, string>): ClusterProcess => ({
  name,
  command: process.execPath,
  args: ['--disable-warning=ExperimentalWarning', '--import', 'tsx', path.join(root, file)],
  env,
});

/** API number `n` (1-based) with the shared service environment; its own port and address. */
export const apiProcess = (n: number, ports: ClusterPorts, serviceEnv: Record<string, string>): ClusterProcess => {
  const port = n === 1 ? ports.api1 : ports.api2;
  return nodeProcess(`api${n}`, 'src/server.ts', { ...serviceEnv, PORT: String(port), PUBLIC_URL: serviceEnv.PUBLIC_URL ?? `http://127.0.0.1:${port}` });
};

/** Worker number `n` (1-based): its metrics, /healthz and /readyz on a port of its own. */
export const workerProcess = (n: number, ports: ClusterPorts, serviceEnv: Record<string, string>): ClusterProcess =>
  nodeProcess(`worker${n}`, 'src/worker.ts', { ...serviceEnv, WORKER_HTTP_PORT: String(n === 1 ? ports.workerHttp1 : ports.workerHttp2) });
