import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Layer, Router } from '@koa/router';
// ajv and ajv-formats come with @temporalio/worker (webpack's schema-utils); JSON Schema 2020-12 is OpenAPI 3.1's dialect.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { createApp } from '../../src/http/app';
import { exampleChecks } from '../../src/http/openapi/document';
import { installMcp } from '../../src/store/mcp-installs';
import { taskScheduleId } from '../../src/temporal/ids';
import { api, readResponse, signedIn, type ApiResponse } from '../helpers/api';
import { openaiToolCall, providerError } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';

type Doc = { openapi: string; paths: Record<string, Record<string, any>>; components: Record<string, any> };

const DOC_ID = 'https://ptr.invalid/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'patch'];

/** The routes the app's routers register: each router's layers, with the paths as mounted (`/api` included). */
function registeredLayers(): Layer[] {
  const stack = getStack();
  const app = createApp({ config: stack.config, logger: stack.logger, db: stack.db, keyring: stack.keyring, temporal: stack.temporal });
  const routers = (app.middleware as Array<{ router?: Router }>).map((m) => m.router).filter((r): r is Router => r !== undefined);
  expect(routers.length, 'routers mounted on the app').to.be.at.least(2);
  return routers.flatMap((r) => r.stack).filter((layer) => layer.methods.length > 0);
}

/** `router.all` registers every method Node knows: a catch-all that answers with an error, not an operation. */
const isCatchAll = (layer: Layer) => ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'].every((m) => layer.methods.includes(m));

const toOpenApiPath = (koaPath: string) => koaPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

interface FoundExample {
  at: string;
  schema: unknown;
  value: unknown;
}

/**
 * Every example in the document with the schema it illustrates: a media type's or parameter's `example` /
 * `examples` (against its `schema`), and a schema's own `example` / `examples`.
 */
function documentExamples(node: unknown, at: string[] = [], found: FoundExample[] = []): FoundExample[] {
  if (node === null || typeof node !== 'object') return found;
  if (Array.isArray(node)) {
    node.forEach((item, i) => documentExamples(item, [...at, String(i)], found));
    return found;
  }
  const obj = node as Record<string, unknown>;
  const where = at.join(' ');
  const schema = 'schema' in obj ? obj.schema : obj;
  if ('example' in obj) found.push({ at: `${where} example`, schema, value: obj.example });
  if (Array.isArray(obj.examples)) obj.examples.forEach((value, i) => found.push({ at: `${where} examples[${i}]`, schema, value }));
  else if (obj.examples && typeof obj.examples === 'object') {
    for (const [key, example] of Object.entries(obj.examples as Record<string, { value: unknown }>)) found.push({ at: `${where} ${key}`, schema, value: example.value });
  }
  for (const [key, value] of Object.entries(obj)) if (key !== 'example' && key !== 'examples') documentExamples(value, [...at, key], found);
  return found;
}

/** `#/components/...` references made absolute, so a schema of the document compiles on its own. */
const absolute = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(absolute);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#') ? `${DOC_ID}${v}` : absolute(v)]));
};

/** A JSON Schema 2020-12 validator (the dialect of OpenAPI 3.1) for the document's schemas; undefined when valid. */
function validatorFor(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat('base64', /^[A-Za-z0-9+/]*={0,2}$/);
  ajv.addSchema({ $id: DOC_ID, components: absolute(doc.components) });
  const compiled = new Map<string, ValidateFunction>();
  return (schema: unknown, value: unknown): string | undefined => {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) compiled.set(key, (validate = ajv.compile(absolute(schema) as object)));
    return validate(value) ? undefined : ajv.errorsText(validate.errors);
  };
}

/** The JSON schema of an operation's answer with `status`. */
function responseSchema(doc: Doc, method: string, docPath: string, status: number): unknown {
  const schema = doc.paths[docPath]?.[method]?.responses?.[String(status)]?.content?.['application/json']?.schema;
  expect(schema, `${method.toUpperCase()} ${docPath} ${status} in the document`).to.be.an('object');
  return schema;
}

describe('the OpenAPI document', () => {
  let doc: Doc;
  let validate: ReturnType<typeof validatorFor>;
  let layers: Layer[];

  before(async () => {
    layers = registeredLayers().filter((layer) => !isCatchAll(layer));
    const res = await api(undefined).get('/api/openapi.json');
    expect(res.status, res.text).to.equal(200);
    doc = res.body;
    validate = validatorFor(doc);
  });
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('is served at /api/openapi.json without a session, as OpenAPI 3.1 JSON', async () => {
    const res = await api(undefined).get('/api/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.body.openapi).to.match(/^3\.1\./);
    expect(res.body.info.title).to.be.a('string');
    expect(res.body.info.version).to.equal(JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8')).version);
    const again = await api(undefined).get('/api/openapi.json', { headers: { 'if-none-match': res.headers.get('etag')! } });
    expect(again.status).to.equal(304);
  });

  it('describes every route the routers register, with its path parameters', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const layer of layers) {
      for (const method of layer.methods.filter((m) => m !== 'HEAD').map((m) => m.toLowerCase())) {
        checked++;
        if (typeof layer.path === 'string') {
          const docPath = toOpenApiPath(layer.path);
          const operation = doc.paths[docPath]?.[method];
          if (!operation) {
            missing.push(`${method.toUpperCase()} ${docPath}`);
            continue;
          }
          const declared = (operation.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name).sort();
          const inPath = [...docPath.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
          expect(declared, `path parameters of ${method.toUpperCase()} ${docPath}`).to.deep.equal(inPath);
        } else {
          // A route by regular expression (the codec's): some documented path of that method must be one it takes.
          const matching = Object.entries(doc.paths).filter(([p, item]) => item[method] && (layer.path as RegExp).test(p.replace(/\{[^}]+\}/g, 'x')));
          if (matching.length === 0) missing.push(`${method.toUpperCase()} ${String(layer.path)}`);
        }
      }
    }
    expect(checked).to.be.greaterThan(60);
    expect(missing, 'registered routes missing from the document').to.deep.equal([]);
  });

  it('describes no operation that no router serves', () => {
    const phantom: string[] = [];
    for (const [docPath, item] of Object.entries(doc.paths)) {
      for (const method of METHODS.filter((m) => item[m])) {
        const sample = docPath.replace(/\{[^}]+\}/g, 'x');
        if (!layers.some((layer) => layer.methods.includes(method.toUpperCase()) && layer.match(sample))) phantom.push(`${method.toUpperCase()} ${docPath}`);
      }
    }
    expect(phantom).to.deep.equal([]);
  });

  it('gives every JSON request body an example', () => {
    const without: string[] = [];
    for (const [docPath, item] of Object.entries(doc.paths)) {
      for (const method of METHODS.filter((m) => item[m]?.requestBody)) {
        const json = item[method].requestBody.content['application/json'];
        if (json && Object.keys(json.examples ?? {}).length === 0) without.push(`${method.toUpperCase()} ${docPath}`);
      }
    }
    expect(without).to.deep.equal([]);
  });

  it('has examples that all validate against their schemas in the document', () => {
    const examples = documentExamples(doc);
    expect(examples.length).to.be.greaterThan(80);
    const invalid = examples.map((e) => ({ at: e.at, error: validate(e.schema, e.value) })).filter((e) => e.error !== undefined);
    expect(invalid).to.deep.equal([]);
  });

  it('has examples that the routes themselves accept (request bodies) and that fit their zod schemas (answers)', () => {
    const checks = exampleChecks(getStack().config);
    expect(checks.length).to.be.greaterThan(50);
    const failed: string[] = [];
    for (const { where, value, check } of checks) {
      try {
        check(value);
      } catch (err) {
        failed.push(`${where}: ${(err as Error).message}`);
      }
    }
    expect(failed).to.deep.equal([]);
  });

  it('refuses what does not fit (the validation above can fail)', () => {
    const task = responseSchema(doc, 'get', '/api/tasks/{user}/{profile}/{task}', 200);
    expect(validate(task, { name: 'x' })).to.be.a('string');
    expect(validate(task, { ...documentedTask(doc), surprise: true })).to.be.a('string');
    expect(validate(task, documentedTask(doc))).to.equal(undefined);
  });

  it('describes the answers the API really gives', async () => {
    const me = await signedIn('oas');
    const check = (res: ApiResponse, method: string, docPath: string) => {
      expect(validate(responseSchema(doc, method, docPath, res.status), res.body), `${method} ${docPath} ${res.status}: ${res.text}`).to.equal(undefined);
    };
    check(await me.api.get('/api/users/~'), 'get', '/api/users/{user}');
    check(await me.api.post('/api/profiles/~/work', { description: 'for work' }), 'post', '/api/profiles/{user}/{profile}');
    const put = await me.api.put('/api/tasks/~/work/haiku', {
      runner: 'openai',
      openai: { prompt: 'Write a haiku about {{ topic }}', model: 'gpt-4o-mini', max_tokens: 50 },
      settings: { key: 'sk-test-key-0123456789abcdef' },
      limits: { max_turns: 3 },
      webhook: { url: 'https://hooks.example.com/runs' },
    });
    expect(put.status, put.text).to.equal(201);
    check(put, 'put', '/api/tasks/{user}/{profile}/{task}');
    check(await me.api.get('/api/tasks/~/work'), 'get', '/api/tasks/{user}/{profile}');
    check(await me.api.get('/api/tasks/~/work/missing'), 'get', '/api/tasks/{user}/{profile}/{task}');
    check(await me.api.get('/api/tasks/~/work/haiku/webhook/deliveries'), 'get', '/api/tasks/{user}/{profile}/{task}/webhook/deliveries');
    check(await me.api.post('/api/tasks/~/work/haiku/signed'), 'post', '/api/tasks/{user}/{profile}/{task}/signed');
    check(await api(undefined).get('/api/users/~'), 'get', '/api/users/{user}');
    check(await api(undefined).get('/healthz'), 'get', '/healthz');
  });

  it('describes the runs, servlets and installs the API really gives', async () => {
    const { username, api: me } = await signedIn('oas');
    const check = (res: ApiResponse, method: string, docPath: string) => {
      expect(validate(responseSchema(doc, method, docPath, res.status), res.body), `${method} ${docPath} ${res.status}: ${res.text}`).to.equal(undefined);
    };
    await installServlet(me, username, 'greeter', 'hello');
    check(await me.get('/api/servlets/~/greeter'), 'get', '/api/servlets/{user}/{servlet}');
    check(await me.get('/api/servlets?q=greeter'), 'get', '/api/servlets');
    check(await me.get('/api/profiles/~/default/installations'), 'get', '/api/profiles/{user}/{profile}/installations');
    // An MCP install beside it (stored as an install stores it: test/mcp-install/ installs through a real server).
    await installMcp(getStack().db.models, getStack().keyring, {
      owner: username, profile: 'default', name: 'ev', url: new URL('https://127.0.0.1:9/mcp'), headers: { Authorization: 'Bearer x-0123456789' },
      listing: { tools: [{ name: 'echo', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true }, execution: { taskSupport: 'forbidden' } }], serverInfo: { name: 'ev', version: '1' }, protocolVersion: '2025-11-25' },
      allowedTools: ['echo'], approval: 'destructive', allowUpdate: true,
    });
    const listed = await me.get('/api/profiles/~/default/installations');
    expect(listed.body.installs.map((i: { name: string }) => i.name)).to.deep.equal(['ev', 'hello']);
    check(listed, 'get', '/api/profiles/{user}/{profile}/installations');
    // The stack's API has no MCP_ALLOWLIST (its guard refuses loopback before connecting), and a servlet install lists
    // nothing again: both are documented 400s.
    check(await me.post('/api/profiles/~/default/installations/ev/refresh'), 'post', '/api/profiles/{user}/{profile}/installations/{name}/refresh');
    check(await me.post('/api/profiles/~/default/installations/hello/refresh'), 'post', '/api/profiles/{user}/{profile}/installations/{name}/refresh');

    await createTask(me, 'default', 'oas');
    const triggered = await postSigned(await signedUrl(me, 'default', 'oas'), { text: 'x' }, { 'run-id': 'first' });
    expect(triggered.status, triggered.text).to.equal(201);
    check(triggered as ApiResponse, 'post', '/signed/tasks/{owner}/{profile}/{task}');
    await waitForRun(me, triggered.body.url);
    check(await me.get('/api/runs/~/default/oas/first'), 'get', '/api/runs/{user}/{profile}/{task}/{run}');
    check(await me.get('/api/runs/~/default/oas'), 'get', '/api/runs/{user}/{profile}/{task}');

    await me.put('/api/profiles/~/default/tasks/oas-a', { runner: 'openai', openai: { prompt: 'Say {{ text }}', model: getStack().config.VARIANT_A_MODEL }, settings: { key: 'sk-test-key-0123456789abcdef' } });
    const a = await me.put('/api/profiles/~/default/tasks/oas-a/runs/a1', { parameters: { text: 'x' } });
    expect(a.status, a.text).to.equal(201);
    check(a, 'put', '/api/profiles/{user}/{profile}/tasks/{task}/runs/{run}');
    await waitForRun(me, a.body.url);
    check(await me.get('/api/profiles/~/default/tasks/oas-a/runs/a1'), 'get', '/api/profiles/{user}/{profile}/tasks/{task}/runs/{run}');
    check(await me.post('/api/profiles/~/default/tasks/oas-a/runs/a1/cancel'), 'post', '/api/profiles/{user}/{profile}/tasks/{task}/runs/{run}/cancel');
  });

  it('describes runs with approval, tool and error entries, webhook deliveries and schedules as the API gives them', async function () {
    this.timeout(60_000);
    const { username, api: me } = await signedIn('oas');
    const { fake, temporal } = getStack();
    const check = (res: ApiResponse, method: string, docPath: string) => {
      expect(validate(responseSchema(doc, method, docPath, res.status), res.body), `${method} ${docPath} ${res.status}: ${res.text}`).to.equal(undefined);
    };
    await installServlet(me, username, 'greeter', 'hello');
    const gated = await me.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/greeter`, name: 'hello', settings: { approval: ['greet'] } });
    expect(gated.status, gated.text).to.equal(200);
    check(gated, 'post', '/api/profiles/{user}/{profile}/installations');
    // A private address: the network guard refuses the delivery before any connection is tried.
    const saved = await me.put('/api/tasks/~/default/oas-tools', {
      runner: 'openai',
      openai: { prompt: 'Say {{ text }}', model: 'test-model' },
      settings: { key: 'sk-test-key-0123456789abcdef' },
      webhook: { url: 'http://10.1.2.3/hook' },
    });
    expect(saved.status, saved.text).to.equal(201);
    check(saved, 'put', '/api/tasks/{user}/{profile}/{task}');

    fake.script([openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'Ann' } }]), providerError('openai', 400, 'the model refuses')]);
    const triggered = await postSigned(await signedUrl(me, 'default', 'oas-tools'), { text: 'x' }, { 'run-id': 't1' });
    expect(triggered.status, triggered.text).to.equal(201);
    const runPath = new URL(triggered.body.url).pathname;
    const approval = await until('the approval entry', async () => (await me.get(runPath)).body.results.find((e: any) => e.approval)?.approval);
    const waiting = await me.get(runPath);
    expect(waiting.body.status).to.equal('pending');
    check(waiting, 'get', '/api/runs/{user}/{profile}/{task}/{run}');
    check(await me.post(`${runPath}/approvals/${approval.id}`, { approve: true }), 'post', '/api/runs/{user}/{profile}/{task}/{run}/approvals/{approval}');
    const run = await waitForRun(me, triggered.body.url);
    expect(run.status).to.equal('error');
    expect(run.results.some((e: any) => e.exchange?.role === 'tool'), 'a tool entry').to.equal(true);
    expect(run.results.at(-1).error).to.match(/the model refuses/);
    check(await me.get(runPath), 'get', '/api/runs/{user}/{profile}/{task}/{run}');
    check(await me.get('/api/runs/~/default/oas-tools'), 'get', '/api/runs/{user}/{profile}/{task}');

    const deliveries = await until('the refused delivery', async () => {
      const res = await me.get('/api/tasks/~/default/oas-tools/webhook/deliveries');
      return res.body.deliveries?.length > 0 && res;
    });
    expect(deliveries.body.deliveries[0]).to.include({ run: 't1', status: 'refused' });
    check(deliveries, 'get', '/api/tasks/{user}/{profile}/{task}/webhook/deliveries');

    const schedules = [
      { path: '/api/tasks/~/default/oas-tools/schedules', docPath: '/api/tasks/{user}/{profile}/{task}/schedules', body: { cron: '0 3 * * *', timezone: 'Europe/Paris', paused: true, payload: { text: 'x' } } },
      { path: '/api/profiles/~/default/tasks/oas-tools/schedules', docPath: '/api/profiles/{user}/{profile}/tasks/{task}/schedules', body: { every: '1h', paused: true, parameters: { text: 'x' } } },
    ];
    for (const [i, { path: base, docPath, body }] of schedules.entries()) {
      const name = `nightly-${i}`;
      const created = await me.put(`${base}/${name}`, body);
      expect(created.status, created.text).to.equal(201);
      check(created, 'put', `${docPath}/{schedule}`);
      // One action of the schedule's own (paused or not), so that it has a recent run to show.
      await temporal.schedule.getHandle(taskScheduleId({ owner: username, profile: 'default', task: 'oas-tools', schedule: name })).trigger();
      const read = await until('the recent run', async () => {
        const res = await me.get(`${base}/${name}`);
        return res.body.recent_runs?.length > 0 && res;
      });
      check(read, 'get', `${docPath}/{schedule}`);
      check(await me.get(base), 'get', docPath);
      expect((await me.delete(`${base}/${name}`)).status).to.equal(204);
    }
  });
});

/** The task example of the document's task read. */
function documentedTask(doc: Doc): Record<string, unknown> {
  const content = doc.paths['/api/tasks/{user}/{profile}/{task}']!.get.responses['200'].content['application/json'];
  return Object.values(content.examples as Record<string, { value: Record<string, unknown> }>)[0]!.value;
}

describe('the docs page', () => {
  const base = () => getStack().apiUrl;

  it('serves Swagger UI at /docs without a session, from this host only', async () => {
    const res = await readResponse(await fetch(`${base()}/docs`));
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.contain("default-src 'self'");
    const urls = [...res.text.matchAll(/(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);
    expect(urls).to.include('/docs/assets/swagger-ui-bundle.js');
    for (const url of urls) expect(url, url).to.match(/^\/(?!\/)/);
    expect(res.text).not.to.match(/https?:\/\//);
    for (const url of urls) expect((await fetch(`${base()}${url}`)).status, url).to.equal(200);
  });

  it('serves the installed swagger-ui-dist files, as JavaScript, and a start script that reads /api/openapi.json', async () => {
    const bundle = await fetch(`${base()}/docs/assets/swagger-ui-bundle.js`);
    expect(bundle.status).to.equal(200);
    expect(bundle.headers.get('content-type')).to.match(/javascript/);
    const installed = readFileSync(path.join(path.dirname(require.resolve('swagger-ui-dist/package.json')), 'swagger-ui-bundle.js'));
    expect(Buffer.from(await bundle.arrayBuffer()).equals(installed)).to.equal(true);
    const css = await fetch(`${base()}/docs/assets/swagger-ui.css`);
    expect(css.headers.get('content-type')).to.match(/^text\/css/);
    const init = await readResponse(await fetch(`${base()}/docs/assets/init.js`));
    expect(init.headers.get('content-type')).to.match(/javascript/);
    expect(init.text).to.contain('"/api/openapi.json"');
    expect(init.text).not.to.match(/https?:\/\//);
  });

  it('serves no other file', async () => {
    for (const file of ['index.html', 'package.json', '..%2Fpackage.json', 'swagger-ui-bundle.js.map', '%ZZ', '%00', 'constructor']) {
      const res = await readResponse(await fetch(`${base()}/docs/assets/${file}`));
      expect(res.status, file).to.equal(404);
      expect(res.body.error.code).to.equal('not_found');
    }
  });
});
