import { Types } from 'mongoose';
import type { Config } from '../config';
import { deprecatedModels } from '../model-deprecations';
import { badRequest, conflict } from '../errors';
import { isDuplicateKey } from './connect';
import { keysetQuery, type Page, type PageRequest } from './keyset';
import type { Models, TaskDoc, TaskVersionDoc } from './models';
import { getProfile } from './profiles';
import { open, seal, type Keyring, type SealedSecret } from './secrets';
import { resolveWebhook, type StoredWebhook, type WebhookChange } from './webhooks';
import { RUNNERS } from '../contract/constants';
import type { Runner } from '../contract/types';

export { RUNNERS };
export type { Runner };

/**
 * A task's own limits on its runs, each within the server's ceiling (RUN_MAX_TURNS, RUN_TIMEOUT_MS,
 * RUN_MAX_TOTAL_TOKENS); an absent one is the server's. `max_total_tokens` is a budget over a whole run.
 */
export interface TaskLimits {
  max_turns?: number;
  timeout_s?: number;
  max_total_tokens?: number;
}

/** What a task asks of its provider; copied into every task_versions document. */
export interface TaskSpec {
  runner: Runner;
  model: string;
  prompt: string;
  /** null: the provider's default at run time (Anthropic: ANTHROPIC_MAX_TOKENS; OpenAI: none sent). */
  max_tokens: number | null;
  /** null: the server's limits. */
  limits?: TaskLimits | null;
  /** null or absent: none. */
  description?: string | null;
  /** JSON Schema 2020-12 of the trigger data (checked when saved) as JSON text (see models.ts); null or absent: none. */
  input_schema_json?: string | null;
  /** Its runs' priority, 1 highest to 5 lowest (src/runs/priority.ts); null or absent: the default, 3. */
  priority?: number | null;
}

export interface TaskRef {
  owner: string;
  profile: string;
  name: string;
}

/**
 * A task as stored (models.ts's schema), with the types its mixed and sealed fields hold: `key` the sealed provider
 * key (null: runs use the operator's key for the runner), `webhook` the completion webhook (store/webhooks.ts;
 * absent or null: none), and the spec's runner and limits.
 */
export type TaskRecord = Omit<TaskDoc, keyof TaskSpec | 'key' | 'webhook'> & TaskRef & TaskSpec & { key: SealedSecret | null; webhook?: StoredWebhook | null };

/** The task as one run sees it, whatever happens to the task afterwards (models.ts's task_versions schema). */
export type TaskVersionRecord = Omit<TaskVersionDoc, keyof TaskSpec | 'key'> & TaskSpec & { key: SealedSecret | null };

/**
 * The key part of a save: a string sets the task's own key; null drops it (runs then use the operator's key);
 * undefined keeps the stored key, as long as the runner stays the same (another provider's key is no use).
 */
export type KeyChange = string | null | undefined;

type OperatorKeys = Pick<Config, 'OPENAI_API_KEY' | 'ANTHROPIC_API_KEY'>;

const OPERATOR_KEY_VARIABLE: Record<Runner, keyof OperatorKeys> = { openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY' };

/** The JSON Schema a task declares for its trigger data, or null when it declares none. */
export const taskInputSchema = (task: Pick<TaskSpec, 'input_schema_json'>): Record<string, unknown> | null =>
  task.input_schema_json ? (JSON.parse(task.input_schema_json) as Record<string, unknown>) : null;

export async function findTask(models: Models, ref: TaskRef): Promise<TaskRecord | null> {
  return models.Task.findOne({ owner: ref.owner, profile: ref.profile, name: ref.name }).lean<TaskRecord>();
}

/** The version a run started with; null once its task was deleted (temporal/task-cascade.ts). */
export async function findTaskVersion(models: Models, taskId: Types.ObjectId | string, version: number): Promise<TaskVersionRecord | null> {
  return models.TaskVersion.findOne({ task_id: new Types.ObjectId(String(taskId)), version }).lean<TaskVersionRecord>();
}

/**
 * The owner's tasks, of one profile or of all, oldest first, then by profile and name. `deprecated`: only those on a
 * model with an announced end of life (src/model-deprecations.ts).
 */
export async function listTasks(
  models: Models,
  owner: string,
  profile: string | undefined,
  page: PageRequest,
  only: { deprecated?: boolean; profiles?: readonly string[] | null } = {},
): Promise<Page<TaskRecord>> {
  const filter: Record<string, unknown> = profile === undefined ? { owner } : { owner, profile };
  // An access token limited to some profiles lists theirs only (http/token-routes.ts).
  if (profile === undefined && only.profiles) filter.profile = { $in: only.profiles };
  if (only.deprecated) filter.$or = RUNNERS.map((runner) => ({ runner, model: { $in: deprecatedModels(runner) } }));
  const q = keysetQuery(filter, page, ['profile', 'name']);
  const docs = await models.Task.find(q.where).sort(q.sort).limit(q.limit).lean<TaskRecord[]>();
  return q.finish(docs);
}

/** Throws 400 `missing_key` when the task would have no key of its own and the operator has none for its runner. */
function resolveKey(
  keyring: Keyring,
  operator: OperatorKeys,
  runner: Runner,
  change: KeyChange,
  previous: Pick<TaskRecord, 'runner' | 'key'> | null,
): SealedSecret | null {
  if (typeof change === 'string') return seal(keyring, change);
  if (change === undefined && previous?.key && previous.runner === runner) return previous.key;
  if (!operator[OPERATOR_KEY_VARIABLE[runner]]) {
    throw badRequest(
      `settings.key: required for runner "${runner}", because this server has no operator key (${OPERATOR_KEY_VARIABLE[runner]}) for it`,
      'missing_key',
    );
  }
  return null;
}

/** Each retry follows a collision with a save that succeeded, so a few attempts cover heavy contention. */
const SAVE_ATTEMPTS = 10;

async function latestVersion(models: Models, taskId: Types.ObjectId): Promise<number> {
  const doc = await models.TaskVersion.findOne({ task_id: taskId }, { version: 1 }).sort({ version: -1 }).lean<{ version: number }>();
  return doc?.version ?? 0;
}

/**
 * Creates the task (version 1) or updates it (next version). The task_versions document is written before the task
 * points at it, so a run never sees a version it cannot load. Concurrent saves of one task each take a distinct
 * version through the unique (task_id, version) index (retrying on a collision), and the task only moves to a
 * higher version. Throws 404 when the profile does not exist, 400 `missing_key` (see resolveKey), 409 `task_busy`
 * when collisions persist through every attempt.
 */
export async function saveTask(
  deps: { models: Models; keyring: Keyring; config: OperatorKeys },
  ref: TaskRef,
  spec: TaskSpec,
  keyChange: KeyChange,
  webhookChange: WebhookChange = undefined,
  now = new Date(),
): Promise<{ task: TaskRecord; created: boolean; webhookSecret?: string }> {
  const { models } = deps;
  await getProfile(models, ref.owner, ref.profile);
  const fields: TaskSpec = {
    runner: spec.runner,
    model: spec.model,
    prompt: spec.prompt,
    max_tokens: spec.max_tokens,
    limits: spec.limits ?? null,
    description: spec.description ?? null,
    input_schema_json: spec.input_schema_json ?? null,
    priority: spec.priority ?? null,
  };
  for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
    const existing = await findTask(models, ref);
    const key = resolveKey(deps.keyring, deps.config, spec.runner, keyChange, existing);
    // `webhookSecret`: a secret this save made, for its answer only.
    const { webhook, generated: webhookSecret } = resolveWebhook(deps.keyring, webhookChange, existing?.webhook);
    const taskId = existing?._id ?? new Types.ObjectId();
    // Above any version document already written: one left by a save that died before updating the task is
    // skipped (versions may have gaps), never reused.
    const version = existing ? Math.max(existing.version, await latestVersion(models, taskId)) + 1 : 1;
    const written = await models.TaskVersion.create({ task_id: taskId, version, ...fields, key, created_at: now }).then(
      () => true,
      (err: unknown) => {
        if (isDuplicateKey(err)) return false;
        throw err;
      },
    );
    if (!written) continue;
    const dropOurVersion = () => models.TaskVersion.deleteOne({ task_id: taskId, version });

    if (!existing) {
      const task: TaskRecord = { _id: taskId, ...ref, ...fields, key, webhook, version, created_at: now, modified_at: now };
      try {
        await models.Task.create(task);
        return { task, created: true, webhookSecret };
      } catch (err) {
        await dropOurVersion();
        if (!isDuplicateKey(err)) throw err;
        continue;
      }
    }
    // Only ever moves the task forward: when a concurrent save already stored a higher version, ours stays in
    // task_versions as the one it superseded (last writer wins, as if the two had come one after the other).
    const res = await models.Task.updateOne(
      { _id: taskId, version: { $lt: version } },
      { $set: { ...fields, key, webhook, version, modified_at: now } },
    );
    if (res.matchedCount === 1 || (await models.Task.exists({ _id: taskId }))) {
      return { task: { ...existing, ...fields, key, webhook, version, modified_at: now }, created: false, webhookSecret };
    }
    // The task was deleted meanwhile: start over, which creates it anew.
    await dropOurVersion();
  }
  throw conflict(`task "${ref.name}" is being changed by another request; try again`, 'task_busy');
}

/**
 * The provider key for one run: the version's own key, decrypted, or the operator's. `runner`: the run's, when a
 * replay runs the version on another provider (the version's key is then no use). Call only where it is used.
 */
export function openTaskKey(keyring: Keyring, operator: OperatorKeys, version: Pick<TaskVersionRecord, 'runner' | 'key'>, runner: Runner = version.runner): string {
  if (version.key && version.runner === runner) return open(keyring, version.key);
  const fallback = operator[OPERATOR_KEY_VARIABLE[runner]];
  if (!fallback) throw new Error(`no API key for ${runner}: set settings.key on the task or ${OPERATOR_KEY_VARIABLE[runner]} for the service`);
  return fallback;
}

/**
 * The key a run of `version` on `runner` would use: the version's own when it is for that runner, else the operator's
 * for it (a key of another provider is no use); null when there is none (a replay's runner: src/replays/create.ts).
 */
export function keyForRunner(operator: OperatorKeys, version: Pick<TaskVersionRecord, 'runner' | 'key'>, runner: Runner): 'own' | 'operator' | null {
  if (version.key && version.runner === runner) return 'own';
  return operator[OPERATOR_KEY_VARIABLE[runner]] ? 'operator' : null;
}

/** The name of the setting holding the operator's key for `runner`. */
export const operatorKeyVariable = (runner: Runner) => OPERATOR_KEY_VARIABLE[runner];

/** max_tokens to send: the version's own, else Anthropic's required default from configuration, else none. */
export function maxTokensFor(config: Pick<Config, 'ANTHROPIC_MAX_TOKENS'>, version: Pick<TaskSpec, 'runner' | 'max_tokens'>) {
  if (version.max_tokens) return version.max_tokens;
  return version.runner === 'anthropic' ? config.ANTHROPIC_MAX_TOKENS : undefined;
}
