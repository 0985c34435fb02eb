import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { signedIn } from '../helpers/api';
import { lastUserText, openaiText } from '../helpers/fake-provider';
import { createTask } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { mcpUrl } from '../helpers/mcp-client';

const run = promisify(execFile);
const PACKAGE = path.resolve(__dirname, '..', '..', 'node_modules', '@modelcontextprotocol', 'inspector-cli');

/**
 * The MCP Inspector's command line proper (1.0.3: `tools/list` and `tools/call` with `--header`; its `bin`,
 * build/cli.js, is a launcher that hands `--cli` to this one), when it is installed.
 */
function inspectorBin(): string | undefined {
  const file = path.join(PACKAGE, 'build', 'index.js');
  return fs.existsSync(file) ? file : undefined;
}

describe('MCP server: the MCP Inspector\'s command line lists and calls the tools', function () {
  this.timeout(60_000);
  const bin = inspectorBin();
  let token: string;

  before(async function () {
    if (!bin) {
      console.log('      @modelcontextprotocol/inspector-cli is not installed: skipped');
      this.skip();
    }
    const me = await signedIn('inspector');
    token = me.sessionId;
    await createTask(me.api, 'default', 'greet');
  });
  beforeEach(() => getStack().fake.reset());

  /** Runs the command line from its `build/` folder: 1.0.3 finds its own package.json relative to the working directory. */
  const inspector = async (...args: string[]) => {
    const { stdout } = await run(process.execPath, [bin!, mcpUrl(), '--transport', 'http', '--header', `Authorization: Bearer ${token}`, ...args], { cwd: path.join(PACKAGE, 'build'), timeout: 45_000 });
    return JSON.parse(stdout) as any;
  };

  it('lists the profile\'s tasks as tools', async () => {
    const listed = await inspector('--method', 'tools/list');
    expect(listed.tools.map((t: { name: string }) => t.name)).to.deep.equal(['greet']);
    expect(listed.tools[0].inputSchema.required).to.deep.equal(['text']);
  });

  it('calls a task and prints the run\'s last message', async () => {
    getStack().fake.script((req) => openaiText(`inspected ${lastUserText(req)}`));
    const called = await inspector('--method', 'tools/call', '--tool-name', 'greet', '--tool-arg', 'text=Gus');
    expect(called.content).to.deep.equal([{ type: 'text', text: 'inspected Say Gus' }]);
    expect(called.structuredContent.status).to.equal('ready');
  });
});
