import { api, readResponse, signedIn, type ApiResponse } from '../helpers/api';
import { buildTestServlets, type TestServletName } from '../helpers/servlets';
import { getStack } from '../helpers/stack';

/** A signed-in user of the servlet API, with helpers to publish modules the way `curl --data-binary` would. */
export async function libraryUser(prefix = 'lib', baseUrl = getStack().apiUrl) {
  const user = await signedIn(prefix);
  const cookie = `sessionId=${user.sessionId}`;
  return {
    ...user,
    api: api(user.sessionId, baseUrl),
    /** `PUT /api/servlets/~/<name>` with the raw module as the body. */
    putModule: (name: string, bytes: Uint8Array | ReadableStream<Uint8Array>, query = '', contentType = 'application/wasm') =>
      send(`${baseUrl}/api/servlets/~/${name}${query ? `?${query}` : ''}`, {
        method: 'PUT',
        headers: { cookie, 'content-type': contentType },
        body: bytes,
        // a stream has no length: sent chunked
        ...(bytes instanceof ReadableStream ? { duplex: 'half' } : {}),
      } as RequestInit),
    /** `GET /api/c/<address>`, the bytes as they came. */
    download: async (address: string, headers: Record<string, string> = {}) => {
      const res = await fetch(`${baseUrl}/api/c/${address}`, { headers: { cookie, ...headers } });
      return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
    },
  };
}

export type LibraryUser = Awaited<ReturnType<typeof libraryUser>>;

async function send(url: string, init: RequestInit): Promise<ApiResponse> {
  return readResponse(await fetch(url, init));
}

/** Publishes a test servlet and returns the answer's body; fails the test on anything but 201/200. */
export async function publish(user: LibraryUser, name: string, servlet: TestServletName, query = ''): Promise<any> {
  const res = await user.putModule(name, (await buildTestServlets())[servlet], query);
  if (res.status !== 201 && res.status !== 200) throw new Error(`publish ${name}: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * A valid module made larger: the servlet's bytes followed by a custom section (ignored by the engine) of
 * `extraBytes`, so it still describes and runs like the servlet.
 */
export function padded(bytes: Uint8Array, extraBytes: number, fill = 0x61): Uint8Array {
  const name = Buffer.from('padding');
  const payload = Buffer.concat([leb128(name.length), name, Buffer.alloc(extraBytes, fill)]);
  return new Uint8Array(Buffer.concat([Buffer.from(bytes), Buffer.from([0]), leb128(payload.length), payload]));
}

function leb128(value: number): Buffer {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return Buffer.from(out);
}

/** Sets every timestamp the profile's install list is computed from a minute back, as if nothing changed lately. */
export async function ageInstallList(owner: string, profile: string): Promise<void> {
  const { models } = getStack().db;
  const past = new Date(Date.now() - 60_000);
  await models.Profile.updateOne({ owner, name: profile }, { $set: { created_at: past, installs_modified_at: past } });
  const installs = await models.Installation.find({ owner, profile }).lean();
  await models.Installation.updateMany({ owner, profile }, { $set: { modified_at: past } });
  for (const i of installs) {
    await models.Servlet.updateOne({ owner: i.servlet_owner, name: i.servlet_name }, { $set: { modified_at: past } });
  }
}
