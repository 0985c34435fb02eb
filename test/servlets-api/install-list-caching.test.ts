import { expect } from 'chai';
import { ageInstallList, libraryUser, publish, type LibraryUser } from './library';

/**
 * The Python client sends back the `Date` of its last answer as If-Modified-Since. HTTP dates have whole seconds,
 * so these tests never depend on timing: the install list's history is moved a minute back where a test needs
 * "nothing changed lately", and every change below happens within the same second as the answer before it or
 * later, which must never be answered with 304.
 */
describe('install list: If-Modified-Since and ETag', () => {
  const path = '/api/profiles/~/default/installations';
  const installsOf = (res: { body: { installs: Array<{ name: string }> } }) => res.body.installs.map((i) => i.name);

  async function userWithInstall(): Promise<LibraryUser> {
    const me = await libraryUser('ims');
    await publish(me, 'g', 'greeter');
    expect((await me.api.post(`${path}`, { servlet_slug: '~/g' })).status).to.equal(201);
    await ageInstallList(me.username, 'default');
    return me;
  }

  /** The list, then the `Date` to send back. */
  async function listed(me: LibraryUser) {
    const res = await me.api.get(path);
    expect(res.status).to.equal(200);
    const date = res.headers.get('date')!;
    expect(Number.isNaN(Date.parse(date))).to.equal(false);
    return { res, date };
  }

  it('answers with Date and Last-Modified, and 304 to If-Modified-Since when nothing changed', async () => {
    const me = await userWithInstall();
    const { res, date } = await listed(me);
    expect(Date.parse(res.headers.get('last-modified')!)).to.be.below(Date.parse(date));
    const again = await me.api.get(path, { headers: { 'if-modified-since': date } });
    expect(again.status).to.equal(304);
    expect(again.text).to.equal('');
  });

  it('answers 200 after an install, even one in the same second as the last answer', async () => {
    const me = await userWithInstall();
    const { date } = await listed(me);
    await me.api.post(path, { servlet_slug: '~/g', name: 'second' });
    const res = await me.api.get(path, { headers: { 'if-modified-since': date } });
    expect(res.status).to.equal(200);
    expect(installsOf(res)).to.deep.equal(['g', 'second']);
  });

  it('answers 200 after an uninstall', async () => {
    const me = await userWithInstall();
    const { date } = await listed(me);
    expect((await me.api.delete(`${path}/g`)).status).to.equal(204);
    const res = await me.api.get(path, { headers: { 'if-modified-since': date } });
    expect(res.status).to.equal(200);
    expect(installsOf(res)).to.deep.equal([]);
  });

  it('answers 200 after an install is updated in place', async () => {
    const me = await userWithInstall();
    const { date } = await listed(me);
    await me.api.post(path, { servlet_slug: '~/g', settings: { config: { greeting: 'Hi' } } });
    const res = await me.api.get(path, { headers: { 'if-modified-since': date } });
    expect(res.status).to.equal(200);
    expect(res.body.installs[0].settings.config).to.deep.equal({ greeting: 'Hi' });
  });

  it("answers 200 after the installed servlet's module is replaced", async () => {
    const me = await userWithInstall();
    const { res: before, date } = await listed(me);
    await publish(me, 'g', 'image');
    const res = await me.api.get(path, { headers: { 'if-modified-since': date } });
    expect(res.status).to.equal(200);
    expect(res.body.installs[0].binding.contentAddress).to.not.equal(before.body.installs[0].binding.contentAddress);
  });

  it('answers 200 after the installed servlet is deleted, and its install is gone', async () => {
    const me = await userWithInstall();
    const { date } = await listed(me);
    await me.api.delete('/api/servlets/~/g');
    const res = await me.api.get(path, { headers: { 'if-modified-since': date } });
    expect(res.status).to.equal(200);
    expect(installsOf(res)).to.deep.equal([]);
  });

  it('answers 304 to If-None-Match with the ETag of an unchanged list, and 200 once it changed', async () => {
    const me = await libraryUser('etag');
    await publish(me, 'g', 'greeter');
    await me.api.post(path, { servlet_slug: '~/g' });
    const first = await me.api.get(path);
    const etag = first.headers.get('etag')!;
    expect(etag).to.match(/^W\/".+"$/);
    expect((await me.api.get(path, { headers: { 'if-none-match': etag } })).status).to.equal(304);
    await me.api.post(path, { servlet_slug: '~/g', name: 'more' });
    expect((await me.api.get(path, { headers: { 'if-none-match': etag } })).status).to.equal(200);
  });

  it('ignores an If-Modified-Since it cannot read', async () => {
    const me = await userWithInstall();
    expect((await me.api.get(path, { headers: { 'if-modified-since': 'yesterday-ish' } })).status).to.equal(200);
  });
});
