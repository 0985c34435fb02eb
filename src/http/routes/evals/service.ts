import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { badRequest, conflict, notFound } from '../../../errors';
import { isTerminal } from '../../../contract/constants';
import { WORKFLOW, evalCancelSignal, evalWorkflowId, type RunEvalWorkflow } from '../../../contract/messages';
import type { RunUsage } from '../../../contract/types';
import { checkProblem } from '../../../evals/checks';
import { scorecard, type ScoredItem } from '../../../evals/scorecard';
import { deleteEval, evalEnded, findEval, insertEval, listEvals, newEvalId, setEvalStatus, type EvalItem, type EvalRecord } from '../../../store/evals';
import { NAME_PATTERN, NAME_RULE } from '../../../store/names';
import { findRun, listRuns, runWorkflowId, type RunRecord } from '../../../store/runs';
import { findTask } from '../../../store/tasks';
import type { AppDeps } from '../../deps';
import { checkTemplate } from '../tasks/schema';
import type { EvalBody } from './schema';

export interface TaskOf {
  owner: string;
  profile: string;
  task: string;
}

/** URLs of a task path family: its evals and its runs. */
export interface EvalUrls {
  eval: (t: TaskOf, id: string) => string;
  run: (t: TaskOf, run: string) => string;
}

/** A task's evals (docs/evals.md): make one, read, list, cancel, delete. */
export function evalService(deps: AppDeps) {
  const { models } = deps.db;
  const temporal: Client = deps.temporal;

  const loadTask = async (t: TaskOf) => {
    const task = await findTask(models, { owner: t.owner, profile: t.profile, name: t.task });
    if (!task) throw notFound(`task "${t.profile}/${t.task}"`);
    return task;
  };
  const loadEval = async (t: TaskOf, id: string) => {
    const record = await findEval(models, evalWorkflowId({ ...t, id }));
    if (!record) throw notFound(`eval "${id}"`);
    return record;
  };

  /** The closed runs `body.runs` names (replays never among `last`); 400/409 naming the field otherwise. */
  async function originals(t: TaskOf, runs: EvalBody['runs']): Promise<RunRecord[]> {
    if ('last' in runs) {
      const page = await listRuns(models, t, { limit: runs.last }, ['ready', 'error'], { replays: false });
      if (page.items.length === 0) throw badRequest(`runs.last: task "${t.task}" has no closed runs to replay`);
      return page.items as RunRecord[];
    }
    if (new Set(runs.names).size !== runs.names.length) throw badRequest('runs.names: expected unique run names');
    return Promise.all(
      runs.names.map(async (name, i) => {
        const run = NAME_PATTERN.test(name) ? await findRun(models, { ...t, run: name }) : null;
        if (!run) throw badRequest(`runs.names.${i}: task "${t.task}" has no run "${name}"`);
        if (!isTerminal(run.status)) throw conflict(`runs.names.${i}: run "${name}" is ${run.status}: only a closed run (ready or error) can be replayed`, 'run_live');
        return run;
      }),
    );
  }

  /** The replays' run records of an eval, by run name (one query by `_id`). */
  async function replayRecords(record: EvalRecord): Promise<Map<string, RunRecord>> {
    const ids = record.items.map((i) => runWorkflowId({ owner: record.owner, profile: record.profile, task: record.task, run: i.run }));
    const found = await models.Run.find({ _id: { $in: ids } }, { name: 1, status: 1, usage: 1, created_at: 1, modified_at: 1 }).lean<RunRecord[]>();
    return new Map(found.map((r) => [r.name, r]));
  }

  /** An eval as the API shows it; `withScores`: its per-variant scorecard too (GET of one eval, 201). */
  async function present(record: EvalRecord, urls: EvalUrls, withScores: boolean) {
    const t = { owner: record.owner, profile: record.profile, task: record.task };
    const body = {
      id: record.id,
      url: urls.eval(t, record.id),
      status: record.status,
      ...(record.reason !== undefined ? { reason: record.reason } : {}),
      runs: record.items.length / Math.max(1, record.spec.variants.length),
      variants: record.spec.variants,
      tools: record.spec.tools,
      checks: record.spec.checks,
      concurrency: record.spec.concurrency,
      created_at: record.created_at.toISOString(),
      modified_at: record.modified_at.toISOString(),
    };
    if (!withScores) return body;
    const runs = await replayRecords(record);
    const items = record.items.map((item: EvalItem): ScoredItem => {
      const run = runs.get(item.run);
      const usage = run?.usage as RunUsage | undefined;
      const url = urls.run(t, item.run);
      return {
        variant: item.variant,
        run: item.run,
        status: run?.status ?? (evalEnded(record.status) ? 'not_made' : 'waiting'),
        checks: item.checks ?? [],
        tokens: (usage?.input_tokens ?? 0) + (usage?.output_tokens ?? 0),
        ...(run && isTerminal(run.status) ? { duration_ms: run.modified_at.getTime() - run.created_at.getTime() } : {}),
        diff_url: `${url}/diff`,
      };
    });
    return { ...body, scorecard: scorecard(record.spec.variants.map((v) => v.name), items) };
  }

  return {
    loadTask,

    /** Makes an eval and starts its workflow. 400 naming the field for a bad body, a prompt, a check or a name too long. */
    async create(t: TaskOf, body: EvalBody, urls: EvalUrls) {
      const task = await loadTask(t);
      body.variants.forEach((v, i) => {
        if (v.prompt !== undefined) checkTemplate(v.prompt, `variants.${i}.prompt`, deps.config);
        if (v.runner !== undefined && v.model === undefined) throw badRequest(`variants.${i}.model: required with a runner`);
      });
      body.checks.forEach((c, i) => {
        const problem = checkProblem(c);
        if (problem) throw badRequest(`checks.${i}.${problem}`);
      });
      const runs = await originals(t, body.runs);
      const id = newEvalId();
      const items: EvalItem[] = [];
      for (const [k, run] of runs.entries()) {
        for (const v of body.variants) {
          const name = `${id}.${v.name}.${run.name}`;
          const field = 'last' in body.runs ? 'runs.last' : `runs.names.${k}`;
          if (!NAME_PATTERN.test(name)) throw badRequest(`${field}: the replay of run "${run.name}" would be named "${name}", past the run name limit (${NAME_RULE}); shorten the variant's name or pick other runs`);
          items.push({ variant: v.name, original: run.name, original_id: run._id, run: name });
        }
      }
      const _id = evalWorkflowId({ ...t, id });
      const record: EvalRecord = {
        _id, id, ...t, task_id: task._id, status: 'pending', items,
        spec: { variants: body.variants, tools: body.tools, checks: body.checks, concurrency: body.concurrency },
        created_at: new Date(), modified_at: new Date(),
      };
      await insertEval(models, record);
      try {
        await temporal.workflow.start<RunEvalWorkflow>(WORKFLOW.eval, {
          workflowId: _id,
          taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
          args: [{ evalId: _id, concurrency: body.concurrency, items: items.length }],
        });
      } catch (err) {
        await deleteEval(models, _id);
        throw err;
      }
      return present(record, urls, true);
    },

    async read(t: TaskOf, id: string, urls: EvalUrls) {
      return present(await loadEval(t, id), urls, true);
    },

    async list(t: TaskOf, page: { limit: number; cursor?: string }, urls: EvalUrls) {
      await loadTask(t);
      const found = await listEvals(models, t, page);
      return { items: await Promise.all(found.items.map((r) => present(r, urls, false))), next: found.next };
    },

    /** Asks the eval to stop: 409 `eval_closed` once it ended. */
    async cancel(t: TaskOf, id: string, by: string) {
      const record = await loadEval(t, id);
      if (evalEnded(record.status)) throw conflict(`eval "${id}" is ${record.status}`, 'eval_closed');
      try {
        await temporal.workflow.getHandle(record._id).signal(evalCancelSignal, { by });
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        await setEvalStatus(models, record._id, 'cancelled', { reason: `cancelled by ${by}` });
      }
    },

    /** Deletes an ended eval (its record and workflow execution); its replay runs stay, runs of the task. 409 `eval_live` before it ended. */
    async delete(t: TaskOf, id: string) {
      const record = await loadEval(t, id);
      if (!evalEnded(record.status)) throw conflict(`eval "${id}" is ${record.status}: only an ended eval can be deleted (cancel it first)`, 'eval_live');
      await deleteEval(models, record._id);
      await temporal.workflowService
        .deleteWorkflowExecution({ namespace: temporal.options.namespace, workflowExecution: { workflowId: record._id } })
        .catch((err: unknown) => deps.logger.debug({ eval: record._id, err }, 'eval workflow execution not deleted'));
    },
  };
}

export type EvalService = ReturnType<typeof evalService>;
