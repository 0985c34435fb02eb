import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { WorkflowNotFoundError } from '@temporalio/client';
import { AppError, RateLimited } from '../src/errors';
import { isTerminal } from '../src/contract/constants';
import { cancelSignal } from '../src/contract/messages';
import { EVAL_FAILURE } from '../src/contract/failures';
import { createReplay } from '../src/replays/create';
import { finalAnswer } from '../src/replays/diff';
import { checkSchema, runCheck } from '../src/evals/checks';
import { findEval, setEvalStatus, type EvalItem, type EvalRecord } from '../src/store/evals';
import { findRun, runWorkflowId, type RunRecord } from '../src/store/runs';
import { StoredContentMissing } from '../src/store/run-content';
import { liveRunLifetimeMs } from '../src/runs/trigger';
import { createRateLimits } from '../src/http/rate-limits';
import type { ActivityDeps } from './deps';

/** A replay's run _id (= its workflow id) from its eval and item. */
export const replayRunId = (e: Pick<EvalRecord, 'owner' | 'profile' | 'task'>, item: Pick<EvalItem, 'run'>) => runWorkflowId({ owner: e.owner, profile: e.profile, task: e.task, run: item.run });

/** Items an eval's scoring reads at once (scoreEval). */
const SCORE_AT_ONCE = 8;

/** The steps of an eval (workflows/eval.ts). Each is idempotent: a worker restarted mid-eval repeats none of its effects. */
export function createEvalActivities(deps: Pick<ActivityDeps, 'db' | 'config' | 'logger' | 'temporal'>) {
  const { models } = deps.db;
  // An eval's replays are triggers of their task like any other (TRIGGER_LIMIT_PER_MINUTE, counted with the API's).
  const limits = createRateLimits(deps.db, deps.config);
  const replayDeps = { models, temporal: deps.temporal, config: deps.config, logger: deps.logger };

  return {
    /** The eval is under way (a no-op once it ended or when it was deleted). */
    async markEvalRunning(input: { evalId: string }): Promise<void> {
      await setEvalStatus(models, input.evalId, 'running');
    },

    /**
     * Makes item `index`'s replay, named `<eval>.<variant>.<original>` (createReplay: a name used before answers with
     * that run, so a step repeated after a worker restart makes no second replay). Null when there is nothing to wait
     * for: the eval or the original is gone, or the replay cannot be made (its reason goes to the log and the item
     * shows no run). Each replay counts as a trigger of the task (TRIGGER_LIMIT_PER_MINUTE, as `POST …/replays` does;
     * given back when the replay was there already). A limit reached (triggers, live runs) is waited out through the
     * retry policy.
     */
    async startEvalReplay(input: { evalId: string; index: number }): Promise<{ runId: string } | null> {
      const record = await findEval(models, input.evalId);
      const item = record?.items[input.index];
      if (!record || !item || record.status === 'cancelled') return null;
      const original = await findRun(models, item.original_id);
      if (!original) return null;
      const variant = record.spec.variants.find((v) => v.name === item.variant);
      const { name: _name, ...overrides } = variant ?? { name: '' };
      try {
        const giveBack = await limits.trigger(String(original.task_id));
        const made = await createReplay(replayDeps, { original: original as RunRecord, name: item.run, overrides, tools: record.spec.tools, eval: record.id }).catch(async (err: unknown) => {
          await giveBack();
          throw err;
        });
        if (!made.created) await giveBack();
        return { runId: runWorkflowId(made.identity) };
      } catch (err) {
        if (err instanceof RateLimited) {
          throw ApplicationFailure.create({ type: EVAL_FAILURE.limited, message: err.message, category: ApplicationFailureCategory.BENIGN, nextRetryDelay: err.retryAfterSeconds * 1000 });
        }
        if (err instanceof AppError && err.status < 500) {
          deps.logger.warn({ eval: input.evalId, run: item.run, code: err.code, err: err.message }, 'eval replay not made');
          return null;
        }
        throw err;
      }
    },

    /** One look at a replay: returns once it is closed or gone; while it is open, a benign retryable failure. */
    async awaitEvalReplay(input: { runId: string }): Promise<string> {
      const record = await findRun(models, input.runId);
      if (!record) return 'deleted';
      if (isTerminal(record.status)) return record.status;
      if (Date.now() > record.created_at.getTime() + liveRunLifetimeMs(deps.config)) return `${record.status} past its time limit`;
      throw ApplicationFailure.create({ type: EVAL_FAILURE.replayStillOpen, message: `the replay is ${record.status}`, category: ApplicationFailureCategory.BENIGN });
    },

    /**
     * Runs the eval's checks on each replay's answer and ends it `ready` with their results. Only the final answers are
     * read (each original's once, whatever the number of variants), a few items at a time, with a heartbeat: an eval of
     * 100 runs under 8 variants scores within the step's time, not past it into retries that never end.
     */
    async scoreEval(input: { evalId: string }): Promise<void> {
      const record = await findEval(models, input.evalId);
      if (!record) return;
      const checks = record.spec.checks.map((c) => checkSchema.parse(c));
      const answerOf = (run: RunRecord | null) => (run && isTerminal(run.status) ? finalAnswer(models, run).catch((err: unknown) => (err instanceof StoredContentMissing ? null : Promise.reject(err))) : Promise.resolve(null));
      const originals = new Map<string, Promise<string | null>>();
      const originalAnswer = (id: string) => {
        let answer = originals.get(id);
        if (!answer) originals.set(id, (answer = findRun(models, id).then((run) => answerOf(run as RunRecord | null))));
        return answer;
      };
      const items: EvalItem[] = new Array(record.items.length);
      let next = 0;
      const lane = async () => {
        while (next < record.items.length) {
          const index = next++;
          const item = record.items[index]!;
          const replay = (await findRun(models, replayRunId(record, item))) as RunRecord | null;
          // No replay (never made, or deleted): every check fails, as for a replay without an answer.
          const [answer, original] = replay ? await Promise.all([answerOf(replay), originalAnswer(item.original_id)]) : [null, null];
          items[index] = { ...item, checks: checks.map((check) => runCheck(check, answer, original)) };
          Context.current().heartbeat(index);
        }
      };
      await Promise.all(Array.from({ length: SCORE_AT_ONCE }, lane));
      await setEvalStatus(models, input.evalId, 'ready', { items });
    },

    /** Ends the eval (`cancelled` or `error`, with why); a no-op once ended. */
    async endEval(input: { evalId: string; status: 'cancelled' | 'error'; reason: string }): Promise<void> {
      await setEvalStatus(models, input.evalId, input.status, { reason: input.reason });
    },

    /** Asks each of the eval's replays that has not ended to stop, as `POST <run path>/cancel` does. */
    async cancelEvalReplays(input: { evalId: string; by: string }): Promise<void> {
      const record = await findEval(models, input.evalId);
      if (!record) return;
      for (const item of record.items) {
        const runId = replayRunId(record, item);
        const run = await findRun(models, runId);
        if (!run || isTerminal(run.status)) continue;
        try {
          await deps.temporal.workflow.getHandle(runId).signal(cancelSignal, { by: input.by });
        } catch (err) {
          // Not started yet (or gone): the reconciler ends such a record as it ends any run whose workflow is gone.
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
      }
    },
  };
}

export type EvalActivities = ReturnType<typeof createEvalActivities>;
