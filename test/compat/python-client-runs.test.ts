import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { sessionFor, startApi, uniqueUser } from '../helpers/api';
import { testEnv } from '../helpers/env';
import { getStack, OPERATOR_KEYS } from '../helpers/stack';
import { lastUserText, openaiText, providerError } from '../helpers/fake-provider';

/**
 * Runs through the hosted service's own Python client, unchanged: `task.run(data, run_id=...)` posts to the signed
 * URL, then the client polls. Its `wait()` returns at once while a run is `pending`, so the script polls until the
 * run is closed (as compat.md advises) before asking for `results()`.
 */
const SCRIPT = `
import json, time
from mcp_run import Client

c = Client()
task = c.create_task("pyrun", provider="openai", prompt="Tell {{ who }} about {{ topic.name }}")
run = task.run({"who": "Ann", "topic": {"name": "tides"}}, run_id="py-1")
out = {"first_status": run.status, "url": run.url}
deadline = time.time() + 30
while run.status not in ("ready", "error") and time.time() < deadline:
    run.wait()
    time.sleep(0.1)
out["status"] = run.status
out["results"] = run.results()
again = task.run({"who": "Bob"}, run_id="py-1")
out["again_url"] = again.url
out["runs"] = [(r.name, r.status) for r in c.list_task_runs(task)]

bad = c.create_task("pyfail", provider="openai", prompt="fail please")
failing = bad.run({}, run_id="py-2")
out["error"] = None
try:
    # wait() itself raises the run's error (results()[-1].error) once the run is closed in error.
    while failing.status not in ("ready", "error") and time.time() < deadline:
        failing.wait()
        time.sleep(0.1)
    failing.results()
except Exception as e:
    out["error"] = str(e)
print(json.dumps(out))
`;

describe('the Python client mcp-run 0.5.0 with runs', function () {
  this.timeout(90_000);
  let server: Awaited<ReturnType<typeof startApi>>;

  before(async function () {
    if (!testEnv.python) this.skip(); // scripts/test.sh (npm test) always provides it
    server = await startApi(OPERATOR_KEYS);
  });
  after(async () => {
    await server?.close();
    getStack().fake.reset();
  });

  it('triggers a run with task.run, waits for it, reads its answer, and lists it once', async () => {
    const { fake } = getStack();
    fake.script((req) => {
      const prompt = lastUserText(req);
      if (prompt === 'fail please') return providerError('openai', 400, 'model does not exist');
      return openaiText(`answer to: ${prompt}`);
    });
    const username = uniqueUser('pyrun');
    const session = await sessionFor(username);
    const { stdout } = await promisify(execFile)(testEnv.python!, ['-c', SCRIPT], {
      env: { MCP_RUN_ORIGIN: server.url, MCP_RUN_SESSION_ID: session },
    });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(out.url).to.equal(`${server.url}/api/runs/${username}/default/pyrun/py-1`);
    expect(out.first_status).to.be.oneOf(['pending', 'running', 'ready']);
    expect(out.status).to.equal('ready');
    expect(out.results).to.equal('answer to: Tell Ann about tides');
    expect(out.again_url).to.equal(out.url);
    expect(out.runs).to.deep.equal([['py-1', 'ready']]);
    expect(out.error).to.equal('openai answered 400: model does not exist');
    // This test's own calls (the fake is shared: a run of an earlier test may still call it).
    const ours = fake.requests.filter((r) => ['Tell Ann about tides', 'fail please'].includes(lastUserText(r)));
    expect(ours.filter((r) => r.headers.authorization === `Bearer ${OPERATOR_KEYS.OPENAI_API_KEY}`)).to.have.length(2);
  });
});
