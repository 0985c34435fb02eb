import type { Command } from 'commander';
import type { RunDiff } from '../../replays/diff';
import { table, type Context } from './context';
import { UsageError } from './errors';

const TOOLS = ['recorded', 'live', 'recorded_then_live'];

interface ReplayOptions {
  profile: string;
  name?: string;
  runner?: string;
  model?: string;
  prompt?: string;
  taskVersion?: string;
  tools?: string;
}

/**
 * `ptr run replay` (POST <run path>/replays) and `ptr run diff` (GET <replay path>/diff), docs/replays.md.
 * `runPath`: a run's Variant B path.
 */
export function replayCommands(run: Command, ctx: Context, runPath: (profile: string, task: string, name: string) => string) {
  run
    .command('replay <task> <run>')
    .description('run a closed run again, its tools played back from what it recorded (docs/replays.md)')
    .option('-p, --profile <name>', 'the profile', 'default')
    .option('--name <name>', 'the replay\'s run name (default <run>.r<n>)')
    .option('--runner <runner>', 'another provider: openai or anthropic (then --model too)')
    .option('--model <model>', 'another model')
    .option('--prompt <template>', 'a prompt template instead of the task version\'s')
    .option('--task-version <n>', 'another version of the task')
    .option('--tools <mode>', `where tool calls get their results: ${TOOLS.join(', ')} (default recorded_then_live)`)
    .action(async (task: string, name: string, opts: ReplayOptions) => {
      if (opts.tools !== undefined && !TOOLS.includes(opts.tools)) throw new UsageError(`--tools: expected ${TOOLS.join(', ')}`);
      const version = opts.taskVersion === undefined ? undefined : Number(opts.taskVersion);
      if (version !== undefined && !(Number.isInteger(version) && version > 0)) throw new UsageError('--task-version: expected a whole number from 1');
      const json = {
        ...(opts.name !== undefined ? { name: opts.name } : {}),
        ...(opts.runner !== undefined ? { runner: opts.runner } : {}),
        ...(opts.model !== undefined ? { model: opts.model } : {}),
        ...(opts.prompt !== undefined ? { prompt: opts.prompt } : {}),
        ...(version !== undefined ? { task_version: version } : {}),
        ...(opts.tools !== undefined ? { tools: opts.tools } : {}),
      };
      const res = await ctx.client().post(`${runPath(opts.profile, task, name)}/replays`, { json });
      const url = res.body.url as string;
      const replay = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
      const doc = { run: replay, url, created: res.status === 201 };
      ctx.print(doc, () => `${doc.created ? 'started' : 'already there (nothing started)'}: replay ${replay} of ${name}, ${url} (follow it: ptr run follow ${task} ${replay})`);
    });

  run
    .command('diff <task> <replay>')
    .description('show how a closed replay differs from its original: answers, tool calls, usage, duration')
    .option('-p, --profile <name>', 'the profile', 'default')
    .action(async (task: string, name: string, opts: { profile: string }) => {
      const { body } = await ctx.client().get(`${runPath(opts.profile, task, name)}/diff`);
      const diff = body as RunDiff;
      ctx.print(diff, () => {
        const side = (s: RunDiff['original']) => [s.name, s.status, String(s.usage.input_tokens + s.usage.output_tokens), String(s.usage.tool_calls), `${s.duration_ms} ms`];
        return [
          ...table([['RUN', 'STATUS', 'TOKENS', 'TOOL CALLS', 'DURATION'], side(diff.original), side(diff.replay)]),
          '',
          ...(diff.tool_calls.length === 0 ? ['no tool calls'] : table([['CHANGE', 'TOOL', 'REPLAYED'], ...diff.tool_calls.map((c) => [c.change, c.tool, c.replayed ? 'yes' : ''])])),
          '',
          diff.answer_diff ?? '(the answers differ too much to diff)',
        ];
      });
    });
}
