import crypto from 'node:crypto';
import { installsWithServlets, needsApproval, type ToolApproval } from '../src/store/installations';
import type { Models } from '../src/store/models';
import type { ToolSpec } from '../src/contract/types';

interface DescribedTool {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
}

/**
 * The tools a run offers: every tool of every install in the profile, named `<install>__<tool>` so two installs of
 * servlets with the same tool names cannot clash. Names outside the providers' `[A-Za-z0-9_-]{1,64}` rule are
 * cleaned and, when that could collide or is too long, made unique with a short hash. A spec carries
 * `approval: true` when its install's `settings.approval` names the tool (or is "*"), and no `approval` otherwise.
 */
export async function listProfileTools(models: Models, owner: string, profile: string): Promise<ToolSpec[]> {
  const specs: ToolSpec[] = [];
  const used = new Set<string>();
  for (const { install, servlet } of await installsWithServlets(models, owner, profile)) {
    const tools = (servlet?.schema.tools ?? []) as DescribedTool[];
    // An approval list naming a tool the servlet no longer has (it was replaced, the tool renamed) fails closed:
    // every tool of the install then waits for approval, rather than the renamed one running unasked.
    const approval = install.approval as ToolApproval | null | undefined;
    const stale = Array.isArray(approval) && approval.some((name) => !tools.some((t) => t.name === name));
    for (const tool of tools) {
      let name = `${install.name}__${tool.name}`.replace(/[^A-Za-z0-9_-]/g, '_');
      if (name.length > 64 || used.has(name) || name !== `${install.name}__${tool.name}`) {
        const hash = crypto.createHash('sha256').update(`${install.name}\n${tool.name}`).digest('hex').slice(0, 8);
        name = `${name.slice(0, 55)}_${hash}`;
      }
      used.add(name);
      specs.push({
        name,
        description: tool.description ?? '',
        inputSchema: tool.inputSchema ?? { type: 'object', properties: {} },
        install: install.name,
        tool: tool.name,
        ...(stale || needsApproval(approval, tool.name) ? { approval: true } : {}),
      });
    }
  }
  return specs;
}
