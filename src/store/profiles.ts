import { conflict, notFound } from '../errors';
import { isDuplicateKey } from './connect';
import { keysetQuery, type Page, type PageRequest } from './keyset';
import type { Models, ProfileDoc } from './models';

/** A profile as the API shows it (the stored document's fields but its id and its installs' last change). */
export type ProfileRecord = Pick<ProfileDoc, 'owner' | 'name' | 'description' | 'is_public' | 'created_at' | 'modified_at'>;

/** Every user has it (created with the user); it cannot be deleted. */
export const DEFAULT_PROFILE = 'default';

const fields = { _id: 0, owner: 1, name: 1, description: 1, is_public: 1, created_at: 1, modified_at: 1 } as const;

export async function findProfile(models: Models, owner: string, name: string): Promise<ProfileRecord | null> {
  return models.Profile.findOne({ owner, name }, fields).lean<ProfileRecord>();
}

/** Throws a 404 naming the profile when the owner has none by that name. */
export async function getProfile(models: Models, owner: string, name: string): Promise<ProfileRecord> {
  const found = await findProfile(models, owner, name);
  if (!found) throw notFound(`profile "${name}"`);
  return found;
}

/** Another user's profile, only when it is public: the one read another user may make. */
export async function findPublicProfile(models: Models, owner: string, name: string): Promise<ProfileRecord | null> {
  return models.Profile.findOne({ owner, name, is_public: true }, fields).lean<ProfileRecord>();
}

/** Throws 409 `profile_exists` when the owner already has a profile by that name (including `default`). */
export async function createProfile(
  models: Models,
  input: { owner: string; name: string; description: string; is_public: boolean },
  now = new Date(),
): Promise<ProfileRecord> {
  const record: ProfileRecord = { ...input, created_at: now, modified_at: now };
  try {
    await models.Profile.create(record);
  } catch (err) {
    if (isDuplicateKey(err)) throw conflict(`profile "${input.name}" already exists`, 'profile_exists');
    throw err;
  }
  return record;
}

/** The owner's profiles, oldest first (then by name). */
export async function listProfiles(models: Models, owner: string, page: PageRequest): Promise<Page<ProfileRecord>> {
  const q = keysetQuery({ owner }, page, ['name']);
  const docs = await models.Profile.find(q.where, fields).sort(q.sort).limit(q.limit).lean<ProfileRecord[]>();
  return q.finish(docs);
}

/** Every user's public profiles, oldest first (then by owner and name). */
export async function listPublicProfiles(models: Models, page: PageRequest): Promise<Page<ProfileRecord>> {
  const q = keysetQuery({ is_public: true }, page, ['owner', 'name']);
  const docs = await models.Profile.find(q.where, fields).sort(q.sort).limit(q.limit).lean<ProfileRecord[]>();
  return q.finish(docs);
}

/**
 * Deletes a profile and the servlet installations in it (they are the profile's own configuration and must not
 * reappear in a profile later created under the same name). Throws 404 when it does not exist, 409
 * `profile_protected` for `default`, 409 `profile_not_empty` while tasks live in it: deleting tasks cancels runs,
 * which a profile delete should not do silently.
 */
export async function deleteProfile(models: Models, owner: string, name: string): Promise<void> {
  if (name === DEFAULT_PROFILE) throw conflict(`profile "${DEFAULT_PROFILE}" cannot be deleted`, 'profile_protected');
  await getProfile(models, owner, name);
  const tasks = await models.Task.countDocuments({ owner, profile: name });
  if (tasks > 0) {
    throw conflict(
      `profile "${name}" still has ${tasks} task${tasks === 1 ? '' : 's'}; delete ${tasks === 1 ? 'it' : 'them'} first`,
      'profile_not_empty',
    );
  }
  await models.Profile.deleteOne({ owner, name });
  await models.Installation.deleteMany({ owner, profile: name });
}
