import { isDuplicateKey } from './connect';
import type { ModuleDoc, Models } from './models';

/**
 * Servlet modules, stored once per content address (sha256 hex of the bytes). A module larger than one document
 * may hold (16 MiB in MongoDB and FerretDB) is split: the first part in `modules`, the rest in `module_chunks`.
 * The `modules` document is written last, so its presence means every part is there.
 */

/** Well under the 16 MiB document limit, leaving room for the document's other fields. */
export const MODULE_CHUNK_BYTES = 4 * 1024 * 1024;


/** Stores the bytes under their address unless they are already there. Safe to call concurrently. */
export async function storeModule(models: Models, contentAddress: string, bytes: Uint8Array, now = new Date()): Promise<void> {
  if (await models.Module.exists({ content_address: contentAddress })) return;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts: Buffer[] = [];
  for (let offset = 0; offset < buffer.length || parts.length === 0; offset += MODULE_CHUNK_BYTES) {
    parts.push(buffer.subarray(offset, offset + MODULE_CHUNK_BYTES));
  }
  for (let n = 1; n < parts.length; n++) {
    // same address, same bytes: a part another publisher wrote first is already right
    await models.ModuleChunk.updateOne(
      { content_address: contentAddress, n },
      { $set: { data: parts[n] } },
      { upsert: true },
    ).catch(ignoreDuplicate);
  }
  await models.Module.create({
    content_address: contentAddress,
    size: buffer.length,
    data: parts[0],
    chunks: parts.length,
    created_at: now,
  }).catch(ignoreDuplicate);
}

/** The module's bytes, or null when no module has that address. */
export async function loadModule(models: Models, contentAddress: string): Promise<Uint8Array | null> {
  const head = await models.Module.findOne({ content_address: contentAddress }).lean<ModuleDoc>();
  if (!head) return null;
  const first = asBuffer(head.data);
  if ((head.chunks ?? 1) <= 1) return new Uint8Array(first.buffer, first.byteOffset, first.byteLength);
  const rest = await models.ModuleChunk.find({ content_address: contentAddress }).sort({ n: 1 }).lean<Array<{ n: number; data: Buffer }>>();
  if (rest.length !== head.chunks - 1) return null;
  const whole = Buffer.concat([first, ...rest.map((c) => asBuffer(c.data))]);
  return whole.length === head.size ? new Uint8Array(whole.buffer, whole.byteOffset, whole.byteLength) : null;
}

/**
 * Deletes the module when no servlet refers to it any more. A publish of the same bytes may race with this: it
 * stores the module (already there), writes its servlet and then calls `storeModule` again; here the references
 * are counted again after the delete and the bytes put back when a servlet appeared. Either side therefore
 * leaves the module in place for a servlet that refers to it.
 */
export async function releaseModule(models: Models, contentAddress: string): Promise<void> {
  if (await isReferenced(models, contentAddress)) return;
  const bytes = await loadModule(models, contentAddress);
  // parts first: a concurrent storeModule writes parts only once the head is gone, so none of its parts is lost
  await models.ModuleChunk.deleteMany({ content_address: contentAddress });
  await models.Module.deleteOne({ content_address: contentAddress });
  if (bytes && (await isReferenced(models, contentAddress))) await storeModule(models, contentAddress, bytes);
}

async function isReferenced(models: Models, contentAddress: string): Promise<boolean> {
  return (await models.Servlet.exists({ content_address: contentAddress })) !== null;
}

function ignoreDuplicate(err: unknown): void {
  if (!isDuplicateKey(err)) throw err;
}

/** lean() hands back a BSON Binary for Buffer fields on some drivers; both have the bytes. */
function asBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  const binary = value as { buffer?: Uint8Array; value?: () => Uint8Array };
  if (binary?.buffer instanceof Uint8Array) return Buffer.from(binary.buffer);
  throw new Error('stored module data is not binary');
}
