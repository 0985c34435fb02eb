import type { Command } from 'commander';
import { seg } from './client';
import { table, when, type Context } from './context';
import { readObjectFile } from './input';

const PROFILE_OPTION = ['-p, --profile <name>', 'the profile', 'default'] as const;
const ENDED = ['ready', 'error', 'cancelled'];

/** An eval's scorecard as a table: a row per variant (docs/evals.md, "Reading it"). */
export function scorecardLines(e: any): string[] {
  const rows = (e.scorecard ?? []).map((v: any) => [
    v.name,
    `${v.runs.done}/${v.runs.total}`,
    `${v.checks.passed}/${v.checks.total}`,
    v.checks.total > 0 ? `${Math.round((100 * v.checks.passed) / v.checks.total)}%` : '-',
    String(v.tokens),
    v.p50_duration_ms === null ? '-' : `${(v.p50_duration_ms / 1000).toFixed(1)}s`,
  ]);
  return [
    `eval ${e.id}: ${e.status}${e.reason ? ` (${e.reason})` : ''}, ${e.runs} runs, tools ${e.tools}, created ${when(e.created_at)}`,
    ...table([['VARIANT', 'RUNS', 'CHECKS', 'PASSED', 'TOKENS', 'P50'], ...rows]),
  ];
}

/** The per-run lines of `ptr eval get --runs`: each replay, its checks and its diff's address. */
const runLines = (e: any): string[] =>
  table([['RUN', 'STATUS', 'CHECKS', 'DIFF'], ...(e.scorecard ?? []).flatMap((v: any) => v.diffs.map((d: any) => [d.run, d.status, `${d.checks_passed}/${d.checks_total}`, d.diff_url]))]);

/**
 * `ptr eval start|get|list|cancel|delete`: a task's evals, `<task path>/evals[/<id>]` on the Variant B paths
 * (docs/evals.md). `start` takes the body as the API does, from a JSON or YAML file; `--wait` follows it to its end.
 */
export function evalCommands(program: Command, ctx: Context) {
  const evals = program.command('eval').alias('evals').description("start, show, list, cancel and delete a task's evals (replays under variants, scored)");
  const base = (profile: string, task: string) => `/api/tasks/~/${seg(profile)}/${seg(task)}/evals`;

  const waitFor = async (path: string, intervalMs = 1_000) => {
    for (;;) {
      const { body } = await ctx.client().get(path);
      if (ENDED.includes(body.status)) return body;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  };

  evals
    .command('start <task>')
    .description('start an eval from a file (JSON or YAML, "-": standard input), e.g. {"runs": {"last": 20}, "variants": [{"name": "mini", "model": "gpt-4.1-mini"}]}')
    .option(...PROFILE_OPTION)
    .requiredOption('-f, --file <file>', 'the eval: runs, variants, tools, checks, concurrency (docs/evals.md)')
    .option('-w, --wait', 'wait for it to end, then print its scorecard')
    .action(async (task: string, opts: { profile: string; file: string; wait?: boolean }) => {
      const { body } = await ctx.client().post(base(opts.profile, task), { json: readObjectFile(opts.file) });
      const shown = opts.wait ? await waitFor(`${base(opts.profile, task)}/${seg(body.id)}`) : body;
      ctx.print(shown, () => (opts.wait ? scorecardLines(shown) : [`started eval ${body.id}: ${body.url}`, ...scorecardLines(body).slice(1)]));
    });

  evals
    .command('get <task> <id>')
    .description("show an eval's scorecard: per variant, runs done, checks passed, tokens, median duration")
    .option(...PROFILE_OPTION)
    .option('-r, --runs', 'each replay too, with its diff address')
    .option('-w, --wait', 'wait for it to end first')
    .action(async (task: string, id: string, opts: { profile: string; runs?: boolean; wait?: boolean }) => {
      const path = `${base(opts.profile, task)}/${seg(id)}`;
      const body = opts.wait ? await waitFor(path) : (await ctx.client().get(path)).body;
      ctx.print(body, () => [...scorecardLines(body), ...(opts.runs ? ['', ...runLines(body)] : [])]);
    });

  evals
    .command('list <task>')
    .description("list a task's evals, newest first")
    .option(...PROFILE_OPTION)
    .action(async (task: string, opts: { profile: string }) => {
      const { body } = await ctx.client().get(base(opts.profile, task));
      const list: any[] = Array.isArray(body) ? body : [];
      ctx.print(body, () =>
        list.length === 0
          ? `no evals for task ${task}`
          : table([['ID', 'STATUS', 'RUNS', 'VARIANTS', 'CREATED'], ...list.map((e) => [e.id, e.status, String(e.runs), e.variants.map((v: any) => v.name).join(','), when(e.created_at)])]),
      );
    });

  evals
    .command('cancel <task> <id>')
    .description('cancel an eval: no more replays start, those not ended are cancelled')
    .option(...PROFILE_OPTION)
    .action(async (task: string, id: string, opts: { profile: string }) => {
      const { body } = await ctx.client().post(`${base(opts.profile, task)}/${seg(id)}/cancel`);
      ctx.print(body, () => `cancelling eval ${id}`);
    });

  evals
    .command('delete <task> <id>')
    .description('delete an ended eval (its replay runs stay)')
    .option(...PROFILE_OPTION)
    .action(async (task: string, id: string, opts: { profile: string }) => {
      await ctx.client().delete(`${base(opts.profile, task)}/${seg(id)}`);
      ctx.print({ deleted: true, profile: opts.profile, task, eval: id }, () => `deleted eval ${id} of task ${task}`);
    });
}
