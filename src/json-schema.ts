import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { LRUCache } from 'lru-cache';

/**
 * JSON Schema 2020-12, as tasks declare their `input_schema` (checked when saved) and MCP tool calls validate
 * arguments against it. One Ajv instance; compiled validators are kept by the schema's JSON.
 */
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
const compiled = new LRUCache<string, ValidateFunction>({ max: 1000 });

/** Why `schema` is not a JSON Schema 2020-12 an MCP tool can take (an object schema), or undefined when it is one. */
export function jsonSchemaProblem(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'expected a JSON Schema object';
  if ((schema as { type?: unknown }).type !== 'object') return 'expected a schema of an object ("type": "object"): tool arguments are an object';
  if (!ajv.validateSchema(schema)) return ajv.errorsText(ajv.errors, { dataVar: 'schema' });
  try {
    validatorOf(schema as object);
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

/** Why `schema` is not a JSON Schema 2020-12 object of any type (an eval's `json_schema` check), or undefined. */
export function jsonSchemaProblemOfAny(schema: object): string | undefined {
  if (!ajv.validateSchema(schema)) return ajv.errorsText(ajv.errors, { dataVar: 'schema' });
  try {
    validatorOf(schema);
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

/** The validator of `schema` (compiled once). Throws when it cannot be compiled (jsonSchemaProblem says why first). */
export function validatorOf(schema: object): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) compiled.set(key, (validate = ajv.compile(schema)));
  return validate;
}
