import { z } from 'zod';
import { pageQuery, RUN_LIST_DEFAULT_LIMIT } from '../presenters/page';
import { runView } from '../presenters/run';
import { lastEventId } from '../routes/runs/events';
import { approvalBody, approvalId, inputBody, inputId, replayBody, runListQuery, runName, variantAParameters, variantATrigger } from '../routes/runs/schema';
import { runDiffView } from '../presenters/run-diff';
import { taskParams } from '../routes/tasks/schema';
import { defaultProfile, errorBody, errors, linkHeader, pathParams, runUrl } from './common';
import type { Operation, ResponseSpec } from './operation';

/** Runs on both path families (docs/runs.md): trigger (A), read, list, delete, cancel, replays and diffs, approvals, inputs, events. */

const runExample = {
  name: 'first',
  status: 'ready',
  results: [
    { msg: 'run started', time: 1795451310882, level: 30 },
    { msg: 'prompt', exchange: { role: 'user', content: 'Write a haiku about tides' } },
    { msg: 'final answer', lastMessage: { role: 'assistant', content: 'The sea breathes in, out…' } },
  ],
  created_at: '2026-11-23T16:28:30.882Z',
  modified_at: '2026-11-23T16:28:31.120Z',
  usage: { input_tokens: 14, output_tokens: 17, model_calls: 1, tool_calls: 0 },
};

const EVENTS_EXAMPLE = [
  ': run events',
  '',
  'id: 0\nevent: entry\ndata: {"msg":"run started","time":1795451310882,"level":30}',
  '',
  'event: status\ndata: {"status":"running","modified_at":"2026-11-23T16:28:30.882Z"}',
  '',
  'event: end\ndata: {"status":"ready","modified_at":"2026-11-23T16:28:31.120Z"}',
  '',
].join('\n');

const accepted: ResponseSpec = { description: 'Accepted: the run’s URL', schema: runUrl, examples: { run: { summary: 'The run', value: { url: 'http://127.0.0.1:8080/api/runs/alice/default/haiku/first' } } } };

export function runOperations(): Operation[] {
  const tags = ['runs'];
  const families = [
    { which: 'Variant A', runs: '/api/profiles/{user}/{profile}/tasks/{task}/runs', taskShape: { ...taskParams.shape, profile: defaultProfile } },
    { which: 'Variant B', runs: '/api/runs/{user}/{profile}/{task}', taskShape: taskParams.shape },
  ];
  const ops: Operation[] = [
    {
      method: 'put',
      path: '/api/profiles/{user}/{profile}/tasks/{task}/runs/{run}',
      summary: 'Trigger a run (Variant A)',
      description: 'Idempotent by run name: the same name answers 200 and the same URL, and starts nothing.',
      tags,
      session: true,
      params: { path: pathParams({ ...families[0]!.taskShape, run: runName }) },
      body: {
        schema: variantATrigger,
        required: false,
        description: 'The trigger data: a flat map of string to string',
        check: variantAParameters,
        examples: { topic: { summary: 'One parameter', value: { parameters: { topic: 'tides' } } } },
      },
      responses: {
        200: { ...accepted, description: 'The run existed: nothing started' },
        201: { ...accepted, description: 'Created and started' },
        ...errors({
          400: 'A bad name, or `parameters.<key>` not a string',
          404: 'No such task (or a profile other than `default`)',
          413: 'A body over `BODY_LIMIT_BYTES`',
          429: ['`trigger_limit` or `live_runs_limit`: nothing was started; `Retry-After` says when to retry', 'trigger_limit', 'TRIGGER_LIMIT_PER_MINUTE: more than 6000 triggers a minute through this task; nothing was started'],
        }),
        503: {
          description: 'A dependency did not answer: the run may have been recorded, and a retry with its name runs it once',
          schema: errorBody,
          examples: {
            recorded: {
              summary: 'temporal_unavailable',
              value: {
                error: {
                  code: 'temporal_unavailable',
                  message: 'Temporal did not answer in time; the run "first" may have been recorded: retry with the same run name and it runs once',
                  run: 'first',
                  url: 'http://127.0.0.1:8080/api/profiles/alice/default/tasks/haiku/runs/first',
                },
              },
            },
          },
        },
      },
    },
  ];
  for (const { which, runs, taskShape } of families) {
    const taskPath = pathParams(taskShape);
    const runParams = pathParams({ ...taskShape, run: runName });
    const run = `${runs}/{run}`;
    const missing = errors({ 400: 'A bad run name (`path.run`)', 404: 'No such run (or another user’s)' });
    ops.push(
      {
        method: 'get',
        path: runs,
        summary: `List a task’s runs (${which})`,
        description: 'Newest first. A live run shows its record’s last write; `status` filters on it.',
        tags,
        session: true,
        params: { path: taskPath, query: pageQuery(RUN_LIST_DEFAULT_LIMIT).extend(runListQuery.shape) },
        responses: { 200: { description: 'The runs', schema: z.array(runView), headers: linkHeader }, ...errors({ 400: 'A bad name, `limit`, `cursor` or `status`', 404: 'No such task' }) },
      },
      {
        method: 'get',
        path: run,
        summary: `Read a run (${which})`,
        description:
          'Poll until `status` is `ready` or `error`. A closed run has an `ETag`; `If-None-Match` gets a 304. `?include=queue` adds to a live run its task queue\'s backlog (`queue`: Temporal\'s estimate, and when it was read).',
        tags,
        session: true,
        params: {
          path: runParams,
          query: z.object({
            include: z
              .enum(['queue'])
              .optional()
              .meta({ description: '`queue`: a live run shows `queue: {backlog_estimate, as_of}`, the tasks waiting in its task queue (every run\'s, fairness aside: Temporal gives no run\'s place), read at most every QUEUE_STATS_CACHE_MS' }),
          }),
        },
        responses: {
          200: {
            description: 'The run',
            schema: runView,
            headers: z.object({
              'Run-Source': z.enum(['live', 'record']).meta({ description: 'The workflow (`live`) or the run record (`record`)' }),
              ETag: z.string().optional().meta({ description: 'A closed run’s' }),
            }),
            examples: { ready: { summary: 'A run that ended', value: runExample } },
          },
          304: { description: 'Not modified (a closed run, `If-None-Match`)' },
          ...errors({ 400: 'A bad run name (`path.run`), or `query.include` other than `queue`', 404: 'No such run (or another user’s)' }),
        },
      },
      {
        method: 'delete',
        path: run,
        summary: `Delete a closed run (${which})`,
        description: 'Its name is free again.',
        tags,
        session: true,
        params: { path: runParams },
        responses: {
          204: { description: 'Deleted' },
          ...missing,
          ...errors({ 409: ['`run_live`: the run is `pending` or `running` (cancel it first)', 'run_live', 'run "first" is running: only a closed run (ready or error) can be deleted'] }),
        },
      },
      {
        method: 'get',
        path: `${run}/events`,
        summary: `Follow a run live (${which})`,
        description: 'Server-Sent Events: `entry` (id = index in `results`), `status`, `end`; a `: keep-alive` comment every EVENTS_HEARTBEAT_MS.',
        tags,
        session: true,
        params: { path: runParams, header: z.object({ 'Last-Event-ID': lastEventId.optional().meta({ description: 'Resume after this entry' }) }) },
        responses: {
          200: { description: 'The event stream', type: 'text/event-stream', schema: z.string(), examples: { closed: { summary: 'A run that ended', value: EVENTS_EXAMPLE } } },
          ...missing,
        },
      },
      {
        method: 'post',
        path: `${run}/cancel`,
        summary: `Cancel a live run (${which})`,
        description: 'The run ends `error`: "cancelled by <user>".',
        tags,
        session: true,
        params: { path: runParams },
        responses: { 202: accepted, ...missing, ...errors({ 409: ['`run_closed`: the run has ended', 'run_closed', 'run "first" has already ended'] }) },
      },
      {
        method: 'post',
        path: `${run}/replays`,
        summary: `Replay a closed run (${which})`,
        description:
          'A new run of the same task with the original’s trigger data and task version, what the body overrides, and its tool calls answered from the original’s recorded results per `tools` (docs/replays.md). Named `name`, or `<run>.r<n>`. Counted as a trigger of the task; runs at the lowest priority.',
        tags,
        session: true,
        params: { path: runParams },
        body: {
          schema: replayBody,
          required: false,
          examples: {
            recorded: { summary: 'The same run, its tools played back', value: { tools: 'recorded' } },
            model: { summary: 'Another model, new tool calls live', value: { model: 'gpt-4.1-mini', tools: 'recorded_then_live' } },
          },
        },
        responses: {
          201: { description: 'Created: the replay’s URL', schema: runUrl, examples: { run: { summary: 'The replay', value: { url: 'http://127.0.0.1:8080/api/runs/alice/default/haiku/first.r1' } } } },
          200: { description: 'A run of that `name` exists: its URL, nothing started', schema: runUrl },
          ...errors({
            400: ['A bad field (named: `tools`, `runner`, `model` when the runner changes, `task_version`, `prompt` as `invalid_template`, `name` when the generated one would pass the name limit); `missing_key`: neither the task nor the server has a key for `runner`', 'missing_key', 'runner: task "haiku" has no key for "anthropic" and this server has no operator key (ANTHROPIC_API_KEY) for it'],
            404: 'No such run (or another user’s), or its task is gone',
            409: ['`run_live`: the run is `pending` or `running`', 'run_live', 'run "first" is running: only a closed run (ready or error) can be replayed'],
          }),
        },
      },
      {
        method: 'get',
        path: `${run}/diff`,
        summary: `Diff a replay from its original (${which})`,
        description: 'The final answers’ unified diff, the tool calls side by side (`same`, `added`, `removed`, `changed` arguments), and each run’s usage and duration (docs/replays.md).',
        tags,
        session: true,
        params: { path: runParams },
        responses: {
          200: { description: 'The diff', schema: runDiffView },
          ...errors({
            400: 'A bad run name (`path.run`)',
            404: ['No such run; `not_a_replay`: the run is not a replay; or its original was deleted', 'not_a_replay', 'run "first" is not a replay'],
            409: ['`run_live`: the replay or its original is `pending` or `running`', 'run_live', 'run "first.r1" is running: a diff needs both runs closed'],
          }),
        },
      },
      {
        method: 'post',
        path: `${run}/approvals/{approval}`,
        summary: `Decide a tool call waiting for approval (${which})`,
        tags,
        session: true,
        params: { path: runParams.extend({ approval: approvalId.meta({ description: 'The id of the run’s approval entry' }) }) },
        body: {
          schema: approvalBody,
          examples: {
            approve: { summary: 'Run the call', value: { approve: true } },
            deny: { summary: 'Deny it', value: { approve: false, reason: 'not this one' } },
          },
        },
        responses: {
          202: accepted,
          ...errors({
            400: 'A bad name, or no boolean `approve`',
            404: 'No such run, or an approval the run never asked',
            409: ['`approval_decided` or `run_closed`', 'approval_decided', 'approval "3f0c…" was already decided'],
          }),
        },
      },
      {
        method: 'post',
        path: `${run}/inputs/{input}`,
        summary: `Answer a question of an MCP server (${which})`,
        description: 'The run’s entry `{"msg": "input needed: <tool>", "input": {"id", "tool", "message", "schema" | "url"}}` asks it (docs/mcp.md, “Inputs”). `content` goes with `accept` only and must fit `schema`; the server gets the answer, the run’s entries only the action.',
        tags,
        session: true,
        params: { path: runParams.extend({ input: inputId.meta({ description: 'The id of the run’s input entry' }) }) },
        body: {
          schema: inputBody,
          examples: {
            accept: { summary: 'Answer the form', value: { action: 'accept', content: { name: 'Ada Lovelace', check: true } } },
            decline: { summary: 'Decline to answer', value: { action: 'decline' } },
          },
        },
        responses: {
          202: accepted,
          ...errors({
            400: ['A bad name or action, or `content` that does not fit the question’s schema (the field is named)', 'invalid_request', 'content.email: must match format "email"'],
            404: 'No such run, or an input the run never asked',
            409: ['`input_answered` or `run_closed`', 'input_answered', 'input "3f0c…" was already answered (accept)'],
          }),
        },
      },
    );
  }
  return ops;
}
