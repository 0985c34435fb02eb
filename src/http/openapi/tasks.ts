import { z } from 'zod';
import type { Config } from '../../config';
import { modelDeprecation } from '../../model-deprecations';
import { RUNNERS } from '../../store/tasks';
import { LIST_DEFAULT_LIMIT, pageQuery } from '../presenters/page';
import { taskView } from '../presenters/task';
import { deliveriesView } from '../presenters/webhook-deliveries';
import { contractHead, limitsSchema, taskExtras, listQuery, parseTaskBody, profileParams, runnerObject, shortForm, taskParams, taskWarning, type Variant } from '../routes/tasks/schema';
import { errors, linkHeader, pathParams, user, VARIANT_A_PROFILE } from './common';
import type { Example, Operation } from './operation';

/** Tasks on both path families (docs/users-profiles-tasks.md), and their webhook deliveries (docs/webhooks.md). */

/** The body as the documents describe it: the route builds its schema from the server's limits (tasks/schema.ts). */
function taskBody(variant: Variant, config: Config) {
  const runners = variant === 'A' ? (['openai'] as const) : RUNNERS;
  const limits = limitsSchema(config);
  const runnerObjects = variant === 'A' ? { openai: runnerObject.optional() } : { openai: runnerObject.optional(), anthropic: runnerObject.optional() };
  return z.union([
    contractHead(runners)
      .extend({ ...runnerObjects, limits, ...taskExtras.shape })
      .meta({ title: 'Contract form', description: 'The object named by `runner` is required' }),
    shortForm(runners)
      .extend({ limits, ...taskExtras.shape })
      .meta({ title: 'Short form', description: 'As the Python client’s `create_task` sends it' }),
  ]);
}

function taskExamples(variant: Variant, config: Config): Record<string, Example> {
  const model = variant === 'A' ? config.VARIANT_A_MODEL : config.OPENAI_DEFAULT_MODEL;
  const examples: Record<string, Example> = {
    contract: {
      summary: 'Contract form',
      value: { runner: 'openai', openai: { prompt: 'Write a haiku about {{ topic }}', model, max_tokens: 200 }, settings: { key: 'sk-proj-Zx81TQ0bLw3Ks9vDmE2a' } },
    },
    short: { summary: 'Short form (the Python client)', value: { provider: 'openai', prompt: 'Write a haiku about {{ topic }}', model } },
    limitsAndWebhook: {
      summary: 'With limits and a completion webhook',
      value: {
        runner: 'openai',
        openai: { prompt: 'Summarise {{ text }}', model },
        limits: { max_turns: 5, timeout_s: 120 },
        webhook: { url: 'https://hooks.example.com/runs' },
      },
    },
    asTool: {
      summary: 'With a description and an input schema (its MCP tool)',
      value: {
        runner: 'openai',
        openai: { prompt: 'Summarise {{ text }} in {{ words }} words', model },
        description: 'Summarises a text in a given number of words',
        input_schema: { type: 'object', properties: { text: { type: 'string' }, words: { type: 'string', pattern: '^[0-9]+$' } }, required: ['text', 'words'] },
      },
    },
  };
  if (variant === 'B') {
    examples.anthropic = {
      summary: 'Anthropic',
      value: { runner: 'anthropic', anthropic: { prompt: 'Summarise {{ text }}', model: config.ANTHROPIC_DEFAULT_MODEL, max_tokens: 1000 } },
    };
  }
  return examples;
}

/** A save's answer: the task, and `warnings` only when there is one to give. */
const savedTask = taskView.extend({ warnings: z.array(taskWarning).optional().meta({ description: 'Present only when there is a warning: the task’s model has an announced end of life' }) });

const taskExample = (profile: string) => ({
  name: 'haiku',
  slug: `alice/${profile}/haiku`,
  runner: 'openai',
  openai: { prompt: 'Write a haiku about {{ topic }}', model: 'gpt-4o', max_tokens: 200 },
  provider: 'openai',
  prompt: 'Write a haiku about {{ topic }}',
  settings: { key_set: true },
  created_at: '2026-06-01T10:00:00.123Z',
  modified_at: '2026-06-01T10:05:00.456Z',
});

export function taskOperations(config: Config): Operation[] {
  const tags = ['tasks'];
  const variants = [
    { variant: 'A' as const, base: `/api/profiles/{user}/${VARIANT_A_PROFILE}/tasks`, params: pathParams(taskParams.omit({ profile: true }).shape), listParams: z.object({ user }), profile: VARIANT_A_PROFILE },
    { variant: 'B' as const, base: '/api/tasks/{user}/{profile}', params: pathParams(taskParams.shape), listParams: pathParams(profileParams.shape), profile: 'default' },
  ];
  const ops: Operation[] = [];
  for (const { variant, base, params, listParams, profile } of variants) {
    const task = `${base}/{task}`;
    const which = variant === 'A' ? 'Variant A (the default profile; runner openai, one model)' : 'Variant B (any profile, any runner and model)';
    const one = { 200: { description: 'The task', schema: taskView, examples: { haiku: { summary: 'A task', value: taskExample(profile) } } } };
    const saved = {
      description: 'The task',
      schema: savedTask,
      examples: {
        haiku: { summary: 'A task', value: taskExample(profile) },
        deprecated: {
          summary: 'A task on a model with an announced end of life',
          value: {
            ...taskExample(profile),
            openai: { prompt: 'Write a haiku about {{ topic }}', model: 'gpt-5-mini' },
            warnings: [{ code: 'model_deprecated', field: 'openai.model', ...modelDeprecation('openai', 'gpt-5-mini')! }],
          },
        },
      },
    };
    ops.push(
      {
        method: 'get',
        path: base,
        summary: variant === 'A' ? 'Tasks of the default profile' : 'Tasks of a profile',
        description: `${which}. Oldest first. \`?deprecated=true\`: only the tasks on a model with an announced end of life.`,
        tags,
        session: true,
        params: { path: listParams, query: pageQuery(LIST_DEFAULT_LIMIT).extend(listQuery.shape) },
        responses: { 200: { description: 'The tasks', schema: z.array(taskView), headers: linkHeader }, ...errors({ 400: 'A bad name, `limit`, `cursor` or `deprecated`', 404: 'No such profile' }) },
      },
      {
        method: 'get',
        path: task,
        summary: 'Read a task',
        description: which,
        tags,
        session: true,
        params: { path: params },
        responses: { ...one, ...errors({ 400: 'A bad name in the path', 404: 'No such task' }) },
      },
      {
        method: 'put',
        path: task,
        summary: 'Create or update a task',
        description: `${which}. Variant A takes runner \`openai\` with the model "${config.VARIANT_A_MODEL}" only (VARIANT_A_MODEL). Unknown fields are ignored.`,
        tags,
        session: true,
        params: { path: params },
        body: { schema: taskBody(variant, config), examples: taskExamples(variant, config), check: (value) => parseTaskBody(value as Record<string, unknown>, variant, config) },
        responses: {
          200: { ...saved, description: 'Updated' },
          201: { ...saved, description: 'Created' },
          ...errors({
            400: '`invalid_request` naming the field (a placeholder `settings.key` such as `sk-...` included), `invalid_template`, `missing_key`, `invalid_json`, `json_too_deep`',
            404: 'No such profile, or another user',
            409: ['`task_busy`: concurrent saves; retry', 'task_busy', 'task "haiku" is being changed by another request; try again'],
            413: 'A body over `BODY_LIMIT_BYTES`',
            415: 'A body that is not JSON',
          }),
        },
      },
      {
        method: 'delete',
        path: task,
        summary: 'Delete a task, its versions and all its runs',
        description: `${which}. Live runs are cancelled first.`,
        tags,
        session: true,
        params: { path: params },
        responses: { 204: { description: 'Deleted' }, ...errors({ 400: 'A bad name in the path', 404: 'No such task' }) },
      },
      {
        method: 'get',
        path: `${task}/webhook/deliveries`,
        summary: 'The task’s latest webhook delivery attempts',
        description: 'At most 100, newest first (docs/webhooks.md).',
        tags: ['webhooks'],
        session: true,
        params: { path: params },
        responses: {
          200: {
            description: 'The attempts',
            schema: deliveriesView,
            examples: {
              retried: {
                summary: 'A delivery retried once',
                value: {
                  deliveries: [
                    { run: 'r1', attempt: 2, status: 200, at: '2026-11-23T08:30:02.512Z' },
                    { run: 'r1', attempt: 1, status: 500, error: 'the receiver answered 500: receiver is down', at: '2026-11-23T08:30:01.907Z' },
                  ],
                },
              },
            },
          },
          ...errors({ 400: 'A bad name in the path', 404: 'No such task' }),
        },
      },
    );
  }
  ops.push({
    method: 'get',
    path: '/api/tasks/{user}',
    summary: 'Tasks of every profile',
    description: 'Variant B. By profile, then oldest first. `?deprecated=true`: only the tasks on a model with an announced end of life.',
    tags,
    session: true,
    params: { path: z.object({ user }), query: pageQuery(LIST_DEFAULT_LIMIT).extend(listQuery.shape) },
    responses: { 200: { description: 'The tasks', schema: z.array(taskView), headers: linkHeader }, ...errors({ 400: 'A bad `limit`, `cursor` or `deprecated`', 404: 'Another user' }) },
  });
  return ops;
}
