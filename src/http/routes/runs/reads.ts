import crypto from 'node:crypto';
import type { Context } from 'koa';
import { LRUCache } from 'lru-cache';
import { dependencyUnavailable, notFound } from '../../../errors';
import { unavailableDependency } from '../../../dependencies';
import { resolveEntry, StoredContentMissing } from '../../../store/run-content';
import { closeRun, entryCount, findRun, listRuns, readEntries, runCursor, runWorkflowId, type RunRecord } from '../../../store/runs';
import { createTextCache } from '../../../store/text-cache';
import { createTtlCache } from '../../../ttl-cache';
import { closeFromWorkflow, GONE_REASON } from '../../../temporal/run-endings';
import { announceRunClosed } from '../../../temporal/webhook-start';
import type { LiveView, RunReader } from '../../../temporal/run-reader';
import { isTerminal } from '../../../../workflows/constants';
import type { HeldEntry, ResultEntry, RunIdentity, RunStatus, RunUsage } from '../../../../workflows/types';
import type { AppDeps } from '../../deps';
import type { Page } from '../../../store/keyset';
import { presentRun } from '../../presenters/run';
import { etagFresh } from '../../not-modified';

/** A run list's answer stops adding runs past this size (the first run always goes in); `Link` gives the rest. */
const LIST_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Reading runs. A closed run answers from its record (an ETag from its identity and last change, so a 304 costs no
 * rendering); a live run from the workflow's query, shared by its polls; a run whose workflow cannot answer within
 * LIVE_READ_WAIT_MS from its record and what this process already knows (`Run-Source: record`). A read also ends a
 * run whose workflow closed without recording its end, and heals a lost start. Large contents are stored apart from
 * the entries (references): they are loaded here, and cached, since they never change.
 */
export function runReads(deps: AppDeps, reader: RunReader, healLostStart: (record: RunRecord) => Promise<void>) {
  const { models } = deps.db;
  const cacheChars = Math.floor((deps.config.CONTENT_CACHE_MB * 1024 * 1024) / 2);
  // Run records as reads see them, kept for RUN_RECORD_CACHE_MS (refreshed ahead while polled): polls cost no database
  // read each. Another API process may serve a run deleted with its task that long. A miss is not kept: a run is
  // readable as soon as its trigger answered.
  const records = createTtlCache<RunRecord | null>(deps.config.RUN_RECORD_CACHE_MS, { refreshAhead: true, keep: (record) => record !== null });
  const texts = createTextCache(models, cacheChars);
  /** Closed runs' rendered bodies, by run and last change (a closed run never changes again). */
  const closedBodies = new LRUCache<string, string>({ maxSize: cacheChars, sizeCalculation: (body) => Math.max(1, body.length) });
  /** A live run's rendered body, per query answer (the reader hands out the same view until it refreshes). */
  const liveBodies = new WeakMap<LiveView, string>();

  const resolve = (entries: HeldEntry[]): Promise<ResultEntry[]> => Promise.all(entries.map((e) => resolveEntry(e, texts.load)));
  const storedEntries = (record: RunRecord) => ({
    count: entryCount(record),
    read: (from: number, to: number) => readEntries(models, record, from, to),
    createdAt: record.created_at.getTime(),
  });
  const allEntries = (record: RunRecord) => readEntries(models, record, 0, entryCount(record));
  /** `head`: the run's name and creation time (a record, or what a query said when the record cannot be read). */
  const render = async (head: { name: string; created_at: Date | number }, run: { status: RunStatus | string; modifiedAt: Date | number; entries: HeldEntry[]; usage?: RunUsage | null }) =>
    JSON.stringify(presentRun({ name: head.name, status: run.status, results: await resolve(run.entries), createdAt: head.created_at, modifiedAt: run.modifiedAt, usage: run.usage }));

  /** A closed run's ETag: it never changes once closed, so its identity and last change name its body. */
  const closedEtag = (record: RunRecord, modifiedAt: number, count: number) =>
    `"${crypto.createHash('sha1').update(`${record._id}\n${record.created_at.getTime()}\n${modifiedAt}\n${count}`).digest('base64url')}"`;

  const sendClosed = async (ctx: Context, record: RunRecord, from?: LiveView) => {
    const modifiedAt = from ? from.modifiedAt : record.modified_at.getTime();
    const count = from ? from.entries.length : entryCount(record);
    const etag = closedEtag(record, modifiedAt, count);
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'private, no-cache');
    ctx.set('Run-Source', from ? 'live' : 'record');
    if (etagFresh(ctx)) {
      ctx.status = 304;
      return;
    }
    let body = closedBodies.get(etag);
    if (body === undefined) {
      body = await render(record, from ?? { status: record.status, modifiedAt, entries: await allEntries(record), usage: record.usage });
      closedBodies.set(etag, body);
    }
    ctx.type = 'application/json';
    ctx.body = body;
  };

  const sendLive = async (ctx: Context, head: { name: string; created_at: Date | number }, view: LiveView) => {
    let body = liveBodies.get(view);
    if (body === undefined) {
      body = await render(head, view);
      liveBodies.set(view, body);
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Run-Source', 'live');
    ctx.type = 'application/json';
    ctx.body = body;
  };

  /** The record's run, with the entries this process knows beyond its last write. */
  const sendRecord = async (ctx: Context, record: RunRecord, known: HeldEntry[] = []) => {
    const stored = entryCount(record);
    const entries = known.length > stored ? known : await allEntries(record);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Run-Source', 'record');
    ctx.type = 'application/json';
    ctx.body = await render(record, { status: record.status, modifiedAt: record.modified_at, entries, usage: record.usage });
  };

  /** The record again, straight from the store, after its run was ended here or by its workflow. */
  const reload = async (id: RunIdentity) => {
    records.forget(runWorkflowId(id));
    reader.forget(runWorkflowId(id));
    return findRun(models, id);
  };

  return {
    /** Entries as reads present them: references resolved (through this process's copies of stored texts). */
    resolve,

    /** Forgets this process's copies of a run's record (the task was deleted, or the run changed through it). */
    forgetRecords(prefix: string) {
      records.forgetPrefix(prefix);
    },

    /** Forgets everything this process holds of a deleted run (`record`, as it was): its next read is a 404. */
    forgetRun(record: RunRecord) {
      records.forget(record._id);
      reader.forget(record._id);
      closedBodies.delete(closedEtag(record, record.modified_at.getTime(), entryCount(record)));
    },

    /** Throws 404 when the run is not there, or was deleted while it was being read. */
    async read(ctx: Context, id: RunIdentity): Promise<void> {
      try {
        await read(ctx, id);
      } catch (err) {
        if (!(err instanceof StoredContentMissing)) throw err;
        // Contents go before the record when a run is deleted: a record still there is one being deleted.
        if (await findRun(models, id)) deps.logger.warn({ run: runWorkflowId(id) }, 'run read while it was being deleted: its stored contents are gone');
        records.forget(runWorkflowId(id));
        throw notFound(`run "${id.run}"`);
      }
    },

    /**
     * A page of a task's runs, each with its results as of its last record write. Large runs make the page stop
     * early (the rest follow the `Link`), so an answer stays bounded in bytes. A run deleted meanwhile is left out.
     */
    async list(task: { owner: string; profile: string; task: string }, page: Parameters<typeof listRuns>[2]): Promise<Page<string>> {
      const found = await listRuns(models, task, page);
      const bodies: string[] = [];
      let bytes = 0;
      for (const [i, record] of found.items.entries()) {
        let body: string;
        try {
          body = await render(record, { status: record.status, modifiedAt: record.modified_at, entries: await allEntries(record), usage: record.usage });
        } catch (err) {
          if (err instanceof StoredContentMissing && !(await findRun(models, record._id))) continue;
          throw err;
        }
        if (bodies.length > 0 && bytes + body.length > LIST_MAX_BYTES) return { items: bodies, next: runCursor(found.items[i - 1]!) };
        bodies.push(body);
        bytes += body.length;
      }
      return { items: bodies, next: found.next };
    },
  };

  async function read(ctx: Context, id: RunIdentity): Promise<void> {
    let record: RunRecord | null;
    try {
      record = await records.get(runWorkflowId(id), () => findRun(models, id));
    } catch (err) {
      if (unavailableDependency(err) !== 'mongodb') throw err;
      return readLiveWithoutStore(ctx, id);
    }
    if (!record) throw notFound(`run "${id.run}"`);
    if (isTerminal(record.status)) return sendClosed(ctx, record);
    const live = await reader.read(record._id, storedEntries(record));
    if (live.kind === 'live') {
      if (!isTerminal(live.view.status)) return sendLive(ctx, record, live.view);
      // The workflow has ended the run and is writing its end: the next read takes the closed record.
      records.forget(record._id);
      reader.forget(record._id);
      return sendClosed(ctx, record, live.view);
    }
    if (live.kind === 'closed' || (live.kind === 'gone' && record.started)) {
      const closing = { models, temporal: deps.temporal, logger: deps.logger, config: deps.config };
      if (live.kind === 'closed') await closeFromWorkflow(closing, record._id, live.status);
      else if (await closeRun(models, record._id, GONE_REASON)) {
        deps.logger.warn({ run: record._id }, 'run ended: its workflow is gone');
        await announceRunClosed(closing, record._id);
      }
      const fresh = await reload(id);
      if (!fresh) throw notFound(`run "${id.run}"`);
      return isTerminal(fresh.status) ? sendClosed(ctx, fresh) : sendRecord(ctx, fresh);
    }
    if (live.kind === 'gone') await healLostStart(record);
    // The record as the store has it now (the cached one may be a status behind), with the entries known beyond it.
    records.forget(record._id);
    const current = (await records.get(record._id, () => findRun(models, id))) ?? record;
    return sendRecord(ctx, current, live.kind === 'unavailable' ? live.entries : []);
  }

  /**
   * MongoDB did not answer: a live run whose workflow can still tell it all (its entries from the first, or this
   * process has the rest) answers from the query; anything else is a 503 naming MongoDB.
   */
  async function readLiveWithoutStore(ctx: Context, id: RunIdentity): Promise<void> {
    const workflowId = runWorkflowId(id);
    const live = await reader.read(workflowId, { count: 0, read: () => Promise.reject(dependencyUnavailable('mongodb')) });
    if (live.kind !== 'live' || isTerminal(live.view.status)) throw dependencyUnavailable('mongodb');
    await sendLive(ctx, { name: id.run, created_at: live.view.createdAt }, live.view);
  }
}

export type RunReads = ReturnType<typeof runReads>;
