import { isGrpcServiceError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { AppError, conflict, notFound } from '../../../errors';
import { findRun, type RunRecord } from '../../../store/runs';
import type { Runs } from '../../../runs';
import { closedStatusName, GONE_REASON } from '../../../runs/endings';
import { describeRunExecution } from '../../../runs/executions';
import { approvalUpdate, cancelSignal, inputStateQuery, inputUpdate } from '../../../contract/messages';
import { isTerminal } from '../../../contract/constants';
import { APPROVAL_FAILURE, INPUT_FAILURE } from '../../../contract/failures';
import type { InputState, RunIdentity } from '../../../contract/types';
import { checkInputAnswer } from './input-answer';
import type { ApprovalBody, InputBody } from './schema';

const runClosed = (run: string) => conflict(`run "${run}" has already ended`, 'run_closed');

/**
 * A decision the server aborts (or rejects for a closing workflow task) while the run runs is sent this many times in
 * all, pausing DELIVERY_PAUSE_MS, then twice as long each time (50, 100, 200, 400 ms: about 0.75 s at most).
 */
const DELIVERY_ATTEMPTS = 5;
const DELIVERY_PAUSE_MS = 50;

/**
 * 503 under Temporal's code (docs/runs.md) for what the run's workflow did not take: `what` happened, and nothing was
 * `done`; the caller sends it again.
 */
const notTaken = (what: string, done: string) => new AppError(503, 'temporal_unavailable', `the run's workflow ${what}; nothing was ${done}, send it again`);

/**
 * Control of a live run: cancel it, decide a tool call waiting for approval, answer its MCP server's question. Each
 * goes to the run's workflow (a signal, an update), which is the run's only writer; `changed` tells the reads of this
 * process to forget what they hold of the run. Throws 404 for an unknown run, 409 `run_closed` for a run that has ended.
 */
export function runControl(runs: Runs, changed: (runId: string) => void) {
  const { models, temporal } = runs.deps;

  /** The run's record as the store has it now (not a cached copy: a closed run must answer 409 at once). */
  const liveRecord = async (id: RunIdentity): Promise<RunRecord> => {
    const record = await findRun(models, id);
    if (!record) throw notFound(`run "${id.run}"`);
    if (isTerminal(record.status)) throw runClosed(id.run);
    return record;
  };

  /**
   * The workflow is not there to be told: a run never started ends here as cancelled (nothing else will start it:
   * starts need a `pending` record); one whose workflow closed without its end is ended as its workflow ended, and
   * the answer is 409, as for any closed run.
   */
  const withoutWorkflow = async (record: RunRecord, id: RunIdentity, by: string | undefined): Promise<void> => {
    if (!record.started && by !== undefined) {
      if (await runs.close(record._id, `cancelled by ${by}`)) {
        // A trigger that read the record pending may be starting its workflow right now: told too, it ends itself.
        await temporal.workflow.getHandle(record._id).signal(cancelSignal, { by }).catch(() => undefined);
        changed(record._id);
        return;
      }
      throw runClosed(id.run);
    }
    const execution = await temporal.workflow
      .getHandle(record._id)
      .describe()
      .catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return null;
        throw err;
      });
    const status = execution && closedStatusName(execution.raw.workflowExecutionInfo?.status ?? 0);
    if (!execution) await runs.close(record._id, GONE_REASON);
    else if (status) await runs.closeFromWorkflow(record._id, status, execution);
    changed(record._id);
    throw runClosed(id.run);
  };

  return {
    /** Asks the run's workflow to stop (idempotent while it closes). */
    async cancel(id: RunIdentity, by: string): Promise<void> {
      const record = await liveRecord(id);
      try {
        await temporal.workflow.getHandle(record._id).signal(cancelSignal, { by });
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        await withoutWorkflow(record, id, by);
      }
      changed(record._id);
    },

    /** Decides approval `approvalId`: 404 when the run never asked it, 409 `approval_decided` once decided. */
    async decide(id: RunIdentity, approvalId: string, decision: ApprovalBody, by: string): Promise<void> {
      const record = await liveRecord(id);
      const handle = temporal.workflow.getHandle(record._id);
      const send = () => handle.executeUpdate(approvalUpdate, { args: [{ id: approvalId, approve: decision.approve, reason: decision.reason, by }] });
      await deliver(record, id, send, notFound(`approval "${approvalId}" of run "${id.run}"`), (err) => {
        const type = err.cause instanceof ApplicationFailure ? err.cause.type : undefined;
        if (type === APPROVAL_FAILURE.unknown) return notFound(`approval "${approvalId}" of run "${id.run}"`);
        if (type === APPROVAL_FAILURE.decided) return conflict(err.cause!.message, 'approval_decided');
        if (type === APPROVAL_FAILURE.closed) return runClosed(id.run);
        return undefined;
      });
    },

    /**
     * Answers input `inputId` (a question of an MCP server, docs/mcp.md "Inputs"): 404 when the run never asked it,
     * 409 `input_answered` once answered, 400 naming the field when `content` does not fit the question's schema.
     */
    async answer(id: RunIdentity, inputId: string, answer: InputBody, by: string): Promise<void> {
      const record = await liveRecord(id);
      const handle = temporal.workflow.getHandle(record._id);
      const unknown = notFound(`input "${inputId}" of run "${id.run}"`);
      let state: InputState | null;
      try {
        state = await handle.query(inputStateQuery, inputId);
      } catch (err) {
        if (err instanceof WorkflowNotFoundError && !record.started) throw unknown;
        if (err instanceof WorkflowNotFoundError) return withoutWorkflow(record, id, undefined);
        if (workflowTasksFail(err)) {
          throw notTaken(`did not answer about input "${inputId}" (its workflow tasks fail)`, 'answered');
        }
        throw err;
      }
      if (!state) throw unknown;
      if (state.answer) throw conflict(`input "${inputId}" was already answered (${state.answer.action})`, 'input_answered');
      checkInputAnswer(state.asked, answer);
      const send = () => handle.executeUpdate(inputUpdate, { args: [{ id: inputId, action: answer.action, ...(answer.content ? { content: answer.content } : {}), by }] });
      await deliver(record, id, send, unknown, (err) => {
        const type = err.cause instanceof ApplicationFailure ? err.cause.type : undefined;
        if (type === INPUT_FAILURE.unknown) return unknown;
        if (type === INPUT_FAILURE.answered) return conflict(err.cause!.message, 'input_answered');
        if (type === INPUT_FAILURE.closed) return runClosed(id.run);
        return undefined;
      });
    },
  };

  /**
   * Sends an update to the run's workflow (`send`) and answers as the run does: `runsAnswer` maps its validator's
   * failure to the API's (undefined for another failure); `unstarted` is the answer while its workflow is not started.
   */
  async function deliver(record: RunRecord, id: RunIdentity, send: () => Promise<unknown>, unstarted: Error, runsAnswer: (err: WorkflowUpdateFailedError) => Error | undefined): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await send();
        break;
      } catch (err) {
        // Not started yet (or its start is under way): it cannot have asked anything. Left as it is.
        if (err instanceof WorkflowNotFoundError && !record.started && attempt === 1) throw unstarted;
        if (err instanceof WorkflowNotFoundError) return withoutWorkflow(record, id, undefined);
        if (!(err instanceof WorkflowUpdateFailedError) && !updateAborted(err)) throw err;
        const answer = err instanceof WorkflowUpdateFailedError ? runsAnswer(err) : undefined;
        if (answer) throw answer;
        // Not the run's answer: the server rejected the update because the workflow closed (or completed a task)
        // before a worker took it, or aborted it with the workflow task that carried it (many decisions on one run
        // at once): nothing changed. A run that has ended answers 409; one still running is sent it again, a few
        // times with a short pause, and answers as the run does.
        if (!(await isRunning(record._id))) throw runClosed(id.run);
        if (attempt === DELIVERY_ATTEMPTS) {
          throw err instanceof WorkflowUpdateFailedError ? runClosed(id.run) : notTaken(`did not take the decision: Temporal aborted or refused it ${DELIVERY_ATTEMPTS} times (its workflow tasks were dropped or fail)`, 'decided');
        }
        await new Promise((resolve) => setTimeout(resolve, DELIVERY_PAUSE_MS * 2 ** (attempt - 1)));
      }
    }
    changed(record._id);
  }

  /**
   * The server aborted the update without the workflow deciding it (FAILED_PRECONDITION: "unable to perform workflow
   * execution update due to unexpected workflow task failure", or "workflow update was aborted"): the workflow task
   * that carried it failed or was dropped, as happens when twenty decisions land on one run at once while it ends; or
   * refused it ("... due to Workflow Task in failed state"): the run's workflow tasks fail, as on a worker running a
   * broken build, until a good one takes them (test/runs/approval-delivery.test.ts).
   * Nothing was applied (an aborted update never reaches its handler), so it is answered as a decision that came too
   * late, or sent again while the run still runs (DELIVERY_ATTEMPTS: twice in a row happened once in twelve runs of
   * test/runs/approval-races.test.ts, the worker told "Workflow task not found" as it completed the task).
   */
  function updateAborted(err: unknown): boolean {
    return failedPrecondition(err, /workflow task failure|update was aborted/i) || workflowTasksFail(err);
  }

  /**
   * Temporal refused a query or an update "due to Workflow Task in failed state": the run's workflow tasks fail (a
   * worker running a broken build) and nothing reaches the workflow until a good build takes them.
   */
  function workflowTasksFail(err: unknown): boolean {
    return failedPrecondition(err, /workflow task in failed state/i);
  }

  /** A FAILED_PRECONDITION from Temporal (as the error, or its cause) whose details match `detail`. */
  function failedPrecondition(err: unknown, detail: RegExp): boolean {
    const grpc = (err as { cause?: unknown } | undefined)?.cause ?? err;
    return isGrpcServiceError(grpc) && grpc.code === 9 && detail.test(grpc.details ?? grpc.message);
  }

  /** Whether the run's workflow is still running (false when it has closed or is gone). */
  async function isRunning(workflowId: string): Promise<boolean> {
    const execution = await describeRunExecution(temporal, workflowId);
    return execution?.running ?? false;
  }
}

export type RunControl = ReturnType<typeof runControl>;
