import vm from 'node:vm';
import canonicalize from 'canonicalize';
import { z } from 'zod';
import { jsonSchemaProblemOfAny, validatorOf } from '../json-schema';

/** How long one `regex` check may run (node:vm timeout): a catastrophic pattern fails its check, it never stalls a worker. */
export const REGEX_TIMEOUT_MS = 100;
/** The longest pattern, substring and schema text a check may hold (checks run on every run of an eval). */
const MAX_TEXT = 2_000;

/** The checks an eval runs on each replay's answer (docs/evals.md, "Checks"). */
export const checkSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('contains'), value: z.string().min(1).max(MAX_TEXT), case_sensitive: z.boolean().optional() }).strict(),
  z.object({ type: z.literal('regex'), pattern: z.string().min(1).max(MAX_TEXT), flags: z.string().regex(/^[imsu]*$/, 'expected some of the flags i, m, s, u').optional() }).strict(),
  z.object({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) }).strict(),
  z.object({ type: z.literal('same_as_original') }).strict(),
]);
export type Check = z.infer<typeof checkSchema>;

/** Why check `check` cannot run (an invalid pattern or schema), or undefined. Said at POST, naming the field. */
export function checkProblem(check: Check): string | undefined {
  if (check.type === 'regex') {
    try {
      new RegExp(check.pattern, check.flags);
    } catch (err) {
      return `pattern: ${(err as Error).message}`;
    }
  }
  if (check.type === 'json_schema') {
    if (JSON.stringify(check.schema).length > MAX_TEXT * 10) return 'schema: too large';
    const problem = jsonSchemaProblemOfAny(check.schema);
    if (problem) return `schema: ${problem}`;
  }
  return undefined;
}

/** One check's outcome on one answer. */
export interface CheckResult {
  type: Check['type'];
  passed: boolean;
  /** Why it failed, when it did. */
  reason?: string;
}

/** Runs `check` on a replay's `answer` (null: the run ended without one, which fails every check). */
export function runCheck(check: Check, answer: string | null, original: string | null): CheckResult {
  const result = (passed: boolean, reason?: string): CheckResult => ({ type: check.type, passed, ...(passed || reason === undefined ? {} : { reason }) });
  if (answer === null) return result(false, 'the run has no answer');
  switch (check.type) {
    case 'contains': {
      const found = check.case_sensitive === false ? answer.toLowerCase().includes(check.value.toLowerCase()) : answer.includes(check.value);
      return result(found, `the answer does not contain "${check.value}"`);
    }
    case 'regex':
      return regexCheck(check.pattern, check.flags ?? '', answer, result);
    case 'json_schema': {
      const parsed = parseJson(answer);
      if (!parsed.ok) return result(false, 'the answer is not JSON');
      const validate = validatorOf(check.schema);
      return result(validate(parsed.value) === true, `the answer does not match the schema: ${(validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`).join('; ')}`);
    }
    case 'same_as_original':
      if (original === null) return result(false, 'the original has no answer');
      return result(sameAnswer(answer, original), 'the answer differs from the original');
  }
}

/** Equal after trimming; when both parse as JSON, equal as canonical JSON (RFC 8785). */
export function sameAnswer(a: string, b: string): boolean {
  const x = a.trim();
  const y = b.trim();
  if (x === y) return true;
  const px = parseJson(x);
  const py = parseJson(y);
  return px.ok && py.ok && canonicalize(px.value) === canonicalize(py.value);
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** A pattern runs in a vm context with a time limit, so backtracking without end fails the check instead of the worker. */
function regexCheck(pattern: string, flags: string, answer: string, result: (passed: boolean, reason?: string) => CheckResult): CheckResult {
  try {
    const found = vm.runInNewContext('new RegExp(pattern, flags).test(answer)', { pattern, flags, answer }, { timeout: REGEX_TIMEOUT_MS }) as boolean;
    return result(found === true, `the answer does not match /${pattern}/${flags}`);
  } catch (err) {
    const timedOut = (err as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
    return result(false, timedOut ? `the pattern took longer than ${REGEX_TIMEOUT_MS} ms` : `the pattern failed: ${(err as Error).message}`);
  }
}
