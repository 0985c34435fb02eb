import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { api, signedIn, startApi } from '../helpers/api';
import { testEnv } from '../helpers/env';
import { everythingServer } from '../helpers/mcp-everything';
import { installServlet } from '../helpers/servlets';

/** Lists the profile's installs and tools, and runs the servlet's tool locally through the client's own plugin. */
const SCRIPT = `
import json, sys
from mcp_run import Client
c = Client()
out = {}
installs = {s.name: s for s in c.list_installs()}
out["installs"] = {name: {"slug": str(s.slug), "content_addr": s.content_addr, "binding_id": s.binding_id,
                          "is_remote": s.is_remote, "remote": s.remote, "has_oauth": s.has_oauth,
                          "tools": {t.name: t.description for t in s.tools.values()}} for name, s in installs.items()}
out["tools"] = sorted(str(t) for t in c.tools.values())
greet = installs["hello"].tools["greet"]
out["hello"] = c.plugin(greet).call({"name": "Ada"}, tool=greet)
try:
    c.plugin(installs["ev"])
    out["ev_plugin"] = "loaded"
except ValueError as e:
    out["ev_plugin"] = str(e)
print(json.dumps(out))
`;

describe('the Python client mcp-run 0.5.0 on a profile holding an MCP install', function () {
  this.timeout(60_000);

  before(function () {
    // scripts/test.sh (npm test) always sets it; a focused mocha run without the venv cannot drive the client.
    if (!testEnv.python) this.skip();
  });

  it('lists the MCP install as a remote servlet beside a servlet install, and still runs the servlet tool', async () => {
    // An API whose MCP_ALLOWLIST lets the loopback server-everything through, as an operator would for a private server.
    const { url: origin } = await startApi({ MCP_ALLOWLIST: '127.0.0.1' });
    const everything = (await everythingServer()).url;
    const user = await signedIn('pymcp');
    const me = { ...user, api: api(user.sessionId, origin) };
    await installServlet(me.api, me.username, 'greeter', 'hello');
    const installed = await me.api.post('/api/profiles/~/default/installations', {
      name: 'ev',
      mcp: { url: `${everything}?key=py-secret-query`, headers: { Authorization: 'Bearer py-secret-header-0123456789' } },
    });
    expect(installed.status, installed.text).to.equal(201);

    const { stdout } = await promisify(execFile)(testEnv.python!, ['-c', SCRIPT], {
      env: { MCP_RUN_ORIGIN: origin, MCP_RUN_SESSION_ID: me.sessionId },
    });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    const url = everything;
    expect(out.installs.ev).to.deep.include({ slug: `${me.username}/ev`, content_addr: null, is_remote: true, remote: { url }, has_oauth: false });
    expect(out.installs.ev.tools).to.deep.equal({ [url]: installed.body.servlet.meta.description });
    expect(installed.body.servlet.meta.description).to.match(new RegExp(`^MCP server .+ at ${url.replace(/[.]/g, '\\.')}$`));
    expect(out.installs.ev.binding_id).to.be.a('string');
    expect(out.installs.hello).to.deep.include({ slug: `${me.username}/greeter`, is_remote: false, tools: { greet: 'Greets someone by name' } });
    expect(out.tools).to.include.members(['hello.greet']);
    expect(out.hello).to.deep.equal([{ type: 'text', text: 'Hello, Ada!' }]);
    expect(out.ev_plugin).to.equal("Remote servlets can't be loaded as Plugins");
    expect(stdout).to.not.include('py-secret');
  });
});
