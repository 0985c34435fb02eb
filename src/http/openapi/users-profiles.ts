import { z } from 'zod';
import { LIST_DEFAULT_LIMIT, pageQuery } from '../presenters/page';
import { profileView } from '../presenters/profile';
import { createProfileBody, profileParams } from '../routes/profiles/schema';
import { userView } from '../routes/users/schema';
import { errors, linkHeader, pathParams, user } from './common';
import type { Operation } from './operation';

/** Users and profiles (docs/users-profiles-tasks.md). */

const profileExample = {
  slug: 'alice/work',
  description: 'for work',
  is_public: false,
  created_at: '2026-06-01T10:00:00.123Z',
  modified_at: '2026-06-01T10:00:00.123Z',
};

const userSchema = userView.meta({ id: 'User' });
const profilePath = pathParams(profileParams.shape);
const profileList = z.array(profileView);

export function userProfileOperations(): Operation[] {
  const tags = ['users and profiles'];
  const list = (path: string, summary: string, params?: Operation['params']): Operation => ({
    method: 'get',
    path,
    summary,
    tags,
    session: true,
    params: { ...params, query: pageQuery(LIST_DEFAULT_LIMIT) },
    responses: {
      200: { description: 'Oldest first', schema: profileList, headers: linkHeader, examples: { profiles: { summary: 'One profile', value: [profileExample] } } },
      ...errors({ 400: 'A bad `limit` or `cursor`' }),
    },
  });
  return [
    {
      method: 'get',
      path: '/api/users/{user}',
      summary: 'The session user',
      tags,
      session: true,
      params: { path: z.object({ user }) },
      responses: {
        200: {
          description: 'The user',
          schema: userSchema,
          examples: { alice: { summary: 'A user', value: { username: 'alice', emails: [{ email: 'alice@example.com', primary: true, verified: true }] } } },
        },
        ...errors({ 404: 'Any user but the session user' }),
      },
    },
    list('/api/profiles', 'Public profiles of every user'),
    list('/api/profiles/{user}', 'Own profiles', { path: z.object({ user }) }),
    {
      method: 'get',
      path: '/api/profiles/{user}/{profile}',
      summary: 'One profile (another user’s only when public)',
      tags,
      session: true,
      params: { path: profilePath },
      responses: {
        200: { description: 'The profile', schema: profileView, examples: { work: { summary: 'A profile', value: profileExample } } },
        ...errors({ 400: 'A bad profile name', 404: 'No such profile, or another user’s private one' }),
      },
    },
    {
      method: 'post',
      path: '/api/profiles/{user}/{profile}',
      summary: 'Create a profile',
      tags,
      session: true,
      params: { path: profilePath },
      body: {
        schema: createProfileBody,
        required: false,
        description: 'Unknown fields are ignored',
        examples: { work: { summary: 'A private profile', value: { description: 'for work', is_public: false } } },
      },
      responses: {
        201: { description: 'Created', schema: profileView, examples: { work: { summary: 'The new profile', value: profileExample } } },
        ...errors({
          400: 'A bad name or field',
          404: 'Another user',
          409: ['`profile_exists` (`default` included)', 'profile_exists', 'profile "work" already exists'],
        }),
      },
    },
    {
      method: 'delete',
      path: '/api/profiles/{user}/{profile}',
      summary: 'Delete a profile (and its installations)',
      tags,
      session: true,
      params: { path: profilePath },
      responses: {
        204: { description: 'Deleted' },
        ...errors({
          400: 'A bad profile name',
          404: 'No such profile',
          409: ['`profile_not_empty` while it has tasks; `profile_protected` for `default`', 'profile_not_empty', 'profile "work" still has 2 tasks; delete them first'],
        }),
      },
    },
  ];
}
