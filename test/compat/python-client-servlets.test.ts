import crypto from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { sessionFor, uniqueUser } from '../helpers/api';
import { testEnv } from '../helpers/env';
import { getStack } from '../helpers/stack';
import { ageInstallList, libraryUser, publish } from '../servlets-api/library';

/** Prints the last line as JSON; `ARGS` is the JSON the test passes in. */
const PRELUDE = `
import json, logging, sys
from mcp_run import Client
ARGS = json.loads(sys.argv[1])
c = Client()
out = {}
`;

/** Search, then install the found servlet twice: with configuration and hosts, and plainly. */
const INSTALL = `${PRELUDE}
found = list(c.search(ARGS["q"]))
out["search"] = [{"slug": str(r.slug), "visibility": r.visibility, "installation_count": r.installation_count,
                  "description": r.meta["description"], "tools": [t["name"] for t in r.meta["schema"]["tools"]],
                  "created_at": r.created_at.isoformat()} for r in found]
target = next(r for r in found if str(r.slug) == ARGS["slug"])
c.install(target, name="hello", config={"greeting": "Howdy"}, network={"domains": ["api.example.com"]})
c.install(target, name="plain")
print(json.dumps(out))
`;

/**
 * List twice (the second answer is a 304, which the client says in its debug log), read the tools, run the
 * greeter locally through the client's own Extism plugin, uninstall and list again.
 */
const USE = `${PRELUDE}
messages = []
class Collect(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())
c.logger.addHandler(Collect())
c.logger.setLevel(logging.DEBUG)
first = [s.name for s in c.list_installs()]
installs = c.installs
out["first"] = first
out["not_modified"] = any(m.startswith("No changes since") for m in messages)
out["installs"] = {name: {"slug": str(s.slug), "content_addr": s.content_addr, "settings": s.settings,
                          "tools": {t.name: t.description for t in s.tools.values()}} for name, s in installs.items()}
out["tools"] = sorted(str(t) for t in c.tools.values())
greet = installs["hello"].tools["greet"]
out["input_schema"] = greet.input_schema
out["hello"] = c.plugin(greet).call({"name": "Ada"}, tool=greet)
out["plain"] = c.plugin(installs["plain"]).call({"name": "Bob"}, tool="greet")
c.uninstall("plain")
out["after_uninstall"] = [s.name for s in c.list_installs()]
print(json.dumps(out))
`;

describe('the Python client mcp-run 0.5.0 with servlets', function () {
  this.timeout(60_000);

  before(function () {
    if (!testEnv.python) {
      // scripts/test.sh (npm test) always sets it; a focused mocha run without the venv cannot drive the client.
      this.skip();
    }
  });

  async function python(script: string, session: string, args: unknown) {
    const { stdout } = await promisify(execFile)(testEnv.python!, ['-c', script, JSON.stringify(args)], {
      env: { MCP_RUN_ORIGIN: getStack().apiUrl, MCP_RUN_SESSION_ID: session },
    });
    return JSON.parse(stdout.trim().split('\n').pop()!);
  }

  it('searches, installs with config and hosts, lists with a 304, reads tools and calls one locally', async () => {
    const word = `py${crypto.randomBytes(4).toString('hex')}`;
    const owner = await libraryUser('pyown');
    await publish(owner, 'greeter', 'greeter', `visibility=public&description=${word}%20greets`);
    const username = uniqueUser('py');
    const session = await sessionFor(username);
    const slug = `${owner.username}/greeter`;

    const installed = await python(INSTALL, session, { q: word, slug });
    expect(installed.search).to.have.length(1);
    expect(installed.search[0]).to.deep.include({ slug, visibility: 'public', installation_count: 0, description: `${word} greets`, tools: ['greet'] });

    // nothing changes between the two lists of the next script, whatever second they fall in
    await ageInstallList(username, 'default');
    const used = await python(USE, session, {});
    expect(used.first).to.deep.equal(['hello', 'plain']);
    expect(used.not_modified, 'the second list was answered 304').to.equal(true);
    const hello = used.installs.hello;
    expect(hello.slug).to.equal(slug);
    expect(hello.content_addr).to.match(/^[0-9a-f]{64}$/);
    expect(hello.settings).to.deep.equal({
      config: { greeting: 'Howdy' },
      permissions: { network: { domains: ['api.example.com'] }, filesystem: { volumes: {} } },
    });
    expect(used.installs.plain.settings.permissions.network.domains).to.deep.equal(['*']);
    expect(hello.tools).to.deep.equal({ greet: 'Greets someone by name' });
    expect(used.tools).to.have.members(['plain.greet']);
    expect(used.input_schema).to.deep.equal({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] });
    expect(used.hello).to.deep.equal([{ type: 'text', text: 'Howdy, Ada!' }]);
    expect(used.plain).to.deep.equal([{ type: 'text', text: 'Hello, Bob!' }]);
    expect(used.after_uninstall).to.deep.equal(['hello']);
  });
});
