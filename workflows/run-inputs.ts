import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import { LEVEL } from '../src/contract/constants';
import { INPUT_FAILURE } from '../src/contract/failures';
import { inputAskUpdate, inputStateQuery, inputUpdate } from '../src/contract/messages';
import type { AskedInput, InputAnswer, InputState, RunStatus } from '../src/contract/types';
import type { RunLog } from './run-log';

/** What the run's inputs need of the run: its record's writer, and how long a question may wait. */
export interface InputsRun {
  /** The run's one record write (RunSteps.record: serialized with the main flow's). */
  record(status: RunStatus): Promise<void>;
  /** Time left before the run's time limit (ms). */
  timeLeft(): number;
  /** INPUT_TIMEOUT_S, in ms. */
  timeoutMs: number;
}

/**
 * The questions an MCP server asks a person during one of the run's tool calls (docs/mcp.md, "Inputs"). The call's
 * activity asks (`inputAsk`): the question becomes an entry and the run `pending`. An answer (`input`, from the API)
 * becomes an entry saying the action (never the content) and the run `running` again; the activity polls
 * `inputState` for it. Unanswered by the earlier of INPUT_TIMEOUT_S and the run's time limit (a durable timer), or
 * when its call ends, the run answers for the person (decline, cancel).
 */
export class RunInputs {
  private readonly asked = new Map<string, InputState>();

  constructor(
    private readonly log: RunLog,
    private readonly run: InputsRun,
    private readonly closing: () => boolean,
  ) {
    setHandler(inputStateQuery, (id) => this.asked.get(id) ?? null);
    setHandler(
      inputAskUpdate,
      async (input) => {
        // Asked again (the activity's update retried after its answer was lost): the question stands as it is.
        if (this.asked.has(input.id)) return;
        this.asked.set(input.id, { asked: input });
        log.push({ msg: `input needed: ${input.tool}`, input });
        const left = run.timeLeft();
        void this.expire(input.id, Math.min(run.timeoutMs, left), run.timeoutMs <= left ? `no answer within ${Math.round(run.timeoutMs / 1000)} s, INPUT_TIMEOUT_S` : 'no answer before the run\'s time limit');
        await this.recorded();
      },
      { validator: (_input: AskedInput) => this.refuseWhenClosing() },
    );
    setHandler(
      inputUpdate,
      async (answer) => {
        this.settle(answer);
        await this.recorded();
      },
      {
        validator: (answer) => {
          const input = this.asked.get(answer.id);
          if (!input) throw ApplicationFailure.nonRetryable(`this run has no input "${answer.id}"`, INPUT_FAILURE.unknown);
          if (input.answer) throw ApplicationFailure.nonRetryable(`input "${answer.id}" was already answered (${input.answer.action})`, INPUT_FAILURE.answered);
          this.refuseWhenClosing();
        },
      },
    );
  }

  /**
   * The call that asked ended (answered or not: a server may stop waiting): its questions still open are cancelled,
   * each with an entry. Whether any was; the caller then records the run `running`.
   */
  endOpen(reason: string): boolean {
    const open = [...this.asked.values()].filter((i) => !i.answer);
    for (const input of open) this.settle({ id: input.asked.id, action: 'cancel', by: 'the run', reason });
    return open.length > 0;
  }

  /** Questions not answered yet. */
  get open(): number {
    return [...this.asked.values()].filter((i) => !i.answer).length;
  }

  private refuseWhenClosing(): void {
    if (this.closing()) throw ApplicationFailure.nonRetryable('the run is closing', INPUT_FAILURE.closed);
  }

  private settle(answer: InputAnswer): void {
    const input = this.asked.get(answer.id)!;
    input.answer = { action: answer.action, ...(answer.content ? { content: answer.content } : {}) };
    this.log.push({ msg: answerText(input.asked, answer), time: Date.now(), level: answer.action === 'accept' ? LEVEL.info : LEVEL.warn });
  }

  /** Records the run `pending` while a question is open, else `running`; a failed write (the run closed meanwhile) refuses the update. */
  private async recorded(): Promise<void> {
    try {
      await this.run.record(this.open > 0 ? 'pending' : 'running');
    } catch {
      throw ApplicationFailure.nonRetryable('the run is closing', INPUT_FAILURE.closed);
    }
  }

  /** Declines question `id` unless it is answered within `ms` (a timer: it holds across workers and restarts). */
  private async expire(id: string, ms: number, why: string): Promise<void> {
    const answered = () => this.asked.get(id)!.answer !== undefined;
    if (ms > 0 && (await condition(answered, ms))) return;
    if (answered() || this.closing()) return;
    this.settle({ id, action: 'decline', by: 'the run', reason: why });
    await this.recorded().catch(() => undefined);
  }
}

const PAST = { accept: 'accepted', decline: 'declined', cancel: 'cancelled' } as const;

/** The entry of an answer: the action and who gave it (the content stays out of the run's record). */
function answerText(asked: AskedInput, answer: InputAnswer): string {
  return answer.reason ? `input ${PAST[answer.action]}: ${asked.tool} (${answer.reason})` : `input ${PAST[answer.action]} by ${answer.by}: ${asked.tool}`;
}
