import crypto from 'node:crypto';
import type { Context } from 'koa';
import { LRUCache } from 'lru-cache';
import { badRequest, dependencyUnavailable, notFound } from '../../../errors';
import { unavailableDependency } from '../../../dependencies';
import { resolveEntry, StoredContentMissing } from '../../../store/run-content';
import { entryCount, findRun, listRuns, readEntries, runCursor, runWorkflowId, type RunRecord } from '../../../store/runs';
import { createTextCache } from '../../../store/text-cache';
import type { Runs } from '../../../runs';
import { createRunReadModel } from '../../../runs/read-model';
import type { LiveView, RunReader } from '../../../runs/live-reader';
import { isTerminal } from '../../../contract/constants';
import type { HeldEntry, ResultEntry, RunIdentity } from '../../../contract/types';
import type { AppDeps } from '../../deps';
import type { Page } from '../../../store/keyset';
import { renderRecord, renderRun, type RunBody, type RunHead } from '../../presenters/run-record';
import { presentRun, type RunView } from '../../presenters/run';
import { etagFresh } from '../../not-modified';
import { createQueueStats } from '../../../runs/queue-stats';

/** A run list's answer stops adding runs past this size (the first run always goes in); `Link` gives the rest. */
const LIST_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Reading runs over HTTP, on the run's read model (src/runs/read-model.ts: records, live state, settling ends). A
 * closed run answers from its record (an ETag from its identity and last change, so a 304 costs no
 * rendering); a live run from the workflow's query, shared by its polls; a run whose workflow cannot answer within
 * LIVE_READ_WAIT_MS from its record and what this process already knows (`Run-Source: record`). A read also ends a
 * run whose workflow closed without recording its end, and heals a lost start. Large contents are stored apart from
 * the entries (references): they are loaded here, and cached, since they never change.
 */
export function runReads(deps: AppDeps, lifecycle: Runs, reader: RunReader, healLostStart: (record: RunRecord) => Promise<void>) {
  const { models } = deps.db;
  const cacheChars = Math.floor((deps.config.CONTENT_CACHE_MB * 1024 * 1024) / 2);
  // The run's records and live state (src/runs/read-model.ts); what is here renders them for HTTP.
  const model = createRunReadModel({ models, logger: deps.logger, lifecycle, reader, healLostStart, recordCacheMs: deps.config.RUN_RECORD_CACHE_MS });
  const { current } = model;
  const records = { get: model.record, forget: model.forgetRecord };
  const texts = createTextCache(models, cacheChars);
  /** Closed runs' rendered bodies, by run and last change (a closed run never changes again). */
  const closedBodies = new LRUCache<string, string>({ maxSize: cacheChars, sizeCalculation: (body) => Math.max(1, body.length) });
  /** A live run's rendered body, per query answer (the reader hands out the same view until it refreshes). */
  const liveBodies = new WeakMap<LiveView, string>();
  const queueStats = createQueueStats({ temporal: deps.temporal, namespace: deps.config.TEMPORAL_NAMESPACE, logger: deps.logger }, deps.config.QUEUE_STATS_CACHE_MS);

  /**
   * `?include=queue` on a live run: its task queue's backlog from Temporal's statistics (runs/queue-stats.ts), added to
   * the body only when asked (the run object is otherwise as it always was). Not on a closed run: nothing of it waits.
   */
  const wantsQueue = (ctx: Context): boolean => {
    const include = ctx.query.include;
    if (include === undefined) return false;
    if (include !== 'queue') throw badRequest(`query.include: expected "queue" (the only thing a run read adds), got ${JSON.stringify(include).slice(0, 100)}`);
    return true;
  };
  const withQueue = async (body: string, asked: boolean): Promise<string> => {
    if (!asked) return body;
    const queue = await queueStats.get(deps.config.TEMPORAL_TASK_QUEUE);
    return queue ? `${body.slice(0, -1)},"queue":${JSON.stringify(queue)}}` : body;
  };

  const resolve = (entries: HeldEntry[]): Promise<ResultEntry[]> => Promise.all(entries.map((e) => resolveEntry(e, texts.load)));
  /** A run's JSON as reads answer it (presenters/run-record.ts: webhooks send the same). */
  const render = async (head: RunHead, run: RunBody) => JSON.stringify(await renderRun(head, run, texts.load));
  const renderStored = async (record: RunRecord) => JSON.stringify(await renderRecord(models, record, texts.load));

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
      body = from ? await render(record, from) : await renderStored(record);
      closedBodies.set(etag, body);
    }
    ctx.type = 'application/json';
    ctx.body = body;
  };

  const sendLive = async (ctx: Context, head: RunHead, view: LiveView) => {
    let body = liveBodies.get(view);
    if (body === undefined) {
      body = await render(head, view);
      liveBodies.set(view, body);
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Run-Source', 'live');
    ctx.type = 'application/json';
    ctx.body = await withQueue(body, wantsQueue(ctx));
  };

  /** The record's run, with the entries this process knows beyond its last write. */
  const sendRecord = async (ctx: Context, record: RunRecord, known: HeldEntry[]) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Run-Source', 'record');
    ctx.type = 'application/json';
    const body = known.length > entryCount(record) ? await render(record, { status: record.status, modifiedAt: record.modified_at, entries: known, usage: record.usage }) : await renderStored(record);
    ctx.body = await withQueue(body, wantsQueue(ctx));
  };

  return {
    /** Entries as reads present them: references resolved (through this process's copies of stored texts). */
    resolve,

    current,

    view,

    status,

    /** Forgets this process's copies of a run's record (the task was deleted, or the run changed through it). */
    forgetRecords: model.forgetRecords,

    /** Forgets everything this process holds of a deleted run (`record`, as it was): its next read is a 404. */
    forgetRun(record: RunRecord) {
      model.forgetRun(record._id);
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
     * `statuses`: only the runs whose record has one of them; `replays: false` leaves out replays.
     */
    async list(task: { owner: string; profile: string; task: string }, page: Parameters<typeof listRuns>[2], statuses?: Parameters<typeof listRuns>[3], options?: Parameters<typeof listRuns>[4]): Promise<Page<string>> {
      const found = await listRuns(models, task, page, statuses, options);
      const bodies: string[] = [];
      let bytes = 0;
      for (const [i, record] of found.items.entries()) {
        let body: string;
        try {
          body = await renderStored(record);
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

  /**
   * The run object as `read` answers it (live from the workflow, else the record), or null when there is no such
   * run: for callers that present a run otherwise (the MCP server). Rendered each call, not cached.
   */
  async function view(id: RunIdentity): Promise<RunView | null> {
    const record = await records.get(runWorkflowId(id), () => findRun(models, id));
    if (!record) return null;
    if (isTerminal(record.status)) return renderRecord(models, record, texts.load);
    const run = await current(record);
    if (!run) return null;
    if (run.kind === 'live') return renderRun(record, run.view, texts.load);
    const { record: fresh, known } = run;
    return known.length > entryCount(fresh)
      ? renderRun(fresh, { status: fresh.status, modifiedAt: fresh.modified_at, entries: known, usage: fresh.usage }, texts.load)
      : renderRecord(models, fresh, texts.load);
  }

  /**
   * The run's status as its record has it, without asking its workflow (a query costs a workflow task): its name,
   * status, times and usage, and as `results` only its last entry, read when the run is `pending` (it may wait on an
   * approval, which the record holds) or has ended (its reason). null when there is no such run. The record is
   * written at each status change, so the status is as current as a read's; a run whose workflow ended without
   * writing its end shows its last status until a read (or the reconciler) settles it.
   */
  async function status(id: RunIdentity): Promise<Pick<RunView, 'name' | 'status' | 'results' | 'created_at' | 'modified_at' | 'usage'> | null> {
    const record = await records.get(runWorkflowId(id), () => findRun(models, id));
    if (!record) return null;
    const count = entryCount(record);
    const wanted = count > 0 && record.status !== 'running';
    const results = wanted ? await resolve(await readEntries(models, record, count - 1, count)) : [];
    return presentRun({ name: record.name, status: record.status, results, createdAt: record.created_at, modifiedAt: record.modified_at, usage: record.usage, replay: record.replay, eval: record.eval, trace_id: record.trace_id });
  }

  async function read(ctx: Context, id: RunIdentity): Promise<void> {
    wantsQueue(ctx); // a bad `include` is a 400 whatever the run's state
    let record: RunRecord | null;
    try {
      record = await records.get(runWorkflowId(id), () => findRun(models, id));
    } catch (err) {
      if (unavailableDependency(err) !== 'mongodb') throw err;
      return readLiveWithoutStore(ctx, id);
    }
    if (!record) throw notFound(`run "${id.run}"`);
    if (isTerminal(record.status)) return sendClosed(ctx, record);
    const run = await current(record);
    if (!run) throw notFound(`run "${id.run}"`);
    if (run.kind === 'live') return isTerminal(run.view.status) ? sendClosed(ctx, record, run.view) : sendLive(ctx, record, run.view);
    return isTerminal(run.record.status) ? sendClosed(ctx, run.record) : sendRecord(ctx, run.record, run.known);
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
