import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { sessionFor, startApi, uniqueUser } from '../helpers/api';
import { testEnv } from '../helpers/env';

/**
 * The hosted service's own Python client (mcp-run 0.5.0, installed by scripts/python-client.sh) against this API,
 * unchanged: it finds the server through MCP_RUN_ORIGIN and the session through MCP_RUN_SESSION_ID. Its
 * create_task sends the short form without a key, so this API runs with operator keys configured.
 */
const SCRIPT = `
import json
from mcp_run import Client

c = Client()
out = {"user": c.user.username}
p = c.create_profile("pyprof", description="from python", is_public=False)
out["created_profile"] = {"slug": str(p.slug), "description": p.description, "is_public": p.is_public,
                          "created_at": p.created_at.isoformat()}
out["profiles"] = [str(x.slug) for x in c.list_user_profiles()]
t = c.create_task("pytask", provider="openai", prompt="Hello {{ name }}", profile="pyprof")
out["created_task"] = {"name": t.name, "slug": t.task_slug, "provider": t.provider, "settings": t.settings,
                       "profile": str(t.profile), "modified_at": t.modified_at.isoformat()}
c.create_task("deftask", provider="anthropic", prompt="Hi")
out["tasks_pyprof"] = [(x.name, x.provider, x.prompt) for x in c.list_tasks(profile="pyprof")]
out["tasks_default"] = [(x.name, x.provider, x.prompt) for x in c.list_tasks()]
out["tasks_by_name"] = sorted(c.tasks.keys())
print(json.dumps(out))
`;

describe('the Python client mcp-run 0.5.0', function () {
  this.timeout(60_000);
  let server: Awaited<ReturnType<typeof startApi>>;

  before(async function () {
    if (!testEnv.python) {
      // scripts/test.sh (npm test) always sets it; a focused mocha run without the venv cannot drive the client.
      this.skip();
    }
    server = await startApi({ OPENAI_API_KEY: 'sk-operator-openai', ANTHROPIC_API_KEY: 'sk-operator-anthropic' });
  });
  after(async () => {
    await server?.close();
  });

  it('reads the user, creates and lists profiles, creates and lists tasks', async () => {
    const username = uniqueUser('py');
    const session = await sessionFor(username);
    const { stdout } = await promisify(execFile)(testEnv.python!, ['-c', SCRIPT], {
      env: { MCP_RUN_ORIGIN: server.url, MCP_RUN_SESSION_ID: session },
    });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);

    expect(out.user).to.equal(username);
    expect(out.created_profile).to.deep.include({ slug: '~/pyprof', description: 'from python', is_public: false });
    expect(out.profiles).to.deep.equal([`${username}/default`, `${username}/pyprof`]);
    expect(out.created_task).to.deep.include({
      name: 'pytask',
      slug: `${username}/pyprof/pytask`,
      provider: 'openai',
      settings: { key_set: false },
      profile: '~/pyprof',
    });
    expect(out.tasks_pyprof).to.deep.equal([['pytask', 'openai', 'Hello {{ name }}']]);
    expect(out.tasks_default).to.deep.equal([['deftask', 'anthropic', 'Hi']]);
    expect(out.tasks_by_name).to.deep.equal(['deftask']);
  });
});
