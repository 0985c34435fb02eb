import { expect } from 'chai';
import { getStack } from '../helpers/stack';

/** The indexes of a collection, by name, with whether each is unique. */
async function indexes(collection: string): Promise<Record<string, boolean>> {
  const list = await getStack().db.conn.db!.collection(collection).indexes();
  return Object.fromEntries(list.map((i) => [i.name!, Boolean(i.unique)]));
}

describe('the store\'s indexes', () => {
  it('builds every unique index (the idempotency rules), and on FerretDB no other, which it never uses for a query', async () => {
    const ferret = 'ferretdbVersion' in (await getStack().db.conn.db!.admin().command({ buildInfo: 1 }));
    const tasks = await indexes('tasks');
    expect(Object.values(tasks).filter(Boolean), 'tasks: unique on owner, profile and name').to.have.length(1);
    expect(Object.entries(await indexes('sessions')).some(([name, unique]) => unique && name.startsWith('hash'))).to.equal(true);
    const runs = await indexes('runs');
    const secondary = Object.keys(runs).filter((name) => name !== '_id_');
    if (ferret) expect(secondary, 'runs on FerretDB: its _id only').to.deep.equal([]);
    else expect(secondary, 'runs on MongoDB: the run list\'s index').to.have.length(1);
  });
});
