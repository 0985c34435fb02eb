import type { InstallForRun } from '../src/store/installations';
import type { ServletRuntime } from './servlets';
import type { CallToolResult } from '../src/contract/types';

export interface ToolCallInput {
  owner: string;
  profile: string;
  install: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/**
 * Runs one tool call; never throws for the servlet's own faults (they come back as `isError` results). `signal`
 * stops it (the run was cancelled).
 */
export type ToolCaller = (input: ToolCallInput, signal?: AbortSignal) => Promise<CallToolResult>;

/**
 * Runs one tool call in its servlet's sandbox. The install is loaded at call time, so an install changed or removed
 * while a run is live is seen; its configuration is opened here and goes no further than the plugin.
 */
export function createToolCaller(deps: {
  servlets: ServletRuntime;
  loadInstall(owner: string, profile: string, install: string): Promise<InstallForRun | null>;
}): ToolCaller {
  return async (input, signal) => {
    const install = await deps.loadInstall(input.owner, input.profile, input.install);
    if (!install) {
      return { isError: true, content: [{ type: 'text', text: `"${input.install}" is no longer installed in profile "${input.profile}"` }] };
    }
    return deps.servlets.call({ key: `${input.owner}/${input.profile}/${input.install}`, ...install }, { name: input.tool, arguments: input.arguments }, signal);
  };
}
