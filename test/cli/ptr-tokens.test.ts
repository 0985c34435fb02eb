import { expect } from 'chai';
import { api, signedIn, type Api } from '../helpers/api';
import { createTask } from '../helpers/runs';
import { ptrAs } from '../helpers/ptr';

/** `ptr` in this process, for a user of the shared stack's API. */
const ptr = (args: string[], sessionId: string) => ptrAs(args, sessionId);

const withToken = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

describe('ptr token create|list|revoke', () => {
  let me: { username: string; sessionId: string; api: Api };
  before(async () => {
    me = await signedIn('ptr-token');
    expect((await me.api.post('/api/profiles/~/work', {})).status).to.equal(201);
    await createTask(me.api, 'work', 'job');
  });

  it('prints the token alone on stdout, warns on stderr that it is shown once, and the token works as asked', async () => {
    const made = await ptr(['token', 'create', 'script', '--profile', 'work', '--scope', 'tasks:read', '--scope', 'runs:read', '--days', '7'], me.sessionId);
    expect(made.code, made.stderr).to.equal(0);
    expect(made.stdout).to.match(/^ptr_[A-Za-z0-9_-]{43,}\n$/);
    expect(made.stderr).to.match(/only time the token is shown/);
    expect(made.stderr).to.contain('tasks:read, runs:read');
    const token = made.stdout.trim();
    expect((await api(undefined).get('/api/tasks/~/work/job', withToken(token))).status).to.equal(200);
    expect((await api(undefined).get('/api/tasks/~/default', withToken(token))).body.error.code).to.equal('profile_not_allowed');
    const [listed] = (await me.api.get('/api/tokens/~')).body;
    expect(listed).to.deep.include({ name: 'script', profiles: ['work'], scopes: ['tasks:read', 'runs:read'] });
    expect((Date.parse(listed.expires_at) - Date.parse(listed.created_at)) / 86_400_000).to.equal(7);
  });

  it('lists tokens without the tokens, as a table and as JSON', async () => {
    const made = await ptr(['token', 'create', 'listed'], me.sessionId);
    expect(made.code, made.stderr).to.equal(0);
    const human = await ptr(['token', 'list'], me.sessionId);
    expect(human.code, human.stderr).to.equal(0);
    expect(human.stdout).to.match(/^NAME +PROFILES +SCOPES +EXPIRES +LAST USED\n/);
    expect(human.stdout).to.match(/\nlisted +\* +tasks:read,runs:trigger,runs:read,runs:control +\d{4}-/);
    expect(human.stdout).not.to.contain(made.stdout.trim());
    const json = await ptr(['--json', 'token', 'list'], me.sessionId);
    expect(JSON.parse(json.stdout).map((t: { name: string }) => t.name)).to.include('listed');
    expect(json.stdout).not.to.contain(made.stdout.trim());
  });

  it('revokes a token, and says so when there is none by that name', async () => {
    const made = await ptr(['token', 'create', 'brief'], me.sessionId);
    expect(made.code, made.stderr).to.equal(0);
    const revoked = await ptr(['token', 'revoke', 'brief'], me.sessionId);
    expect(revoked.code, revoked.stderr).to.equal(0);
    expect(revoked.stdout).to.equal('revoked token brief\n');
    const again = await ptr(['token', 'revoke', 'brief'], me.sessionId);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/^error not_found: token "brief" not found/);
  });

  it('refuses bad input before or at the API, naming the option or field', async () => {
    const days = await ptr(['token', 'create', 'x', '--days', 'soon'], me.sessionId);
    expect(days.code).to.equal(2);
    expect(days.stderr).to.match(/--days: expected a whole number/);
    const scope = await ptr(['token', 'create', 'x', '--scope', 'runs:write'], me.sessionId);
    expect(scope.code).to.equal(1);
    expect(scope.stderr).to.match(/^error invalid_request: scopes\.0: expected one of/);
    const dup = await ptr(['token', 'create', 'dup'], me.sessionId);
    expect(dup.code, dup.stderr).to.equal(0);
    const again = await ptr(['token', 'create', 'dup'], me.sessionId);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/^error token_exists: /);
  });
});
