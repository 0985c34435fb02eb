import { isDuplicateKey } from './connect';
import { escapeKeys, unescapeKeys } from './document-keys';
import { markInstallsChanged } from './install-changes';
import { keysetQuery, type Page, type PageRequest } from './keyset';
import type { Models, ServletDoc } from './models';
import { releaseModule, storeModule } from './modules';

export const VISIBILITIES = ['public', 'private'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** A tool as its servlet's `describe` listed it; `description` is always there (the Python client reads it). */
export interface ToolRecord {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface ServletRef {
  owner: string;
  name: string;
}

/** A servlet as the API shows it: the stored document's fields (models.ts) with its visibility and described tools typed. */
export type ServletRecord = Pick<ServletDoc, 'owner' | 'name' | 'description' | 'content_address' | 'created_at' | 'modified_at'> & { visibility: Visibility; schema: { tools: ToolRecord[] } };

const fields = {
  _id: 0,
  owner: 1,
  name: 1,
  description: 1,
  visibility: 1,
  content_address: 1,
  schema: 1,
  created_at: 1,
  modified_at: 1,
} as const;

/**
 * A stored servlet as code reads it: `schema` is stored with FerretDB-safe keys (document-keys.ts); this gives it
 * back as the servlet described it. Use it on any servlet document read directly from the model.
 */
export function fromServletDoc<T extends { schema?: unknown }>(doc: T): T & { schema: { tools: ToolRecord[] } } {
  const schema = unescapeKeys(doc.schema) as { tools?: ToolRecord[] } | undefined;
  return { ...doc, schema: { tools: schema?.tools ?? [] } };
}

const fromDoc = (doc: ServletRecord | null) => (doc ? fromServletDoc(doc) : null);

export async function findServlet(models: Models, ref: ServletRef): Promise<ServletRecord | null> {
  return fromDoc(await models.Servlet.findOne({ owner: ref.owner, name: ref.name }, fields).lean<ServletRecord>());
}

/** The viewer's own servlet, or another user's public one; null otherwise (the caller answers 404 either way). */
export async function findVisibleServlet(models: Models, viewer: string, ref: ServletRef): Promise<ServletRecord | null> {
  const onlyPublic = ref.owner === viewer ? {} : { visibility: 'public' as const };
  return fromDoc(await models.Servlet.findOne({ owner: ref.owner, name: ref.name, ...onlyPublic }, fields).lean<ServletRecord>());
}

export interface PublishInput extends ServletRef {
  /** undefined: keep the stored value on a replace; '' and private on a create. */
  description?: string;
  visibility?: Visibility;
  contentAddress: string;
  bytes: Uint8Array;
  tools: ToolRecord[];
}

/**
 * Creates the servlet or replaces its module (and the description and visibility given). The module is stored
 * under its content address first, so a servlet never refers to missing bytes; the module the servlet used
 * before is deleted when nothing refers to it any more.
 */
export async function publishServlet(models: Models, input: PublishInput, now = new Date()): Promise<{ servlet: ServletRecord; created: boolean }> {
  const ref = { owner: input.owner, name: input.name };
  await storeModule(models, input.contentAddress, input.bytes, now);
  let created = false;
  let previous: ServletRecord | null = null;
  // two rounds cover a concurrent create or delete of the same name between the read and the write
  for (let attempt = 0; attempt < 2; attempt++) {
    previous = await findServlet(models, ref);
    const set = {
      description: input.description ?? previous?.description ?? '',
      visibility: input.visibility ?? previous?.visibility ?? 'private',
      content_address: input.contentAddress,
      schema: escapeKeys({ tools: input.tools }),
      search_text: searchText(input.name, input.description ?? previous?.description ?? '', input.tools),
      modified_at: now,
    };
    if (previous) {
      const res = await models.Servlet.updateOne(ref, { $set: set });
      // stamped again once the change is stored, for install lists that read it meanwhile (install-changes.ts)
      if (res.matchedCount === 1) await models.Servlet.updateOne(ref, { $max: { modified_at: new Date() } });
      if (res.matchedCount === 1) break;
      previous = null;
      continue;
    }
    try {
      await models.Servlet.create({ ...ref, ...set, created_at: now });
      created = true;
      break;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
  // see releaseModule: a delete of the same bytes may have raced with this publish
  await storeModule(models, input.contentAddress, input.bytes, now);
  if (previous && previous.content_address !== input.contentAddress) await releaseModule(models, previous.content_address);
  const servlet = await findServlet(models, ref);
  if (!servlet) throw new Error(`servlet "${input.owner}/${input.name}" vanished while it was published`);
  return { servlet, created };
}

/** What search matches, case-insensitively: the name, the description and every tool name. */
export function searchText(name: string, description: string, tools: ToolRecord[]): string {
  return [name, description, ...tools.map((t) => t.name)].join('\n').toLowerCase();
}

/** The owner's servlets (public and private), oldest first, then by name. */
export async function listOwnServlets(models: Models, owner: string, page: PageRequest): Promise<Page<ServletRecord>> {
  const q = keysetQuery({ owner }, page, ['name']);
  const docs = await models.Servlet.find(q.where, fields).sort(q.sort).limit(q.limit).lean<ServletRecord[]>();
  return q.finish(docs.map((d) => fromServletDoc(d)));
}

/**
 * Public servlets of every user and the viewer's own private ones whose name, description or tool names contain
 * `text` (any case; every character literal). Oldest first, then by owner and name.
 */
export async function searchServlets(models: Models, viewer: string, text: string, page: PageRequest): Promise<Page<ServletRecord>> {
  const visible = { $or: [{ visibility: 'public' }, { owner: viewer }] };
  const needle = text.trim().toLowerCase();
  const filter = needle ? { $and: [visible, { search_text: { $regex: escapeRegex(needle) } }] } : visible;
  const q = keysetQuery(filter, page, ['owner', 'name']);
  const docs = await models.Servlet.find(q.where, fields).sort(q.sort).limit(q.limit).lean<ServletRecord[]>();
  return q.finish(docs.map((d) => fromServletDoc(d)));
}

/** Every regex metacharacter escaped (the same set for MongoDB's PCRE and FerretDB's Go regexp). */
export const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Installs of each servlet, by every user, keyed `<owner>/<name>`. */
export async function installationCounts(models: Models, servlets: ServletRef[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (servlets.length === 0) return counts;
  const rows = await models.Installation.aggregate<{ _id: { owner: string; name: string }; n: number }>([
    { $match: { $or: servlets.map((s) => ({ servlet_owner: s.owner, servlet_name: s.name })) } },
    { $group: { _id: { owner: '$servlet_owner', name: '$servlet_name' }, n: { $sum: 1 } } },
  ]);
  for (const row of rows) counts.set(`${row._id.owner}/${row._id.name}`, row.n);
  return counts;
}

/**
 * Deletes the servlet and every install of it, in any user's profile (an install cannot work without its
 * servlet); those profiles' install lists change. The module goes when no other servlet has the same bytes.
 * false when the owner has no servlet by that name.
 */
export async function deleteServlet(models: Models, ref: ServletRef): Promise<boolean> {
  const servlet = await findServlet(models, ref);
  if (!servlet) return false;
  await models.Servlet.deleteOne({ owner: ref.owner, name: ref.name });
  // an install written meanwhile is either found by a later round or removes itself (installations.ts)
  for (;;) {
    const installs = await models.Installation.find({ servlet_owner: ref.owner, servlet_name: ref.name }, { _id: 1, owner: 1, profile: 1 })
      .limit(1000)
      .lean<Array<{ _id: unknown; owner: string; profile: string }>>();
    if (installs.length === 0) break;
    await models.Installation.deleteMany({ _id: { $in: installs.map((i) => i._id) } });
    await markInstallsChanged(models, installs);
  }
  await releaseModule(models, servlet.content_address);
  return true;
}
