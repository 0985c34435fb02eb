import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { msToTs } from '@temporalio/common/lib/time';
import YAML from 'yaml';
import { SEARCH_ATTRIBUTES } from '../temporal/search-attributes';
import { waitFor } from './dev-processes';
import type { ClusterPorts } from './cluster-topology';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');

/** The dynamic config of the real server: the same file docker-compose.yml mounts (fairness, eager activities). */
export const DYNAMIC_CONFIG_FILE = path.join(root, 'deploy/temporal-dynamic-config.yaml');

/** What scripts/install-tools.sh --cluster prints for the Temporal server. */
export interface TemporalServerTools {
  TEMPORAL_SERVER_BIN: string;
  TEMPORAL_SQL_TOOL: string;
  TEMPORAL_SCHEMA_DIR: string;
}

export interface SqlLogin {
  port: number;
  user: string;
  password: string;
}

export const TEMPORAL_DB = 'temporal';
export const VISIBILITY_DB = 'temporal_visibility';
/** How long a closed workflow's history is kept: as temporalio/auto-setup registers `default` (docker-compose.yml). */
const RETENTION = '1 day';

/**
 * The server's config (the module's config/development-postgres12.yaml, on our ports): persistence and SQL
 * visibility on PostgreSQL, every service in one process on loopback, and the dynamic config file. Mode 0600: it
 * holds the database password.
 */
export function writeServerConfig(dir: string, options: { ports: ClusterPorts; sql: SqlLogin; logLevel?: string }): void {
  const { ports, sql } = options;
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `127.0.0.1:${sql.port}`,
      connectProtocol: 'tcp',
      user: sql.user,
      password: sql.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, extra: object = {}) => ({ rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...extra } });
  const config = {
    log: { stdout: true, level: options.logLevel ?? 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      // Fixed when the database is first set up; the module's development configs use 4.
      numHistoryShards: 4,
      datastores: { 'postgres-default': store(TEMPORAL_DB, 20), 'postgres-visibility': store(VISIBILITY_DB, 10) },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      metrics: { prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: `127.0.0.1:${ports.temporalMetrics}` } },
    },
    services: {
      frontend: service(ports.temporal, ports.temporalFrontendMembership, { httpPort: ports.temporalHttp }),
      history: service(ports.temporalHistory, ports.temporalHistoryMembership),
      matching: service(ports.temporalMatching, ports.temporalMatchingMembership),
      worker: service(ports.temporalWorker, ports.temporalWorkerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${ports.temporal}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: DYNAMIC_CONFIG_FILE, pollInterval: '10s' },
  };
  const header = '# Written by `npm run stack:cluster` (src/cli/cluster-temporal.ts) at every start: edit that, not this.\n';
  const file = serverConfigFile(dir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, header + YAML.stringify(config), { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

/**
 * The server reads `<dir>/<env>.yaml` (it has no flag for a file): the config is written as `<dir>/cluster.yaml`.
 * Every service (frontend, history, matching, worker) in one process.
 */
export const SERVER_CONFIG_ENV = 'cluster';
export const serverConfigFile = (dir: string) => path.join(dir, `${SERVER_CONFIG_ENV}.yaml`);
export const serverArgs = (dir: string) => ['--root', '/', '--config', path.resolve(dir), '--env', SERVER_CONFIG_ENV, '--allow-no-auth', 'start'];

/**
 * The Temporal Web UI's server (temporalio/ui-server, the image docker-compose.yml runs) against this server: on
 * loopback, the namespace `default` first, stored contents shown through `codecEndpoint` (an API's `/codec`, its
 * CODEC_TOKEN in the path when set), and no call out for a newer version. Written as `<dir>/ui.yaml` (the UI server,
 * too, reads `<dir>/<env>.yaml`).
 */
export function writeUiConfig(dir: string, options: { ports: ClusterPorts; namespace: string; codecEndpoint: string }): void {
  const config = {
    temporalGrpcAddress: `127.0.0.1:${options.ports.temporal}`,
    host: '127.0.0.1',
    port: options.ports.temporalUi,
    enableUi: true,
    defaultNamespace: options.namespace,
    notifyOnNewVersion: false,
    refreshInterval: '1m',
    cors: { cookieInsecure: true, allowOrigins: [`http://127.0.0.1:${options.ports.temporalUi}`] },
    codec: { endpoint: options.codecEndpoint },
    auth: { enabled: false },
  };
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(dir, 'ui.yaml'), YAML.stringify(config), { mode: 0o600 });
}
export const uiArgs = (dir: string) => ['--root', '/', '--config', path.resolve(dir), '--env', 'ui', 'start'];

/** temporal-sql-tool on database `db`; the password reaches it in its environment, not its arguments. */
async function sqlTool(tools: TemporalServerTools, sql: SqlLogin, db: string, args: string[]) {
  const argv = ['--plugin', 'postgres12', '--ep', '127.0.0.1', '--port', String(sql.port), '--user', sql.user, '--db', db, ...args];
  try {
    return await run(tools.TEMPORAL_SQL_TOOL, argv, { env: { SQL_PASSWORD: sql.password }, timeout: 300_000, maxBuffer: 4 << 20 });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string };
    throw new Error(`temporal-sql-tool ${args[0]} (${db}) failed: ${(e.stderr || e.stdout || String(err)).trim().slice(-2000)}`);
  }
}

/** Creates database `db` unless it exists (the tool creates any database: FerretDB's too). */
export async function createDatabase(tools: TemporalServerTools, sql: SqlLogin, db: string): Promise<void> {
  await sqlTool(tools, sql, db, ['create-database']).catch((err: Error) => {
    if (!/already exists/.test(err.message)) throw err;
  });
}

/**
 * Creates Temporal's two databases when missing and brings their schemas to the module's latest version
 * (temporal-sql-tool, as temporalio/auto-setup does): safe at every start, and what upgrades the schema after a
 * server upgrade.
 */
export async function setUpSchemas(tools: TemporalServerTools, sql: SqlLogin, say: (msg: string) => void): Promise<void> {
  for (const [db, dir] of [[TEMPORAL_DB, 'temporal'], [VISIBILITY_DB, 'visibility']] as const) {
    await createDatabase(tools, sql, db);
    // Version 0.0 creates the schema_version table only (nothing when it is there); update-schema does the rest.
    await sqlTool(tools, sql, db, ['setup-schema', '-v', '0.0']);
    await sqlTool(tools, sql, db, ['update-schema', '-d', path.join(tools.TEMPORAL_SCHEMA_DIR, dir, 'versioned')]);
    say(`schema of ${db} is up to date`);
  }
}

/**
 * Registers namespace `namespace` (when missing) and our search attributes (src/temporal/search-attributes.ts) on
 * it, as `temporal server start-dev --search-attribute` does on the dev server; then waits until a list query by one
 * of them answers, which is when the frontend's namespace cache has them (it refreshes every 10 s).
 */
export async function registerNamespace(address: string, namespace: string, timeoutMs = 120_000): Promise<void> {
  // Lazy: the first call connects, and the wait below asks again until the server answers. `Connection.connect` gives
  // up after its own 10 s, which a server still starting on a busy machine once took (the cluster suite's start).
  const connection = Connection.lazy({ address });
  try {
    const { workflowService, operatorService } = connection;
    await waitFor(() => workflowService.getSystemInfo({}).then(() => true), 'the Temporal server', timeoutMs);
    const exists = await workflowService.describeNamespace({ namespace }).then(() => true, () => false);
    if (!exists) {
      await workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(RETENTION) }).catch((err: Error & { code?: number }) => {
        // 6: ALREADY_EXISTS (another start got there first)
        if (err.code !== 6) throw err;
      });
    }
    const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    await waitFor(async () => {
      const { customAttributes } = await operatorService.listSearchAttributes({ namespace });
      const missing = SEARCH_ATTRIBUTES.filter((k) => !customAttributes?.[k.name]);
      if (missing.length) await operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(missing.map((k) => [k.name, keyword])) });
      return true;
    }, `namespace "${namespace}" and its search attributes`, timeoutMs);
    const query = SEARCH_ATTRIBUTES.map((k) => `${k.name} = "-"`).join(' AND ');
    await waitFor(() => workflowService.countWorkflowExecutions({ namespace, query }).then(() => true), `a query by our search attributes on namespace "${namespace}"`, timeoutMs);
  } finally {
    await connection.close();
  }
}
