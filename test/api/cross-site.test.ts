import { expect } from 'chai';
import { api, signedIn, startApi, type ApiResponse } from '../helpers/api';
import { getStack } from '../helpers/stack';

const ELSEWHERE = 'http://elsewhere.example';
const expectCrossSite = (res: ApiResponse) => {
  expect(res.status, res.text).to.equal(403);
  expect(res.body.error.code).to.equal('cross_site_request');
};
/** A fresh profile name, so each request's effect (or its absence) can be seen. */
let n = 0;
const profile = () => `site-${++n}`;

describe('writes sent from another site with the session cookie', () => {
  it('refuses a cookie POST with a foreign Origin, and changes nothing', async () => {
    const me = await signedIn('xsite');
    const name = profile();
    const res = await me.api.post(`/api/profiles/~/${name}`, {}, { headers: { origin: ELSEWHERE } });
    expectCrossSite(res);
    expect(res.body.error.message).to.contain(ELSEWHERE);
    expect((await me.api.get(`/api/profiles/~/${name}`)).status).to.equal(404);
  });

  it('refuses a cookie POST marked Sec-Fetch-Site: cross-site, even without an Origin', async () => {
    const me = await signedIn('xsite');
    const name = profile();
    expectCrossSite(await me.api.post(`/api/profiles/~/${name}`, {}, { headers: { 'sec-fetch-site': 'cross-site' } }));
    expectCrossSite(await me.api.post(`/api/profiles/~/${name}`, {}, { headers: { 'sec-fetch-site': 'cross-site', origin: getStack().apiUrl } }));
    expect((await me.api.get(`/api/profiles/~/${name}`)).status).to.equal(404);
  });

  it('refuses PUT and DELETE as well, an Origin of "null", and whatever the case of the path', async () => {
    const me = await signedIn('xsite');
    const name = profile();
    expect((await me.api.post(`/api/profiles/~/${name}`, {})).status).to.equal(201);
    const foreign = { headers: { origin: ELSEWHERE } };
    expectCrossSite(await me.api.put(`/api/tasks/~/${name}/t`, { runner: 'openai', openai: { prompt: 'x', model: 'm' } }, foreign));
    expectCrossSite(await me.api.delete(`/api/profiles/~/${name}`, foreign));
    expectCrossSite(await me.api.request('PATCH', `/api/profiles/~/${name}`, {}, foreign));
    expectCrossSite(await me.api.delete(`/api/profiles/~/${name}`, { headers: { origin: 'null' } }));
    expectCrossSite(await me.api.delete(`/API/profiles/~/${name}`, foreign));
    expect((await me.api.get(`/api/profiles/~/${name}`)).status).to.equal(200);
  });

  it("lets through a cookie POST from the API's own origin", async () => {
    const me = await signedIn('xsite');
    const own = new URL(getStack().apiUrl).origin;
    const res = await me.api.post(`/api/profiles/~/${profile()}`, {}, { headers: { origin: own, 'sec-fetch-site': 'same-origin' } });
    expect(res.status, res.text).to.equal(201);
  });

  it("takes PUBLIC_URL's origin and the request's own Host as the API's", async () => {
    const proxied = await startApi({ PUBLIC_URL: 'https://ptr.example.com/base' });
    const me = await signedIn('xsite');
    const at = api(me.sessionId, proxied.url);
    expect((await at.post(`/api/profiles/~/${profile()}`, {}, { headers: { origin: 'https://ptr.example.com' } })).status).to.equal(201);
    expect((await at.post(`/api/profiles/~/${profile()}`, {}, { headers: { origin: proxied.url } })).status).to.equal(201);
    expectCrossSite(await at.post(`/api/profiles/~/${profile()}`, {}, { headers: { origin: 'http://ptr.example.com' } }));
  });

  it('lets through a cookie POST with neither Origin nor Sec-Fetch-Site, as curl and the Python client send', async () => {
    const me = await signedIn('xsite');
    const res = await me.api.post(`/api/profiles/~/${profile()}`, {});
    expect(res.status, res.text).to.equal(201);
  });

  it('lets through a Bearer POST with a foreign Origin: another site cannot know the credential', async () => {
    const me = await signedIn('xsite');
    const bearer = { headers: { authorization: `Bearer ${me.sessionId}`, origin: ELSEWHERE, 'sec-fetch-site': 'cross-site' } };
    const res = await api(undefined).post(`/api/profiles/~/${profile()}`, {}, bearer);
    expect(res.status, res.text).to.equal(201);
  });

  it('never refuses a GET', async () => {
    const me = await signedIn('xsite');
    const res = await me.api.get('/api/users/~', { headers: { origin: ELSEWHERE, 'sec-fetch-site': 'cross-site' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.username).to.equal(me.username);
  });

  it('checks POST /api/sign-in the same way, without using up the link', async () => {
    const me = await signedIn('xsite');
    const link = await me.api.post('/api/sign-in-links', {});
    const token = /#token=(.+)$/.exec(link.body.url)![1]!;
    expectCrossSite(await api(undefined).post('/api/sign-in', { token }, { headers: { origin: ELSEWHERE } }));
    expectCrossSite(await api(undefined).post('/api/sign-in', { token }, { headers: { 'sec-fetch-site': 'cross-site' } }));
    const own = await api(undefined).post('/api/sign-in', { token }, { headers: { origin: new URL(getStack().apiUrl).origin } });
    expect(own.status, own.text).to.equal(204);
  });

  it('refuses a sign-in link asked for from another site', async () => {
    const me = await signedIn('xsite');
    expectCrossSite(await me.api.post('/api/sign-in-links', {}, { headers: { origin: ELSEWHERE } }));
    expectCrossSite(await me.api.post('/api/sign-out', undefined, { headers: { origin: ELSEWHERE } }));
    expect((await me.api.get('/api/users/~')).status, 'the session was not signed out').to.equal(200);
  });
});
