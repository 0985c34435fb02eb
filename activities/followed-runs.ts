import type { Logger } from '../src/logger';
import type { Models } from '../src/store/models';
import { followedRuns } from '../src/store/run-text';

/** How often the worker reads who follows which run: one query, whatever the number of runs. */
export const FOLLOWED_POLL_MS = 1_000;

/**
 * The runs someone follows (a stream of the run open in some API process), as this worker last read them: a model
 * call of a run nobody follows asks this set and does no database work for its text. A failed read keeps the last set.
 */
export function pollFollowedRuns(models: Models, logger: Logger, intervalMs = FOLLOWED_POLL_MS) {
  let ids = new Set<string>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const poll = async () => {
    try {
      ids = new Set(await followedRuns(models, new Date()));
    } catch (err) {
      logger.warn({ err }, 'could not read which runs are followed; keeping the last list');
    }
    if (!stopped) timer = setTimeout(() => void poll(), intervalMs);
  };
  void poll();
  return {
    has: (runId: string) => ids.has(runId),
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

export type FollowedRuns = Pick<ReturnType<typeof pollFollowedRuns>, 'has'>;

/** At most this many writes of a followed run's text a second. */
const TEXT_WRITES_PER_SECOND = 5;

/**
 * The text so far of one provider call, written while its run is followed (`followed`, asked as each text arrives, so
 * a follower arriving mid-call gets the text from then on): the latest text at most 5 times a second, one write at a
 * time. `flush` writes the last text when anything was written and says whether anything was; `stop` drops the text
 * not yet written and says the same. A failed write is logged and dropped: the text is a courtesy to followers, never
 * the run's account.
 */
export function runTextWriter(write: (text: string) => Promise<void>, followed: () => boolean, logger: Logger, runId: string) {
  const gapMs = 1_000 / TEXT_WRITES_PER_SECOND;
  let latest: string | undefined;
  let written: string | undefined;
  let wrote = false;
  let lastAt = 0;
  let pending: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const writeLatest = () => {
    timer = undefined;
    const text = latest;
    if (text === undefined || text === written) return pending;
    written = text;
    wrote = true;
    lastAt = Date.now();
    pending = pending.then(() => write(text)).catch((err: unknown) => logger.warn({ run: runId, err }, 'could not write the text so far of a followed run'));
    return pending;
  };
  const finish = async (writeLast: boolean): Promise<boolean> => {
    clearTimeout(timer);
    timer = undefined;
    if (writeLast && wrote) void writeLatest();
    await pending;
    return wrote;
  };
  return {
    onText(text: string) {
      if (!followed()) return;
      latest = text;
      if (timer) return;
      timer = setTimeout(() => void writeLatest(), Math.max(0, lastAt + gapMs - Date.now()));
    },
    flush: () => finish(true),
    stop: () => finish(false),
  };
}
