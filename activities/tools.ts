import crypto from 'node:crypto';
import { installsWithTools, needsApproval, type ToolApproval } from '../src/store/installations';
import { mcpToolNeedsApproval } from '../src/store/mcp-installs';
import type { Models } from '../src/store/models';
import type { Runner, ToolSpec } from '../src/contract/types';
import { runFailure } from '../src/contract/failures';

interface DescribedTool {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
}

/** The most tools a provider takes in one call (OpenAI's documented limit; Anthropic states none). */
export const PROVIDER_MAX_TOOLS: Record<Runner, number | undefined> = { openai: 128, anthropic: undefined };

/**
 * The tools a run offers: every tool of every install in the profile, servlet or MCP server (docs/mcp.md), named
 * `<install>__<tool>` so two installs with the same tool names cannot clash. Names outside the providers'
 * `[A-Za-z0-9_-]{1,64}` rule are cleaned and, when that could collide or is too long, made unique with a short hash.
 * A spec carries `approval: true` when its install's `settings.approval` asks for a person's decision on the tool
 * (for MCP installs, by default every tool MCP's annotations call destructive), and no `approval` otherwise.
 */
export async function listProfileTools(models: Models, owner: string, profile: string): Promise<ToolSpec[]> {
  const specs: ToolSpec[] = [];
  const used = new Set<string>();
  const offer = (install: string, tool: DescribedTool, extra: Pick<ToolSpec, 'approval' | 'mcp' | 'idempotent' | 'task'>) => {
    const name = providerName(install, tool.name, used);
    used.add(name);
    specs.push({ name, description: tool.description ?? '', inputSchema: tool.inputSchema ?? { type: 'object', properties: {} }, install, tool: tool.name, ...extra });
  };
  for (const found of await installsWithTools(models, owner, profile)) {
    if (found.kind === 'mcp') {
      for (const tool of found.tools) {
        offer(found.install.name, tool, {
          ...(mcpToolNeedsApproval(found.install, tool) ? { approval: true } : {}),
          mcp: true,
          ...(tool.annotations?.idempotentHint === true ? { idempotent: true } : {}),
          ...(tool.execution?.taskSupport === 'required' ? { task: true } : {}),
        });
      }
      continue;
    }
    const tools = (found.tools ?? []) as DescribedTool[];
    // An approval list naming a tool the servlet no longer has (it was replaced, the tool renamed) fails closed:
    // every tool of the install then waits for approval, rather than the renamed one running unasked.
    const approval = found.install.approval as ToolApproval | null | undefined;
    const stale = Array.isArray(approval) && approval.some((name) => !tools.some((t) => t.name === name));
    for (const tool of tools) offer(found.install.name, tool, stale || needsApproval(approval, tool.name) ? { approval: true } : {});
  }
  return specs;
}

/** Throws TooManyTools when the run's provider takes fewer tools than the profile offers. */
export function checkToolCount(runner: Runner, specs: readonly ToolSpec[]): void {
  const max = PROVIDER_MAX_TOOLS[runner];
  if (max === undefined || specs.length <= max) return;
  const byInstall = new Map<string, number>();
  for (const s of specs) byInstall.set(s.install, (byInstall.get(s.install) ?? 0) + 1);
  const largest = [...byInstall].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([install, n]) => `"${install}" ${n}`).join(', ');
  throw runFailure(
    'TooManyTools',
    `the profile offers ${specs.length} tools and ${runner} accepts at most ${max} in a call: narrow an install's settings.tools (the largest: ${largest})`,
  );
}

/** `<install>__<tool>` as the providers accept it; cleaned, cut or already taken: made unique with a short hash. */
function providerName(install: string, tool: string, used: ReadonlySet<string>): string {
  const plain = `${install}__${tool}`;
  const name = plain.replace(/[^A-Za-z0-9_-]/g, '_');
  if (name.length <= 64 && !used.has(name) && name === plain) return name;
  const hash = crypto.createHash('sha256').update(`${install}\n${tool}`).digest('hex').slice(0, 8);
  return `${name.slice(0, 55)}_${hash}`;
}
