import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { signedIn, startApi } from '../helpers/api';
import { childEnv } from '../helpers/env';
import { everythingServer } from '../helpers/mcp-everything';
import { startOAuthServers } from '../helpers/mcp-oauth-server';
import { installServlet } from '../helpers/servlets';
import { atTeardown, getStack } from '../helpers/stack';

const BIN = path.join(__dirname, '..', '..', 'bin', 'ptr');
const TOKEN = 'Bearer cli-mcp-secret-3b9d7f1e2c';

/** `ptr install mcp|refresh|list`, run as a process against an API whose MCP_ALLOWLIST lets the loopback server through. */
describe('ptr install mcp, refresh and list', function () {
  this.timeout(90_000);
  let env: NodeJS.ProcessEnv;
  let everything: string;
  let user: Awaited<ReturnType<typeof signedIn>>;

  async function ptr(args: string[], extra: Record<string, string> = {}) {
    try {
      const { stdout, stderr } = await promisify(execFile)(BIN, args, { env: { ...env, ...extra } });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  before(async () => {
    const { url } = await startApi({ MCP_ALLOWLIST: '127.0.0.1' });
    everything = (await everythingServer()).url;
    user = await signedIn('climcp');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-mcp-'));
    atTeardown(async () => fs.rmSync(dir, { recursive: true, force: true }));
    env = childEnv({ HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), PTR_CONFIG: '', MCPX_SESSION_ID: '', DEV_DATA_DIR: path.join(dir, 'none'), MCP_RUN_ORIGIN: url, MCP_RUN_SESSION_ID: user.sessionId });
  });

  it('installs a server with a header from an environment variable, shows it by name only, lists and refreshes it', async () => {
    const installed = await ptr(['install', 'mcp', 'ev', '--url', everything, '--header-env', 'Authorization=EV_TOKEN', '--header', 'X-Client=ptr', '--tool', 'echo', '--tool', 'get-sum'], { EV_TOKEN: TOKEN });
    expect(installed.code, installed.stderr).to.equal(0);
    expect(installed.stdout).to.equal(`installed MCP server ${everything} as ev in profile default (tools: ev__echo, ev__get-sum)\n`);
    const doc = await getStack().db.models.Installation.findOne({ owner: user.username, name: 'ev' }).lean();
    expect(doc!.mcp!.header_names).to.deep.equal(['X-Client', 'Authorization']);

    await installServlet(user.api, user.username, 'greeter', 'hello');
    const table = (await ptr(['install', 'list'])).stdout.split('\n');
    expect(table[0]).to.match(/^NAME +SERVLET +HOSTS +APPROVAL +TOOLS$/);
    expect(table.find((l) => l.startsWith('ev '))).to.match(new RegExp(`^ev +mcp ${everything.replace(/[.]/g, '\\.')} +127\\.0\\.0\\.1:\\d+ +destructive +echo, get-sum$`));
    expect(table.find((l) => l.startsWith('hello '))).to.match(/ \* +- +greet$/);
    const json = JSON.parse((await ptr(['install', 'list', '--json'])).stdout);
    expect(json.installs.find((i: { name: string }) => i.name === 'ev').mcp.headers).to.deep.equal(['X-Client', 'Authorization']);
    expect(JSON.stringify(json)).to.not.include(TOKEN);

    const refreshed = await ptr(['install', 'refresh', 'ev']);
    expect(refreshed.code, refreshed.stderr).to.equal(0);
    expect(refreshed.stdout).to.equal('listed the tools of ev again: echo, get-sum\n');
  });

  it('installs a server with OAuth client credentials, the secret from an environment variable, shown by name only', async () => {
    const servers = await startOAuthServers();
    try {
      const secret = 'cs-cli-oauth-8d2e6b1f0a7c';
      servers.client('cli-client', { secret });
      const installed = await ptr(['install', 'mcp', 'prot', '--url', servers.mcpUrl, '--oauth-client-id', 'cli-client', '--oauth-secret-env', 'PROT_SECRET', '--oauth-scope', 'mcp'], { PROT_SECRET: secret });
      expect(installed.code, installed.stderr).to.equal(0);
      expect(installed.stdout).to.equal(`installed MCP server ${servers.mcpUrl} as prot in profile default (tools: prot__whoami)\n`);
      const json = JSON.parse((await ptr(['install', 'list', '--json'])).stdout);
      expect(json.installs.find((i: { name: string }) => i.name === 'prot').mcp.oauth).to.deep.equal({ client_id: 'cli-client', scope: 'mcp', auth: 'client_secret' });
      expect(JSON.stringify(json)).to.not.include(secret);
      const unset = await ptr(['install', 'mcp', 'prot', '--url', servers.mcpUrl, '--oauth-client-id', 'cli-client', '--oauth-secret-env', 'NOT_SET_ANYWHERE']);
      expect(unset.code).to.equal(2);
      expect(unset.stderr).to.include('--oauth-secret-env NOT_SET_ANYWHERE: the variable NOT_SET_ANYWHERE is not set');
    } finally {
      await servers.close();
    }
  });

  it('refuses an unset --header-env variable and a keyword mixed with tool names, as usage errors', async () => {
    const unset = await ptr(['install', 'mcp', 'ev', '--url', everything, '--header-env', 'Authorization=NOT_SET_ANYWHERE']);
    expect(unset.code).to.equal(2);
    expect(unset.stderr).to.include('--header-env Authorization=NOT_SET_ANYWHERE: the variable NOT_SET_ANYWHERE is not set');
    const mixed = await ptr(['install', 'mcp', 'ev', '--url', everything, '--approval', 'none', '--approval', 'echo']);
    expect(mixed.code).to.equal(2);
    expect(mixed.stderr).to.include('--approval none cannot be combined with other values');
  });

  it('says why the API refused an install, with exit code 1', async () => {
    const res = await ptr(['install', 'mcp', 'ev', '--url', 'ftp://x.invalid/']);
    expect(res.code).to.equal(1);
    expect(res.stderr).to.equal('error invalid_request: mcp.url: expected an https:// URL\n');
  });
});
