import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import mongoose from 'mongoose';
import pLimit from 'p-limit';

/** Where a secret was found: the kind of secret (never the secret itself) and the place. */
export interface SecretHit {
  kind: string;
  where: string;
}

export interface Secret {
  kind: string;
  value: string;
}

/**
 * What to look for: the secret as it is; pieces of 16 characters of its last 24 (the suite's secrets end in their
 * random part), so a truncated or partly scrubbed secret is found too; and the secret as it reads inside base64 at
 * each of the three byte alignments (so a secret inside an encoded payload or blob is found without decoding it).
 */
export function needles(secret: string): string[] {
  const out = [secret];
  if (secret.length >= 32) for (let i = secret.length - 24; i + 16 <= secret.length; i += 4) out.push(secret.slice(i, i + 16));
  const bytes = Buffer.from(secret, 'utf8');
  for (let k = 0; k < 3; k++) {
    const b64 = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const inner = b64.slice(4 * Math.ceil(k / 3), 4 * Math.floor((k + bytes.length) / 3));
    if (inner.length >= 16) out.push(inner);
  }
  return out;
}

const BASE64 = /^[A-Za-z0-9+/_-]{16,}={0,2}$/;

/**
 * Every text inside a value, as a reader of the raw data would find it: strings (and, when they look like base64,
 * what they decode to), bytes (Buffer, Uint8Array, BSON Binary) as UTF-8, object keys, recursively.
 */
export function texts(value: unknown, out: string[] = [], depth = 0): string[] {
  if (depth > 200 || value === null || value === undefined) return out;
  if (typeof value === 'string') {
    out.push(value);
    if (BASE64.test(value)) out.push(Buffer.from(value, 'base64').toString('utf8'));
  } else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return out;
  } else if (value instanceof Uint8Array) {
    out.push(Buffer.from(value).toString('utf8'));
  } else if ((value as { _bsontype?: string })._bsontype === 'Binary') {
    out.push(Buffer.from((value as { buffer: Uint8Array }).buffer).toString('utf8'));
  } else if ((value as { _bsontype?: string })._bsontype || value instanceof Date) {
    out.push(String(value));
  } else if (Array.isArray(value)) {
    for (const v of value) texts(v, out, depth + 1);
  } else if (typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out.push(k);
      texts(v, out, depth + 1);
    }
  }
  return out;
}

export class SecretScanner {
  readonly hits: SecretHit[] = [];
  /** What was read: documents, collections, histories, events, log files and bytes. */
  readonly scanned = { collections: 0, documents: 0, workflows: 0, historyEvents: 0, logFiles: 0, logBytes: 0, answers: 0, webhookDeliveries: 0, traceExports: 0, spans: 0 };
  private readonly patterns: Array<{ kind: string; needles: string[] }>;

  constructor(secrets: Secret[]) {
    this.patterns = secrets.map((s) => ({ kind: s.kind, needles: needles(s.value) }));
  }

  check(where: string, chunks: string[]) {
    for (const { kind, needles: list } of this.patterns) {
      if (chunks.some((c) => list.some((n) => c.includes(n)))) this.hits.push({ kind, where });
    }
  }

  /** Every document of every collection of the database, raw, through the driver. */
  async scanMongo(url: string) {
    const client = new mongoose.mongo.MongoClient(url, { serverSelectionTimeoutMS: 10_000 });
    try {
      await client.connect();
      const db = client.db();
      for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
        this.scanned.collections++;
        for await (const doc of db.collection(name).find({})) {
          this.scanned.documents++;
          this.check(`mongodb ${name} ${String(doc._id)}`, texts(doc));
        }
      }
    } finally {
      await client.close();
    }
  }

  /** Every execution of every workflow in the namespace: its whole history, payloads decoded. */
  async scanTemporal(client: Client): Promise<void> {
    const executions: Array<{ workflowId: string; runId: string }> = [];
    for await (const w of client.workflow.list()) executions.push({ workflowId: w.workflowId, runId: w.runId });
    const limit = pLimit(8);
    await Promise.all(
      executions.map((e) =>
        limit(async () => {
          const history = await client.workflow.getHandle(e.workflowId, e.runId).fetchHistory();
          this.scanned.workflows++;
          this.scanned.historyEvents += history.events?.length ?? 0;
          this.check(`temporal history ${e.workflowId} (${e.runId})`, texts(history));
        }),
      ),
    );
  }

  /** The API's answers to the suite (their bodies). */
  scanAnswers(answers: Array<{ where: string; text: string }>) {
    for (const { where, text } of answers) {
      this.scanned.answers++;
      this.check(`answer ${where}`, [text]);
    }
  }

  /** What the webhook receiver got: each delivery's headers and body. */
  scanWebhooks(deliveries: Array<{ workflowId?: string; received: string }>) {
    for (const { workflowId, received } of deliveries) {
      this.scanned.webhookDeliveries++;
      this.check(`webhook ${workflowId ?? '(unverified)'}`, [received]);
    }
  }

  /** What the OTLP receiver got from the API and the worker: each export's body as sent, and decoded. */
  scanSpans(traces: { requests: Array<{ text: string }>; spans: unknown[] }) {
    this.scanned.spans = traces.spans.length;
    traces.requests.forEach((r, i) => {
      this.scanned.traceExports++;
      this.check(`spans export ${i}`, [r.text]);
    });
  }

  scanFiles(files: string[]) {
    for (const file of files) {
      if (!fs.existsSync(file)) continue;
      const text = fs.readFileSync(file, 'utf8');
      this.scanned.logFiles++;
      this.scanned.logBytes += text.length;
      this.check(`log ${file}`, [text]);
    }
  }
}
