import crypto from 'node:crypto';
import { expect } from 'chai';
import { storeText } from '../../src/store/run-content';
import { runWorkflowId } from '../../src/store/runs';
import { readResponse, signedIn, startApi, uniqueUser, type ApiResponse } from '../helpers/api';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (text: string) => Buffer.from(text, 'base64').toString('utf8');
const jsonPayload = (value: unknown): JsonPayload => ({ metadata: { encoding: b64('json/plain') }, data: b64(JSON.stringify(value)) });
const valueOf = (payload: JsonPayload) => JSON.parse(unb64(payload.data!));

/** What the Web UI sends: JSON, the namespace header, and whatever else the test adds. */
async function codec(baseUrl: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return readResponse(
    await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': getStack().config.TEMPORAL_NAMESPACE, ...headers },
      body: JSON.stringify(body),
    }),
  );
}

/** A browser's preflight before the UI's decode request. */
async function preflight(baseUrl: string, origin: string, path = '/codec/decode'): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
  });
}

/** A text above the inline limit, stored as a run would store it; returns the text and its reference. */
async function storedText(size = 4096) {
  const text = `start ${crypto.randomBytes(8).toString('hex')} ${'é'.repeat(size)} end`;
  const ref = await storeText(getStack().db.models, `run/${uniqueUser()}/default/t/r`, 'k1', text, 1024);
  expect(ref).to.have.keys('ref', 'bytes', 'parts');
  return { text, ref };
}

/** Every payload in a workflow history, in protobuf JSON (base64), as the Web UI holds them. */
function historyPayloads(value: unknown, found: JsonPayload[] = []): JsonPayload[] {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return found;
  const v = value as { metadata?: Record<string, Uint8Array>; data?: unknown };
  if (v.metadata && typeof v.metadata === 'object' && Object.values(v.metadata).every((m) => m instanceof Uint8Array) && (v.data === undefined || v.data instanceof Uint8Array)) {
    found.push({
      metadata: Object.fromEntries(Object.entries(v.metadata).map(([k, m]) => [k, Buffer.from(m).toString('base64')])),
      ...(v.data && (v.data as Uint8Array).length > 0 ? { data: Buffer.from(v.data as Uint8Array).toString('base64') } : {}),
    });
    return found;
  }
  for (const item of Array.isArray(value) ? value : Object.values(value)) historyPayloads(item, found);
  return found;
}

describe('codec endpoint for the Temporal Web UI', () => {
  const apiUrl = () => getStack().apiUrl;

  describe('decode', () => {
    it('puts stored texts back where history holds their references, and leaves everything else as it was', async () => {
      const { text, ref } = await storedText();
      const result = { kind: 'turn', entry: { lastMessage: { role: 'assistant', content: ref } }, usage: { tokens: 12 }, list: [ref, 'small', 3] };
      const res = await codec(apiUrl(), '/codec/decode', { payloads: [jsonPayload(result)] });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.payloads).to.have.length(1);
      expect(res.body.payloads[0].metadata).to.deep.equal({ encoding: b64('json/plain') });
      expect(valueOf(res.body.payloads[0])).to.deep.equal({ ...result, entry: { lastMessage: { role: 'assistant', content: text } }, list: [text, 'small', 3] });
    });

    it('decodes a payload that is a reference itself', async () => {
      const { text, ref } = await storedText();
      const res = await codec(apiUrl(), '/codec/decode', { payloads: [jsonPayload(ref)] });
      expect(res.status, res.text).to.equal(200);
      expect(valueOf(res.body.payloads[0])).to.equal(text);
    });

    it('passes other encodings, empty payloads and payloads without references through unchanged, in order', async () => {
      const { text, ref } = await storedText();
      const binary = { metadata: { encoding: b64('binary/plain') }, data: b64('{"ref":"x","bytes":1,"parts":1}') };
      const empty = { metadata: { encoding: b64('binary/null') } };
      // Key order and spacing as sent: a payload without references is not rewritten.
      const plain = { metadata: { encoding: b64('json/plain') }, data: b64('{ "b": 1, "a": {"ref": "x", "bytes": 1} }') };
      const notJson = { metadata: { encoding: b64('json/plain') }, data: b64('not json') };
      const payloads = [binary, empty, jsonPayload({ content: ref }), plain, notJson];
      const res = await codec(apiUrl(), '/codec/decode', { payloads });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.payloads).to.have.length(5);
      expect(res.body.payloads[0]).to.deep.equal(binary);
      expect(res.body.payloads[1]).to.deep.equal(empty);
      expect(valueOf(res.body.payloads[2])).to.deep.equal({ content: text });
      expect(res.body.payloads[3]).to.deep.equal(plain);
      expect(res.body.payloads[4]).to.deep.equal(notJson);
    });

    it('shows a note instead of a text that is no longer stored, and decodes the rest', async () => {
      const { text, ref } = await storedText();
      const gone = { ref: `run/${uniqueUser()}/default/t/r#gone`, bytes: 5000, parts: 1 };
      const res = await codec(apiUrl(), '/codec/decode', { payloads: [jsonPayload({ a: gone, b: ref })] });
      expect(res.status, res.text).to.equal(200);
      const value = valueOf(res.body.payloads[0]);
      expect(value.a).to.be.a('string').and.match(/no longer stored/).and.include(gone.ref);
      expect(value.b).to.equal(text);
    });

    it("leaves another namespace's payloads alone", async () => {
      const { ref } = await storedText();
      const payload = jsonPayload({ content: ref });
      const res = await codec(apiUrl(), '/codec/decode', { payloads: [payload] }, { 'x-namespace': 'someone-else' });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.payloads).to.deep.equal([payload]);
    });

    it('decodes the history of a real run whose prompt was stored apart', async function () {
      this.timeout(60_000);
      getStack().fake.reset();
      const { api, username } = await signedIn();
      await createTask(api, 'default', 'big', { prompt: 'Repeat: {{ text }}' });
      const url = await signedUrl(api, 'default', 'big');
      const marker = crypto.randomBytes(8).toString('hex');
      const big = `${marker} ${'lorem ipsum '.repeat(7000)}`; // ~84 KB, over RUN_INLINE_BYTES (64 KiB)
      const trig = await postSigned(url, { text: big }, { 'run-id': 'r1' });
      expect(trig.status, trig.text).to.equal(201);
      const run = await waitForRun(api, trig.body.url);
      expect(run.status, JSON.stringify(run).slice(0, 500)).to.equal('ready');

      const id = runWorkflowId({ owner: username, profile: 'default', task: 'big', run: 'r1' });
      const history = await getStack().temporal.workflow.getHandle(id).fetchHistory();
      const payloads = historyPayloads(history);
      const raw = payloads.map((p) => (p.data ? unb64(p.data) : '')).join('\n');
      expect(raw, 'history holds references, not the prompt').not.to.include(marker);
      expect(raw).to.include('"ref"');

      const res = await codec(apiUrl(), '/codec/decode', { payloads });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.payloads).to.have.length(payloads.length);
      const decoded = (res.body.payloads as JsonPayload[]).map((p) => (p.data ? unb64(p.data) : '')).join('\n');
      expect(decoded).to.include(`Repeat: ${marker}`);
      expect(decoded).to.include(`echo: Repeat: ${marker}`);
    });
  });

  it('returns payloads unchanged from encode', async () => {
    const { ref } = await storedText();
    const payloads = [jsonPayload({ content: ref }), { metadata: { encoding: b64('binary/null') } }];
    const res = await codec(apiUrl(), '/codec/encode', { payloads });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ payloads });
  });

  it('names the field of a bad body', async () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'payloads: required'],
      [{ payloads: [{ data: 'not base64!' }] }, 'payloads.0.data: expected base64'],
      [{ payloads: [{ metadata: { encoding: 42 } }] }, 'payloads.0.metadata.encoding: expected base64'],
      [{ payloads: Array.from({ length: 1001 }, () => ({})) }, 'payloads: at most 1000 payloads per request'],
    ];
    for (const [body, message] of cases) {
      const res = await codec(apiUrl(), '/codec/decode', body);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_request');
      expect(res.body.error.message).to.include(message);
    }
  });

  describe('browsers (CORS)', () => {
    it("answers the dev Web UI's preflight with what the UI sends", async () => {
      for (const origin of ['http://localhost:8233', 'http://127.0.0.1:8233']) {
        const res = await preflight(apiUrl(), origin);
        expect(res.status).to.equal(204);
        expect(res.headers.get('access-control-allow-origin')).to.equal(origin);
        expect(res.headers.get('access-control-allow-methods')).to.equal('POST, OPTIONS');
        expect(res.headers.get('access-control-allow-headers')?.toLowerCase().split(/,\s*/)).to.include.members(['content-type', 'x-namespace', 'authorization']);
        expect(res.headers.get('access-control-allow-credentials')).to.equal('true');
        expect(res.headers.get('vary')).to.match(/origin/i);
      }
    });

    it('does not answer a preflight from a foreign origin', async () => {
      const res = await preflight(apiUrl(), 'https://evil.example');
      expect(res.status).to.equal(403);
      expect(res.headers.get('access-control-allow-origin')).to.equal(null);
    });

    it('refuses a request from a foreign origin, and lets the allowed origin read the answer', async () => {
      const foreign = await codec(apiUrl(), '/codec/decode', { payloads: [] }, { origin: 'http://evil.example:8080' });
      expect(foreign.status, foreign.text).to.equal(403);
      expect(foreign.body.error.code).to.equal('origin_not_allowed');
      const allowed = await codec(apiUrl(), '/codec/decode', { payloads: [] }, { origin: 'http://localhost:8233' });
      expect(allowed.status, allowed.text).to.equal(200);
      expect(allowed.headers.get('access-control-allow-origin')).to.equal('http://localhost:8233');
    });

    it('allows in production only the origins of CODEC_CORS_ORIGINS', async () => {
      const prod = await startApi({ NODE_ENV: 'production', CODEC_TOKEN: 't0ken-cors', CODEC_CORS_ORIGINS: 'https://ui.example.com, https://other.example.com/' });
      for (const origin of ['https://ui.example.com', 'https://other.example.com']) {
        expect((await preflight(prod.url, origin, '/codec/t0ken-cors/decode')).headers.get('access-control-allow-origin')).to.equal(origin);
      }
      const dev = await preflight(prod.url, 'http://localhost:8233', '/codec/t0ken-cors/decode');
      expect(dev.status).to.equal(403);
      expect(dev.headers.get('access-control-allow-origin')).to.equal(null);
      await prod.close();
    });
  });

  describe('access', () => {
    it('is off in production without CODEC_TOKEN, saying how to turn it on', async () => {
      const prod = await startApi({ NODE_ENV: 'production' });
      for (const path of ['/codec/decode', '/codec//decode', '/codec/encode']) {
        const res = await codec(prod.url, path, { payloads: [] });
        expect(res.status, `${path}: ${res.text}`).to.equal(403);
        expect(res.body.error.code).to.equal('codec_disabled');
        expect(res.body.error.message).to.include('CODEC_TOKEN');
      }
      await prod.close();
    });

    it('takes CODEC_TOKEN as a bearer token or in the path, and refuses a wrong or missing one', async () => {
      const token = `tok/${crypto.randomBytes(12).toString('hex')}`;
      const prod = await startApi({ NODE_ENV: 'production', CODEC_TOKEN: token });
      const { text, ref } = await storedText();
      const body = { payloads: [jsonPayload({ content: ref })] };

      const header = await codec(prod.url, '/codec/decode', body, { authorization: `Bearer ${token}` });
      expect(header.status, header.text).to.equal(200);
      expect(valueOf(header.body.payloads[0])).to.deep.equal({ content: text });
      const inPath = await codec(prod.url, `/codec/${encodeURIComponent(token)}/decode`, body);
      expect(inPath.status, inPath.text).to.equal(200);
      expect(valueOf(inPath.body.payloads[0])).to.deep.equal({ content: text });
      // The UI passes its own access token as the bearer when told to; the token in the path still counts.
      const both = await codec(prod.url, `/codec/${encodeURIComponent(token)}/encode`, body, { authorization: 'Bearer some-oidc-jwt' });
      expect(both.status, both.text).to.equal(200);

      for (const [path, headers] of [
        ['/codec/decode', {}],
        ['/codec/decode', { authorization: `Bearer ${token}x` }],
        ['/codec/wrong/decode', {}],
        ['/codec//decode', {}],
      ] as Array<[string, Record<string, string>]>) {
        const res = await codec(prod.url, path, body, headers);
        expect(res.status, `${path}: ${res.text}`).to.equal(401);
        expect(res.body.error.code).to.equal('unauthorized');
      }
      await prod.close();
    });

    it('keeps a token in the path out of the access log', async () => {
      const token = `secret-${crypto.randomBytes(8).toString('hex')}`;
      const prod = await startApi({ NODE_ENV: 'production', CODEC_TOKEN: token });
      expect((await codec(prod.url, `/codec/${token}/decode`, { payloads: [] })).status).to.equal(200);
      expect((await codec(prod.url, `/codec/${token}-wrong/decode`, { payloads: [] })).status).to.equal(401);
      const logs = getStack().logs.text();
      expect(logs).to.include('/codec/***/decode');
      expect(logs).not.to.include(token);
      await prod.close();
    });

    it('serves, without CODEC_TOKEN outside production, callers on this machine and not callers a proxy forwards from elsewhere', async () => {
      const local = await codec(apiUrl(), '/codec/decode', { payloads: [] });
      expect(local.status, local.text).to.equal(200);
      for (const forwarded of ['203.0.113.7', '127.0.0.1, 203.0.113.7']) {
        const res = await codec(apiUrl(), '/codec/decode', { payloads: [] }, { 'x-forwarded-for': forwarded });
        expect(res.status, res.text).to.equal(403);
        expect(res.body.error.code).to.equal('codec_disabled');
      }
    });
  });
});
