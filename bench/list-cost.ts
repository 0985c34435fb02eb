/**
 * FerretDB's CPU per read that grows with the runs stored (issue 33): a page of a task's run list at 1,000 and 10,000
 * runs in the task, and at 1,000 live runs the reconciler's reads, the live-run count and a run's read by `_id`.
 * Records go in through the store (no workflows). Not part of `npm run bench`:
 *   FERRETDB_BIN=<binary> npx tsx bench/list-cost.ts [runs in the task ...]
 * CPU comes from /proc/<pid>/stat (ticks of 10 ms), so each figure is the mean over enough reads to span many ticks.
 */
import { Types } from 'mongoose';
import { connectDb, type Db } from '../src/store/connect';
import { claimLiveRun, deleteStaleMarks } from '../src/store/live-runs';
import { deleteExpiredCounts } from '../src/store/rate-limit-counts';
import { deferredStarts, findRun, insertRun, listRuns, runCursor } from '../src/store/runs';
import { deleteStaleTexts } from '../src/store/run-text';
import { readServiceMark } from '../src/store/service-state';
import { testEnv } from '../test/helpers/env';
import { startFerretDb } from '../test/helpers/ferretdb';
import { cpuSeconds, round } from './measure';

const TASK = { owner: 'bench', profile: 'p', task: 't' };
const PAGE = 100;
const LIVE = 1_000;

/** Adds runs to the task until it holds `total`, 1 ms apart, with a few sharing a time (as a burst of triggers does). */
async function fill(db: Db, from: number, total: number): Promise<void> {
  const taskId = new Types.ObjectId();
  const base = Date.UTC(2026, 10, 1);
  for (let i = from; i < total; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, total - i) }, (_, k) => {
        const n = i + k;
        return insertRun(db.models, {
          identity: { ...TASK, run: `r${String(n).padStart(6, '0')}` },
          taskId,
          taskVersion: 1,
          runner: 'default',
          payload: { n },
          at: new Date(base + n - (n % 3 === 1 ? 1 : 0)),
        });
      }),
    );
  }
}

/** FerretDB's CPU per call of `read`, in ms, over `times` calls (after one unmeasured call). */
async function cost(pid: number, times: number, read: () => Promise<unknown>): Promise<number> {
  await read();
  const before = cpuSeconds(pid);
  for (let i = 0; i < times; i++) await read();
  return round(((cpuSeconds(pid) - before) * 1000) / times, 2);
}

async function main(): Promise<void> {
  const bin = testEnv.ferretdbBin;
  if (!bin) throw new Error('set FERRETDB_BIN');
  const sizes = process.argv.slice(2).map(Number);
  const ferret = await startFerretDb(bin);
  const db = await connectDb(ferret.url);
  const out: Record<string, unknown> = { bin };
  try {
    let stored = 0;
    for (const size of sizes.length ? sizes : [1_000, 10_000]) {
      await fill(db, stored, size);
      stored = size;
      const first = await listRuns(db.models, TASK, { limit: PAGE });
      const middle = (await listRuns(db.models, TASK, { limit: size / 2 })).items.at(-1)!;
      const after = { limit: PAGE, cursor: runCursor(middle) };
      const second = await listRuns(db.models, TASK, after);
      if (first.items.length !== PAGE || second.items.length !== PAGE) throw new Error('a page came back short');
      const times = size >= 10_000 ? 10 : 30;
      out[`page of ${PAGE} at ${size} runs: first page, ms`] = await cost(ferret.pid, times, () => listRuns(db.models, TASK, { limit: PAGE }));
      out[`page of ${PAGE} at ${size} runs: after a cursor, ms`] = await cost(ferret.pid, times, () => listRuns(db.models, TASK, after));
      out[`any ${PAGE} runs (no filter, no sort: the floor), ms`] = await cost(ferret.pid, times, () => db.models.Run.find({}).limit(PAGE + 1).lean());
      out[`page of ${PAGE} at ${size} runs: status pending, ms`] = await cost(ferret.pid, times, () =>
        listRuns(db.models, TASK, { limit: PAGE }, ['pending']),
      );
      out[`page of ${PAGE} at ${size} runs: status pending or running, ms`] = await cost(ferret.pid, times, () =>
        listRuns(db.models, TASK, { limit: PAGE }, ['pending', 'running']),
      );
    }
    // FerretDB-on-SQLite's cost grows with each document's size (it decodes each from its JSON column): the same 100
    // documents' reads in a collection of ~30-byte documents and of ~1 KiB ones (a run's record is about the latter).
    for (const [label, doc] of [['~30 B', {}], ['~1 KiB', { pad: 'x'.repeat(800), status: 'running', usage: { input_tokens: 1, output_tokens: 2 }, at: new Date() }]] as const) {
      const scratch = db.models.Run.db.collection(`bench_floor_${label.replace(/\W/g, '')}`);
      for (let i = 0; i < 1_000; i += 500) await scratch.insertMany(Array.from({ length: 500 }, (_, k) => ({ n: i + k, ...doc })));
      out[`any ${PAGE} documents of ${label} (no filter, no sort), ms`] = await cost(ferret.pid, 30, () => scratch.find({}).limit(PAGE + 1).toArray());
    }
    // 1,000 live runs of one owner: each holds a place (store/live-runs.ts), and the task above holds their records.
    for (let slot = 0; slot < LIVE; slot++) {
      await db.models.LiveRun.collection.insertOne({ _id: `bench:${slot}` as never, owner: 'bench', run: `r${slot}`, at: new Date() });
    }
    const some = { ...TASK, run: 'r000500' };
    if (!(await findRun(db.models, some))) throw new Error('findRun found no run');
    out[`a run by _id (findRun), ms`] = await cost(ferret.pid, 100, () => findRun(db.models, some));
    out[`live-run count at ${LIVE} places (claimLiveRun refused: 3 probes, the owner's list), ms`] = await cost(ferret.pid, 10, () =>
      claimLiveRun(db.models, { runId: 'x', owner: 'bench', limit: LIVE, staleMs: 3600_000 }),
    );
    out[`reconciler's store reads of a pass (mark, deferred starts, stale marks, counts, texts), ms`] = await cost(ferret.pid, 10, async () => {
      await readServiceMark(db.models, 'reconcile/q');
      await deferredStarts(db.models, 'q', 500);
      await deleteStaleMarks(db.models, 3600_000);
      await deleteExpiredCounts(db.models);
      await deleteStaleTexts(db.models);
    });
  } finally {
    await db.close();
    await ferret.stop();
  }
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
