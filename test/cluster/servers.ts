import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { assertPortFree } from '../../src/cli/dev-processes';
import { initPostgres, startPostgres, stopPostgres, type PostgresOptions } from '../../src/cli/cluster-postgres';
import { createDatabase, registerNamespace, serverArgs, setUpSchemas, writeServerConfig, type TemporalServerTools } from '../../src/cli/cluster-temporal';
import { clusterPorts, FERRETDB_DB, ferretDbProcess, POSTGRES_USER, type ClusterPorts, type ClusterProcess } from '../../src/cli/cluster-topology';
import { ManagedProcess, type ProcessSpec } from '../helpers/managed-process';
import { waitForPort } from '../helpers/net';

export type ClusterTools = TemporalServerTools & { POSTGRES_BIN_DIR: string; FERRETDB_BIN: string; TEMPORAL_UI_SERVER_BIN: string };

/** The cluster's tools, built once per machine (scripts/install-tools.sh --cluster), by their variables. */
export async function installClusterTools(): Promise<ClusterTools> {
  const { stdout } = await promisify(execFile)('bash', ['scripts/install-tools.sh', '--cluster'], { maxBuffer: 1 << 20 });
  return Object.fromEntries(stdout.trim().split('\n').filter((l) => l.includes('=')).map((l) => l.split('=', 2))) as never;
}

/** A block of 17 free loopback ports (the topology's layout), found by trying random ones. */
export async function freeBlock(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    // Below 32768: Temporal's PostgreSQL schema keeps membership ports in a smallint.
    const base = 20_000 + 17 * Math.floor(Math.random() * 700);
    const ports = Object.values(clusterPorts(base));
    if ((await Promise.all(ports.map((p) => assertPortFree(p, '', '').then(() => true, () => false)))).every(Boolean)) return base;
  }
  throw new Error('no block of 17 free ports found');
}

export const managed = (p: ClusterProcess, ready: ProcessSpec['ready'], readyTimeoutMs: number, logDir: string) =>
  new ManagedProcess(p.name, { command: p.command, args: p.args, env: p.env, ready, readyTimeoutMs }, logDir);

export interface ClusterServers {
  tools: ClusterTools;
  ports: ClusterPorts;
  dataDir: string;
  postgres: PostgresOptions;
  temporalAddress: string;
  mongoUrl: (db: string) => string;
  temporal: ManagedProcess;
  ferretdb: ManagedProcess;
  /** Stops the servers (PostgreSQL last) and, unless `keepData`, removes the data directory. */
  stop(keepData?: boolean): Promise<void>;
}

/**
 * The cluster topology's servers as `npm run stack:cluster` starts them (src/cli/cluster-*.ts), on a fresh data
 * directory and a free block of ports: PostgreSQL, temporal-server on it (persistence and SQL visibility, the
 * namespace and our search attributes registered) and FerretDB on it. Used by the cluster suite and the bench.
 */
export async function startClusterServers(options: { logDir: string; logLevel?: 'warn' | 'error' }): Promise<ClusterServers> {
  const tools = await installClusterTools();
  // Enterable by the `postgres` user (PostgreSQL's data directory is inside), listable by no one else.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-cluster-'));
  fs.chmodSync(dataDir, 0o711);
  const ports = clusterPorts(await freeBlock());
  const password = crypto.randomBytes(24).toString('hex');
  const postgres: PostgresOptions = { binDir: tools.POSTGRES_BIN_DIR, dataDir: path.join(dataDir, 'postgresql'), port: ports.postgres, user: POSTGRES_USER, password };
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async (keepData = false) => {
    for (const step of stops.splice(0).reverse()) await step().catch(() => undefined);
    if (!keepData) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await initPostgres(postgres);
    await startPostgres(postgres);
    stops.push(() => stopPostgres(postgres));
    const sql = { port: ports.postgres, user: POSTGRES_USER, password };
    await setUpSchemas(tools, sql, () => undefined);
    await createDatabase(tools, sql, FERRETDB_DB);

    const temporalAddress = `127.0.0.1:${ports.temporal}`;
    const configDir = path.join(dataDir, 'temporal');
    writeServerConfig(configDir, { ports, sql, logLevel: options.logLevel ?? 'warn' });
    const temporal = managed({ name: 'temporal-server', command: tools.TEMPORAL_SERVER_BIN, args: serverArgs(configDir), env: {} }, () => registerNamespace(temporalAddress, 'default'), 180_000, options.logDir);
    const ferretdb = managed(ferretDbProcess(tools.FERRETDB_BIN, ports, password, options.logLevel ?? 'warn'), () => waitForPort(ports.mongo, 30_000), 30_000, options.logDir);
    const killAll = () => [temporal, ferretdb].forEach((p) => p.killNow());
    process.once('exit', killAll);
    stops.push(async () => {
      for (const p of [ferretdb, temporal]) await p.stop().catch(() => undefined);
      process.off('exit', killAll);
    });
    await Promise.all([temporal.start(), ferretdb.start()]);
    return { tools, ports, dataDir, postgres, temporalAddress, mongoUrl: (db) => `mongodb://127.0.0.1:${ports.mongo}/${db}`, temporal, ferretdb, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
