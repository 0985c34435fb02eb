import type { Command } from 'commander';
import type { RunView } from '../../http/presenters/run';
import { seg } from './client';
import { table, when, type Context } from './context';
import { Failure, UsageError } from './errors';
import { followRun } from './follow';
import { collect, parseObject, parsePairs, readObjectFile } from './input';
import { createRunView, entryLines } from './run-view';
import { replayCommands } from './replays';

const PROFILE_OPTION = ['-p, --profile <name>', 'the profile', 'default'] as const;

interface TriggerOptions {
  profile: string;
  run?: string;
  data?: string[];
  payload?: string;
  follow?: boolean;
}

/** The run's name: the last segment of its URL. */
const runNameOf = (url: string) => decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');

/**
 * `ptr run trigger|follow|list|get|cancel|delete|replay|diff|approve|answer`. Triggers go the Variant B way: a signed URL from
 * `POST /api/tasks/~/<profile>/<task>/signed`, then `POST <signed url>` with the data and `run-id` (any profile,
 * any JSON data); the run paths are `/api/runs/~/<profile>/<task>/<run>` (docs/runs.md).
 */
export function runCommands(program: Command, ctx: Context) {
  const run = program.command('run').alias('runs').description('trigger, follow, list, read, cancel and delete runs');
  const runPath = (profile: string, task: string, name: string) => `/api/runs/~/${seg(profile)}/${seg(task)}/${seg(name)}`;

  /** Follows the run until it ends; a run that ends in `error` is a Failure (exit 1) naming its reason. */
  const follow = async (view: ReturnType<typeof createRunView>, name: string, url: string) => {
    let reason: string | undefined;
    const stopOnInterrupt = () => {
      view.close();
      process.exit(130);
    };
    process.once('SIGINT', stopOnInterrupt);
    try {
      const end = await followRun(ctx.client(), url, {
        entry: (id, entry) => {
          if (typeof entry?.error === 'string') reason = entry.error;
          view.entry(id, entry);
        },
        status: (s) => view.status(s),
        delta: (d) => view.delta(d),
        reconnecting: (why, delayMs) => view.reconnecting(why, delayMs),
        read: () => view.read(),
      });
      view.end(end);
      if (end.status !== 'ready') throw new Failure('run_error', `run ${name} ended in ${end.status}${reason ? `: ${reason}` : ''}`);
    } finally {
      view.close();
      process.off('SIGINT', stopOnInterrupt);
    }
  };

  run
    .command('trigger <task>')
    .description('start a run of a task (through a signed URL, as anyone holding one would)')
    .option(...PROFILE_OPTION)
    .option('-r, --run <name>', 'the run\'s name (idempotent: a name used before starts nothing); default: the server names it')
    .option('-d, --data <key=value>', 'a field of the trigger data (repeatable; strings)', collect)
    .option('--payload <file>', 'the trigger data, a JSON or YAML object ("-": standard input); --data fields go on top')
    .option('-f, --follow', 'follow the run until it ends: exit 0 when ready, 1 on error')
    .action(async (task: string, opts: TriggerOptions) => {
      const payload = { ...(opts.payload ? readObjectFile(opts.payload) : {}), ...parsePairs(opts.data, '--data') };
      const client = ctx.client();
      const signed = await client.post(`/api/tasks/~/${seg(opts.profile)}/${seg(task)}/signed`);
      const res = await client.post(signed.body.url, { json: payload, anonymous: true, headers: opts.run ? { 'run-id': opts.run } : {} });
      const url = res.body.url as string;
      const doc = { run: runNameOf(url), url, created: res.status === 201 };
      if (!opts.follow) return ctx.print(doc, () => `${doc.created ? 'started' : 'already triggered (nothing started)'}: run ${doc.run}, ${url}`);
      const view = createRunView(ctx, doc.run, { profile: opts.profile, task, run: doc.run });
      view.triggered(doc);
      await follow(view, doc.run, url);
    });

  run
    .command('follow <task> <run>')
    .description('follow a run until it ends, from its first entry: exit 0 when ready, 1 on error')
    .option(...PROFILE_OPTION)
    .action(async (task: string, name: string, opts: { profile: string }) => {
      await follow(createRunView(ctx, name, { profile: opts.profile, task, run: name }), name, runPath(opts.profile, task, name));
    });

  run
    .command('list <task>')
    .description("list a task's runs, newest first")
    .option(...PROFILE_OPTION)
    .option('--limit <n>', 'at most this many (default 100, at most 1000)')
    .option('--cursor <cursor>', 'the page after an earlier list (as it printed)')
    .action(async (task: string, opts: { profile: string; limit?: string; cursor?: string }) => {
      const res = await ctx.client().get(`/api/runs/~/${seg(opts.profile)}/${seg(task)}`, { query: { limit: opts.limit, cursor: opts.cursor } });
      const runs: RunView[] = res.body;
      ctx.print(runs, () =>
        runs.length === 0
          ? 'no runs'
          : table([
              ['RUN', 'STATUS', 'CREATED', 'MODIFIED', 'TOKENS'],
              ...runs.map((r) => [r.name, r.status, when(r.created_at), when(r.modified_at), String(r.usage.input_tokens + r.usage.output_tokens)]),
            ]),
      );
      const next = /<([^>]*)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
      const cursor = next ? new URL(next, ctx.client().origin).searchParams.get('cursor') : null;
      if (cursor && !ctx.json) ctx.stderr.write(`(more: --cursor ${cursor})\n`);
    });

  run
    .command('get <task> <run>')
    .description('show a run and its entries')
    .option(...PROFILE_OPTION)
    .action(async (task: string, name: string, opts: { profile: string }) => {
      const { body } = await ctx.client().get(runPath(opts.profile, task, name));
      ctx.print(body, () => {
        const usage = body.usage ? `, ${body.usage.input_tokens}+${body.usage.output_tokens} tokens, ${body.usage.model_calls} model call${body.usage.model_calls === 1 ? '' : 's'}` : '';
        const head = `${body.name}: ${body.status} (created ${when(body.created_at)}, modified ${when(body.modified_at)}${usage})`;
        return [head, ...(body.results ?? []).flatMap((entry: unknown, id: number) => entryLines(id, entry, { profile: opts.profile, task, run: name }))];
      });
    });

  run
    .command('cancel <task> <run>')
    .description('cancel a live run (it ends in error: "cancelled by <you>")')
    .option(...PROFILE_OPTION)
    .action(async (task: string, name: string, opts: { profile: string }) => {
      const { body } = await ctx.client().post(`${runPath(opts.profile, task, name)}/cancel`);
      ctx.print(body, () => `cancel requested: run ${name}`);
    });

  run
    .command('delete <task> <run>')
    .description('delete a closed run and all it stored (its name can be used again)')
    .option(...PROFILE_OPTION)
    .action(async (task: string, name: string, opts: { profile: string }) => {
      await ctx.client().delete(runPath(opts.profile, task, name));
      ctx.print({ deleted: true, profile: opts.profile, task, run: name }, () => `deleted run ${name}`);
    });

  replayCommands(run, ctx, runPath);

  run
    .command('approve <task> <run> <approval>')
    .description('approve (or with --deny, deny) a tool call the run waits on; <approval> is the id its entry shows')
    .option(...PROFILE_OPTION)
    .option('--deny', 'deny the call: the model gets "denied: <reason>"')
    .option('--reason <text>', 'why (shown to the model when denied)')
    .action(async (task: string, name: string, approval: string, opts: { profile: string; deny?: boolean; reason?: string }) => {
      const { body } = await ctx.client().post(`${runPath(opts.profile, task, name)}/approvals/${seg(approval)}`, {
        json: { approve: !opts.deny, ...(opts.reason === undefined ? {} : { reason: opts.reason }) },
      });
      ctx.print(body, () => `${opts.deny ? 'denied' : 'approved'}: ${approval}`);
    });

  run
    .command('answer <task> <run> <input>')
    .description("answer a question an MCP server asks during the run; <input> is the id its entry shows")
    .option(...PROFILE_OPTION)
    .option('--accept <json>', 'accept, with this content (a JSON object that fits the question\'s schema; {} for a URL question)')
    .option('--decline', 'decline to answer')
    .option('--cancel', 'cancel the question')
    .action(async (task: string, name: string, input: string, opts: { profile: string; accept?: string; decline?: boolean; cancel?: boolean }) => {
      const chosen = [opts.accept !== undefined, opts.decline, opts.cancel].filter(Boolean).length;
      if (chosen !== 1) throw new UsageError('give exactly one of --accept <json>, --decline or --cancel');
      let json: { action: string; content?: Record<string, unknown> } = { action: opts.decline ? 'decline' : 'cancel' };
      if (opts.accept !== undefined) {
        const content = parseObject('--accept', opts.accept);
        json = { action: 'accept', ...(Object.keys(content).length ? { content } : {}) };
      }
      const { body } = await ctx.client().post(`${runPath(opts.profile, task, name)}/inputs/${seg(input)}`, { json });
      ctx.print(body, () => `${json.action === 'accept' ? 'accepted' : json.action === 'decline' ? 'declined' : 'cancelled'}: ${input}`);
    });
}
