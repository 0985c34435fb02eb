import { z } from 'zod';
import { evalBody, evalId } from '../routes/evals/schema';
import { evalSummaryView, evalView } from '../routes/evals/view';
import { taskParams } from '../routes/tasks/schema';
import { defaultProfile, errors, linkHeader, pathParams } from './common';
import type { Operation } from './operation';
import { LIST_DEFAULT_LIMIT, pageQuery } from '../presenters/page';

/** A task's evals (docs/evals.md), on either variant's task path. */

const evalExample = (evalBase: string, runBase: string) => ({
  id: 'e1x2y3',
  url: `${evalBase}/e1x2y3`,
  status: 'ready',
  runs: 1,
  variants: [{ name: 'mini', model: 'gpt-4o-mini' }],
  tools: 'recorded',
  checks: [{ type: 'contains', value: 'Paris' }],
  concurrency: 4,
  created_at: '2026-11-28T10:00:00.000Z',
  modified_at: '2026-11-28T10:01:00.000Z',
  scorecard: [
    {
      name: 'mini',
      runs: { done: 1, total: 1 },
      checks: { passed: 1, total: 1 },
      tokens: 230,
      p50_duration_ms: 1840,
      diffs: [{ run: 'e1x2y3.mini.monday', status: 'ready', checks_passed: 1, checks_total: 1, diff_url: `${runBase}/e1x2y3.mini.monday/diff` }],
    },
  ],
});

export function evalOperations(): Operation[] {
  const tags = ['evals'];
  const variants = [
    { which: 'Variant A', path: '/api/profiles/{user}/{profile}/tasks/{task}/evals', params: { ...taskParams.shape, profile: defaultProfile }, runBase: 'http://127.0.0.1:8080/api/profiles/alice/default/tasks/haiku/runs' },
    { which: 'Variant B', path: '/api/tasks/{user}/{profile}/{task}/evals', params: taskParams.shape, runBase: 'http://127.0.0.1:8080/api/runs/alice/default/haiku' },
  ];
  const ops: Operation[] = [];
  for (const { which, path, params, runBase } of variants) {
    const one = `${path}/{id}`;
    const evalBase = `http://127.0.0.1:8080${path.replace('{user}', 'alice').replace('{profile}', 'default').replace('{task}', 'haiku')}`;
    const example = evalExample(evalBase, runBase);
    const { scorecard: _scores, ...summary } = example;
    const idParams = pathParams({ ...params, id: evalId.meta({ description: 'The eval’s id', example: 'e1x2y3' }) });
    const read = { description: 'The eval, with its scorecard per variant', schema: evalView, examples: { ready: { summary: 'An eval that ended', value: example } } };
    const missing = errors({ 400: 'A bad name or id in the path', 404: 'No such task or eval' });
    ops.push(
      {
        method: 'post',
        path,
        summary: `Start an eval (${which})`,
        description: 'Replays some of the task’s closed runs under each variant, with recorded tools, and scores them with the checks (docs/evals.md).',
        tags,
        session: true,
        params: { path: pathParams(params) },
        body: {
          schema: evalBody,
          examples: {
            last: { summary: 'The last 20 runs, two models', value: { runs: { last: 20 }, variants: [{ name: 'mini', model: 'gpt-4o-mini' }, { name: 'big', model: 'gpt-4o' }], checks: [{ type: 'same_as_original' }] } },
            names: { summary: 'Named runs, another prompt, a JSON check', value: { runs: { names: ['monday'] }, variants: [{ name: 'json', prompt: 'Answer in JSON: {{ text }}' }], checks: [{ type: 'json_schema', schema: { type: 'object', required: ['answer'] } }], concurrency: 2 } },
          },
        },
        responses: {
          201: { ...read, description: 'Started' },
          ...errors({
            400: 'A bad field (named): `tools` "live", a check’s invalid pattern or schema, a replay name past the run name limit, a run the task does not have',
            404: 'No such task',
            409: ['`run_live`: a named run has not ended', 'run_live', 'runs.names.0: run "monday" is running: only a closed run (ready or error) can be replayed'],
          }),
        },
      },
      {
        method: 'get',
        path,
        summary: `A task’s evals, newest first (${which})`,
        tags,
        session: true,
        params: { path: pathParams(params), query: pageQuery(LIST_DEFAULT_LIMIT) },
        responses: { 200: { description: 'A page of evals (the next one in `Link`)', schema: z.array(evalSummaryView), headers: linkHeader, examples: { one: { summary: 'One eval', value: [summary] } } }, ...errors({ 400: 'A bad name in the path or query', 404: 'No such task' }) },
      },
      { method: 'get', path: one, summary: `Read an eval and its scorecard (${which})`, tags, session: true, params: { path: idParams }, responses: { 200: read, ...missing } },
      {
        method: 'post',
        path: `${one}/cancel`,
        summary: `Cancel an eval (${which})`,
        description: 'Starts no more replays, cancels those not ended; the eval ends `cancelled`.',
        tags,
        session: true,
        params: { path: idParams },
        responses: {
          202: { description: 'The eval’s URL', schema: z.object({ url: z.url() }), examples: { one: { summary: 'The eval', value: { url: example.url } } } },
          ...missing,
          ...errors({ 409: ['`eval_closed`: it ended', 'eval_closed', 'eval "e1x2y3" is ready'] }),
        },
      },
      {
        method: 'delete',
        path: one,
        summary: `Delete an ended eval (${which})`,
        description: 'Its replay runs stay: they are runs of the task, deleted as any run is.',
        tags,
        session: true,
        params: { path: idParams },
        responses: { 204: { description: 'Deleted' }, ...missing, ...errors({ 409: ['`eval_live`: cancel it first', 'eval_live', 'eval "e1x2y3" is running: only an ended eval can be deleted (cancel it first)'] }) },
      },
    );
  }
  return ops;
}
