import fs from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import wabtInit from 'wabt';
import type { Api } from './api';

/**
 * Test servlets, built from the WebAssembly text in test/fixtures/servlets (no binaries are checked in). Each
 * `.wat` file may say `;; @prelude` to include prelude.wat (Extism imports and helpers) and write string
 * constants as `(string "text")`, which becomes `(i32.const <address>) (i32.const <length>)` with the text placed
 * in a data segment. `.txt` files are handed over as they are (bad modules). Built once per test run, in memory:
 * wabt needs tens of milliseconds for all of them.
 */
export const TEST_SERVLETS = [
  'greeter',
  'http-fetcher',
  'file-reader',
  'infinite-loop',
  'memory-hog',
  'huge-response',
  'bulk',
  'image',
  'no-call-export',
  'describe-bad-json',
  'describe-fails',
  'not-wasm',
] as const;

export type TestServletName = (typeof TEST_SERVLETS)[number];

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'servlets');
/** Below this address the data segments of strings; the prelude's heap starts at 64 KiB. */
const STRINGS_START = 1024;
const STRINGS_END = 65536;

let built: Promise<Record<TestServletName, Uint8Array>> | undefined;

export function buildTestServlets(): Promise<Record<TestServletName, Uint8Array>> {
  built ??= buildAll();
  return built;
}

async function buildAll(): Promise<Record<TestServletName, Uint8Array>> {
  const files = await fs.readdir(FIXTURES);
  const entries = await Promise.all(
    TEST_SERVLETS.map(async (name) => {
      if (files.includes(`${name}.txt`)) return [name, new Uint8Array(await fs.readFile(path.join(FIXTURES, `${name}.txt`)))] as const;
      return [name, await compileWat(await fs.readFile(path.join(FIXTURES, `${name}.wat`), 'utf8'), `${name}.wat`)] as const;
    }),
  );
  return Object.fromEntries(entries) as Record<TestServletName, Uint8Array>;
}

let wabt: ReturnType<typeof wabtInit> | undefined;
let prelude: Promise<string> | undefined;

/** Compiles WebAssembly text, with the prelude and `(string "...")` constants of the fixtures available. */
export async function compileWat(source: string, name = 'inline.wat'): Promise<Uint8Array> {
  wabt ??= wabtInit();
  prelude ??= fs.readFile(path.join(FIXTURES, 'prelude.wat'), 'utf8');
  const module = (await wabt).parseWat(name, expand(source, await prelude));
  try {
    return new Uint8Array(module.toBinary({}).buffer);
  } finally {
    module.destroy();
  }
}

/** Pastes the prelude and lays out `(string "...")` constants (escapes allowed: \" \\ \n). */
function expand(source: string, prelude: string): string {
  let address = STRINGS_START;
  const segments: string[] = [];
  const interned = new Map<string, string>();
  const body = source.replace(';; @prelude', prelude).replace(/\(string "((?:[^"\\]|\\.)*)"\)/g, (_match, text: string) => {
    const known = interned.get(text);
    if (known) return known;
    const length = Buffer.byteLength(text.replace(/\\(["\\n])/g, (_e, c: string) => (c === 'n' ? '\n' : c)));
    const operands = `(i32.const ${address}) (i32.const ${length})`;
    segments.push(`  (data (i32.const ${address}) "${text}")`);
    interned.set(text, operands);
    address += length;
    if (address > STRINGS_END) throw new Error('test servlet strings overflow the first 64 KiB');
    return operands;
  });
  const end = body.lastIndexOf(')');
  return `${body.slice(0, end)}\n${segments.join('\n')}\n)`;
}

/** Publishes a test servlet and installs it into the user's default profile, through the API. */
export async function installServlet(api: Api, username: string, servlet: TestServletName, name: string, config: Record<string, string> = {}) {
  const modules = await buildTestServlets();
  const put = await api.request('PUT', `/api/servlets/~/${servlet}`, undefined, { headers: { 'content-type': 'application/wasm' }, raw: modules[servlet] });
  expect(put.status, put.text).to.be.oneOf([200, 201]);
  const res = await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/${servlet}`, name, settings: { config } });
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}
