import { expect } from 'chai';
import { getStack } from '../helpers/stack';

/** The indexes of a collection, by name, with whether each is unique. */
async function indexes(collection: string): Promise<Record<string, boolean>> {
  const list = await getStack().db.conn.db!.collection(collection).indexes();
  return Object.fromEntries(list.map((i) => [i.name!, Boolean(i.unique)]));
}

describe('the store\'s indexes', () => {
  it('builds every unique index (the idempotency rules), and on FerretDB no other but the run list\'s, the one our build searches', async () => {
    const ferret = 'ferretdbVersion' in (await getStack().db.conn.db!.admin().command({ buildInfo: 1 }));
    const tasks = await indexes('tasks');
    expect(Object.values(tasks).filter(Boolean), 'tasks: unique on owner, profile and name').to.have.length(1);
    expect(Object.entries(await indexes('sessions')).some(([name, unique]) => unique && name.startsWith('hash'))).to.equal(true);
    const runs = await indexes('runs');
    const secondary = Object.keys(runs).filter((name) => name !== '_id_');
    expect(secondary, 'runs: the run list\'s index (on FerretDB too: scripts/ferretdb-pushdown.patch)').to.deep.equal(['owner_1_profile_1_task_1_created_at_-1']);
    // Any other collection's index that is not unique is built on MongoDB only (FerretDB would never search it).
    const profiles = Object.keys(await indexes('profiles')).filter((name) => name !== '_id_');
    expect(profiles, 'profiles: unique on owner and name; on MongoDB also is_public').to.have.length(ferret ? 1 : 2);
  });
});
