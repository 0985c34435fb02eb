import { ApplicationFailure, CancellationScope, condition, setHandler } from '@temporalio/workflow';
import { APPROVAL_FAILURE } from '../src/contract/failures';
import { approvalUpdate, cancelSignal, runQuery } from '../src/contract/messages';
import type { ApprovalDecision } from '../src/contract/types';
import { RunInputs, type InputsRun } from './run-inputs';
import type { RunLog } from './run-log';

/**
 * What reaches a run from outside while it runs: the `run` query (its live view), a cancel (which cancels `work`,
 * the scope its steps run in, and with it the call in flight), decisions on the tool calls waiting for approval, and
 * answers to the questions its MCP servers ask (run-inputs.ts).
 */
export class RunControls {
  /** The run's work runs in this scope: a cancel request cancels it. */
  readonly work = new CancellationScope();
  /** Who cancelled the run, once someone did. */
  private by: string | undefined;
  /** Tool calls that asked for approval, by id: decided once. */
  private readonly approvals = new Map<string, { tool: string; decision?: ApprovalDecision }>();

  /** Questions the run's MCP servers asked during its tool calls, once `serveInputs` was called. */
  inputs: RunInputs | undefined;

  constructor(private readonly log: RunLog) {
    setHandler(runQuery, (query) => log.snapshot(query?.from));
    setHandler(cancelSignal, ({ by }) => {
      if (this.by !== undefined) return;
      this.by = by;
      this.work.cancel();
    });
    setHandler(
      approvalUpdate,
      (decision) => {
        this.approvals.get(decision.id)!.decision = decision;
      },
      {
        validator: (decision) => {
          const asked = this.approvals.get(decision.id);
          if (!asked) throw ApplicationFailure.nonRetryable(`this run has no approval "${decision.id}"`, APPROVAL_FAILURE.unknown);
          if (asked.decision) throw ApplicationFailure.nonRetryable(`approval "${decision.id}" was already decided by ${asked.decision.by}`, APPROVAL_FAILURE.decided);
          if (this.closing) throw ApplicationFailure.nonRetryable('the run is closing', APPROVAL_FAILURE.closed);
        },
      },
    );
  }

  /** Takes questions from the run's MCP call activities and answers to them from now on (the run's steps record them). */
  serveInputs(run: InputsRun): void {
    this.inputs = new RunInputs(this.log, run, () => this.closing);
  }

  /** The run was cancelled or has ended: nothing more is decided or answered. */
  private get closing(): boolean {
    return this.by !== undefined || this.log.status === 'ready' || this.log.status === 'error';
  }

  /** Who cancelled the run (undefined while no one has). */
  get cancelledBy(): string | undefined {
    return this.by;
  }

  /** Notes approval `id` asked for `tool`: a decision on it is taken from now on. */
  ask(id: string, tool: string): void {
    this.approvals.set(id, { tool });
  }

  /** The decision on approval `id`, once made within `timeoutMs`; undefined when none came in time. */
  async decision(id: string, timeoutMs: number): Promise<ApprovalDecision | undefined> {
    if (timeoutMs <= 0 || !(await condition(() => this.approvals.get(id)!.decision !== undefined, timeoutMs))) return undefined;
    return this.approvals.get(id)!.decision;
  }
}
