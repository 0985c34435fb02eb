import { z } from 'zod';
import { EXP_PATTERN, IAT_PATTERN } from '../../store/signed-urls';
import { revokeBody, runIdHeader } from '../routes/runs/schema';
import { taskParams } from '../routes/tasks/schema';
import { describeNames, errors, name, pathParams, runUrl } from './common';
import type { Operation } from './operation';

/** Signed URLs (docs/runs.md, "Signed URLs"): issued and revoked with a session, triggered without one. */

const SIGNED_URL = 'http://127.0.0.1:8080/signed/tasks/alice/default/haiku?id=Xq2v0s8rVb4&iat=1795451310882&exp=1826987310882&sig=3kq2lKu7CqgZ0x1f2n8';

/** As store/signed-urls.ts `parseSignedUrl` reads it. */
const signedQuery = z.object({
  id: z.string().min(1).meta({ description: 'The URL’s id' }),
  iat: z.string().regex(IAT_PATTERN).meta({ description: 'Issued at (milliseconds since the epoch)' }),
  exp: z.string().regex(EXP_PATTERN).meta({ description: 'Expires at (milliseconds since the epoch, as `iat`; seconds in URLs issued before 2026-11-27, which still work)' }),
  sig: z.string().min(1).meta({ description: 'HMAC-SHA256 with SIGNING_SECRET' }),
});

export function signedOperations(): Operation[] {
  const tags = ['signed URLs'];
  const task = '/api/tasks/{user}/{profile}/{task}/signed';
  const noTask = errors({ 400: 'A bad name in the path', 404: 'No such task' });
  const url = { description: 'The run’s URL', schema: runUrl, examples: { run: { summary: 'The run', value: { url: 'http://127.0.0.1:8080/api/runs/alice/default/haiku/first' } } } };
  return [
    {
      method: 'post',
      path: task,
      summary: 'Issue a signed URL',
      description: 'The URL is the credential for triggering the task: keep it secret. It expires after SIGNED_URL_TTL_DAYS.',
      tags,
      session: true,
      params: { path: pathParams(taskParams.shape) },
      responses: {
        200: { description: 'The signed URL', schema: z.object({ url: z.url() }), examples: { url: { summary: 'A signed URL', value: { url: SIGNED_URL } } } },
        ...noTask,
      },
    },
    {
      method: 'delete',
      path: task,
      summary: 'Revoke every signed URL of the task issued so far',
      tags,
      session: true,
      params: { path: pathParams(taskParams.shape) },
      responses: { 204: { description: 'Revoked' }, ...noTask },
    },
    {
      method: 'post',
      path: `${task}/revoke`,
      summary: 'Revoke one signed URL',
      tags,
      session: true,
      params: { path: pathParams(taskParams.shape) },
      body: { schema: revokeBody, examples: { one: { summary: 'A URL of this task', value: { url: SIGNED_URL } } } },
      responses: { 204: { description: 'Revoked' }, ...errors({ 400: ['`url`: not a signed URL of this task', 'invalid_request', 'url: not a signed URL of this task'], 404: 'No such task' }) },
    },
    {
      method: 'post',
      path: '/signed/tasks/{owner}/{profile}/{task}',
      summary: 'Trigger a run with a signed URL',
      description:
        'No session: the signed URL is the credential. Idempotent by `run-id`: a name used before answers 200 and the same URL, and starts nothing. Without `run-id` the run is named `run-<ms>-<random>`.',
      tags,
      session: false,
      params: {
        path: z.object({ owner: name('task’s owner', 'alice'), ...describeNames(taskParams.shape) }),
        query: signedQuery,
        header: z.object({ 'run-id': runIdHeader.meta({ description: 'The run’s name' }) }),
      },
      body: {
        schema: z.record(z.string(), z.unknown()).meta({ description: 'The trigger data: any JSON object, available to the prompt template' }),
        required: false,
        examples: { topic: { summary: 'Trigger data', value: { topic: 'tides' } } },
      },
      responses: {
        200: { ...url, description: 'The run existed: nothing started' },
        201: { ...url, description: 'Created and started' },
        ...errors({
          400: 'A bad `run-id` (`header.run-id`), a body that is not a JSON object, `json_too_deep`',
          403: ['`signed_url_invalid`, `signed_url_expired` or `signed_url_revoked`: nothing was started', 'signed_url_expired', 'the signed URL has expired'],
          413: 'A body over `BODY_LIMIT_BYTES`',
          429: ['`trigger_limit` or `live_runs_limit`: nothing was started', 'trigger_limit', 'TRIGGER_LIMIT_PER_MINUTE: more than 6000 triggers a minute through this signed URL; nothing was started'],
          503: '`mongodb_unavailable` or `temporal_unavailable`; the error names the run when it may have been recorded (retry with its name)',
        }),
      },
    },
  ];
}
