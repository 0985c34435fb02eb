import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { buildOpenApiDocument } from '../../src/http/openapi/document';

/**
 * Writes the API's OpenAPI document, as the API builds it, for openapi-typescript to turn into the console's types.
 * The document depends on the server's config only through limits and Variant A's model, so the defaults do here;
 * the required settings get placeholder values (nothing is connected to, nothing is encrypted).
 */
const config = loadConfig({
  MONGO_URL: 'mongodb://127.0.0.1:1/unused',
  TEMPORAL_ADDRESS: '127.0.0.1:1',
  SIGNING_SECRET: 'x'.repeat(32),
  MASTER_KEY: `unused:${Buffer.alloc(32).toString('base64')}`,
});
const out = path.join(__dirname, '..', 'generated', 'openapi.json');
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(buildOpenApiDocument(config), null, 2)}\n`);
