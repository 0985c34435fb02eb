import { expect } from 'chai';
import { contentAddress } from '../../activities/servlets';
import { MODULE_CHUNK_BYTES } from '../../src/store/modules';
import { buildTestServlets, type TestServletName } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { libraryUser, padded, publish } from './library';

describe('module download by content address', () => {
  let servlets: Record<TestServletName, Uint8Array>;
  before(async () => {
    servlets = await buildTestServlets();
  });

  it('gives the owner the bytes as published, with a strong ETag and immutable caching', async () => {
    const me = await libraryUser();
    const body = await publish(me, 'g', 'greeter');
    const res = await me.download(body.content_address);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/wasm');
    expect(res.headers.get('etag')).to.equal(`"${body.content_address}"`);
    expect(res.headers.get('cache-control')).to.include('immutable');
    expect(Buffer.from(res.bytes).equals(Buffer.from(servlets.greeter))).to.equal(true);
    const again = await me.download(body.content_address, { 'if-none-match': `"${body.content_address}"` });
    expect(again.status).to.equal(304);
  });

  it("gives the bytes to a user who installed another user's public servlet, and to no one else", async () => {
    const owner = await libraryUser('own');
    const installer = await libraryUser('ins');
    const stranger = await libraryUser('str');
    // bytes only this test publishes, so no other test's servlet makes them downloadable to these users
    const bytes = padded(servlets.greeter, 7, 0x41);
    expect((await owner.putModule('pub', bytes, 'visibility=public')).status).to.equal(201);
    const address = contentAddress(bytes);
    expect((await installer.download(address)).status, 'before installing').to.equal(404);
    await installer.api.post('/api/profiles/~/default/installations', { servlet_slug: `${owner.username}/pub` });
    expect((await installer.download(address)).status).to.equal(200);
    const refused = await stranger.download(address);
    expect(refused.status).to.equal(404);
    expect(JSON.parse(Buffer.from(refused.bytes).toString()).error.code).to.equal('not_found');
  });

  it("answers 404 for another user's private module, an unknown address and a malformed one", async () => {
    const owner = await libraryUser('own');
    const stranger = await libraryUser('str');
    const bytes = padded(servlets.greeter, 9, 0x42);
    expect((await owner.putModule('priv', bytes)).status).to.equal(201);
    expect((await owner.download(contentAddress(bytes))).status, 'its owner gets it').to.equal(200);
    expect((await stranger.download(contentAddress(bytes))).status).to.equal(404);
    expect((await owner.download('0'.repeat(64))).status).to.equal(404);
    expect((await owner.download('not-an-address')).status).to.equal(404);
    expect((await owner.download(contentAddress(bytes).toUpperCase())).status).to.equal(404);
  });

  it('stores a module larger than one database document in parts and gives back the same bytes', async () => {
    const me = await libraryUser();
    const bytes = padded(servlets.greeter, 2 * MODULE_CHUNK_BYTES + 12345, 0x43);
    const res = await me.putModule('big', bytes);
    expect(res.status).to.equal(201);
    const address = contentAddress(bytes);
    expect(await getStack().db.models.ModuleChunk.countDocuments({ content_address: address })).to.equal(2);
    const got = await me.download(address);
    expect(got.bytes.length).to.equal(bytes.length);
    expect(contentAddress(got.bytes)).to.equal(address);

    await me.api.delete('/api/servlets/~/big');
    expect(await getStack().db.models.ModuleChunk.countDocuments({ content_address: address })).to.equal(0);
    expect((await me.download(address)).status).to.equal(404);
  });
});
