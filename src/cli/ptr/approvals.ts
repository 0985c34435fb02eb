import type { Command } from 'commander';
import type { ApprovalsView } from '../../http/routes/approvals/schema';
import { exampleAnswer, formFieldLines } from './input-form';
import { table, when, type Context } from './context';

type Pending = ApprovalsView['approvals'][number];

/** The profile, task and run names of a Variant B run URL (`.../api/runs/<owner>/<profile>/<task>/<run>`). */
function runNames(runUrl: string): { profile: string; task: string; run: string } {
  const [profile = '', task = '', run = ''] = new URL(runUrl).pathname.split('/').slice(4).map(decodeURIComponent);
  return { profile, task, run };
}

/** The command that decides it, as `ptr run approve` takes it (runs.ts). */
export function approveCommand(p: Pick<Pending, 'run_url' | 'id'>): string {
  const { profile, task, run } = runNames(p.run_url);
  return `ptr run approve ${task} ${run} ${p.id}${profile === 'default' ? '' : ` --profile ${profile}`}`;
}

/** The command that answers an MCP server's question, as `ptr run answer` takes it (runs.ts). */
export function answerCommand(p: Pick<Pending, 'run_url' | 'id'>): string {
  const { profile, task, run } = runNames(p.run_url);
  return `ptr run answer ${task} ${run} ${p.id}${profile === 'default' ? '' : ` --profile ${profile}`}`;
}

/** At most this many characters of the arguments on a line: the whole of them are in `--json`. */
const ARGUMENTS_SHOWN = 120;
const shortJson = (value: unknown) => {
  const text = JSON.stringify(value);
  return text.length > ARGUMENTS_SHOWN ? `${text.slice(0, ARGUMENTS_SHOWN - 1)}…` : text;
};

/**
 * `ptr approvals`: what waits for the user across their runs (`GET /api/approvals/~`): tool calls to decide, and MCP
 * servers' questions to answer.
 */
export function approvalCommands(program: Command, ctx: Context) {
  program
    .command('approvals')
    .description('list the tool calls waiting for your decision and the questions of MCP servers across runs, each with the command that answers it')
    .option('-p, --profile <name>', 'only this profile')
    .option('-t, --task <name>', 'only tasks of this name')
    .action(async (opts: { profile?: string; task?: string }) => {
      const { body } = await ctx.client().get('/api/approvals/~', { query: { profile: opts.profile, task: opts.task } });
      const pending = (body as ApprovalsView).approvals;
      ctx.print(body, () => {
        if (pending.length === 0) return 'nothing waits for a decision';
        const rows = pending.map((p) => {
          const { profile, task, run } = runNames(p.run_url);
          const what = p.kind === 'input' ? `asks: ${shortJson(p.message)}${p.url ? ` at ${p.url}` : ''}` : shortJson(p.arguments);
          return [when(p.asked_at), `${profile}/${task}/${run}`, p.tool, what];
        });
        const lines = table([['ASKED', 'RUN', 'TOOL', 'ARGUMENTS'], ...rows]);
        const approvals = pending.filter((p) => p.kind === 'approval');
        const inputs = pending.filter((p) => p.kind === 'input');
        if (approvals.length) lines.push('', 'to decide (add --deny to deny):', ...approvals.map((p) => `  ${approveCommand(p)}`));
        if (inputs.length) {
          lines.push('', "to answer (--accept '<json content>', --decline or --cancel):");
          for (const p of inputs) {
            lines.push(`  ${answerCommand(p)} --accept '${p.schema ? exampleAnswer(p.schema) : '{}'}'`);
            lines.push(...formFieldLines(p.schema).map((f) => `      ${f}`));
          }
        }
        return lines;
      });
    });
}
