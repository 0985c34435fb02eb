import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import { LRUCache } from 'lru-cache';
import { badRequest } from '../../../errors';
import type { AskedInput } from '../../../contract/types';
import type { InputBody } from './schema';

/**
 * The form schemas of MCP questions (elicitation's restricted subset: flat objects of strings, numbers, booleans and
 * enums), checked with their four string formats. Their subset has no `pattern`: a server's regular expressions are
 * not run on the API's thread (STYLE habit 13), so the keyword is ignored.
 */
const ajv = new Ajv2020({ strict: false, allErrors: false });
ajv.removeKeyword('pattern');
ajv.removeKeyword('patternProperties');
ajv.addFormat('email', /^[^\s@]+@[^\s@]+$/);
ajv.addFormat('uri', (value: string) => /^[A-Za-z][A-Za-z0-9+.-]*:/.test(value) && URL.canParse(value));
ajv.addFormat('date', (value: string) => /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`)));
ajv.addFormat('date-time', (value: string) => /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value)));
// `false`: a schema that does not compile.
const compiled = new LRUCache<string, ValidateFunction | false>({ max: 200 });

/**
 * Throws a 400 naming the field when the answer does not fit the question: `content` that does not fit its schema
 * (`accept` without content is checked as `{}`: a schema needing fields refuses it), content for a URL question. A
 * schema that cannot be compiled is left to the server to check.
 */
export function checkInputAnswer(asked: AskedInput, answer: InputBody): void {
  if (answer.action !== 'accept') return;
  if (asked.url !== undefined) {
    if (answer.content !== undefined) throw badRequest('content: a URL question takes no content (the person answers at its URL; accept says they did)');
    return;
  }
  const validate = validatorOf(asked.schema ?? {});
  if (!validate || validate(answer.content ?? {})) return;
  throw badRequest(describe(validate.errors?.[0]));
}

function validatorOf(schema: Record<string, unknown>): ValidateFunction | false {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (validate === undefined) {
    try {
      validate = ajv.compile(schema);
    } catch {
      validate = false;
    }
    compiled.set(key, validate);
  }
  return validate;
}

/** `content.email: must match format "email"`, `content.name: required`. */
function describe(error: ErrorObject | undefined): string {
  if (!error) return 'content: does not fit the question\'s schema';
  const path = error.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') return `${['content', ...path, (error.params as { missingProperty: string }).missingProperty].join('.')}: required`;
  return `${['content', ...path].join('.')}: ${error.message ?? 'does not fit the question\'s schema'}`;
}
