import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { runPriority } from '../../src/runs/priority';
import { parseUsersCommand } from '../../src/cli/users';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../src/temporal/dev-server-config';

describe('run priority (src/runs/priority.ts)', () => {
  it('keys fairness by owner with the owner\'s weight, and takes the task\'s priority, 3 when it has none', () => {
    expect(runPriority({ owner: 'alice', weight: 3, taskPriority: 1, origin: 'trigger' })).to.deep.equal({ priorityKey: 1, fairnessKey: 'alice', fairnessWeight: 3 });
    expect(runPriority({ owner: 'bob', weight: 1, taskPriority: null, origin: 'trigger' }).priorityKey).to.equal(3);
    expect(runPriority({ owner: 'bob', weight: 1, origin: 'trigger' }).priorityKey).to.equal(3);
  });

  it('starts a schedule\'s runs one below their task\'s priority, at most 5', () => {
    const scheduled = (taskPriority: number | null) => runPriority({ owner: 'alice', weight: 1, taskPriority, origin: 'schedule' }).priorityKey;
    expect([1, 2, 3, 4, 5, null].map(scheduled)).to.deep.equal([2, 3, 4, 5, 5, 4]);
  });

  it('starts replays at the lowest priority, 5, whatever their task\'s, still fair by owner', () => {
    const replayed = (taskPriority: number | null) => runPriority({ owner: 'alice', weight: 2, taskPriority, origin: 'replay' });
    expect([1, 3, 5, null].map((p) => replayed(p).priorityKey)).to.deep.equal([5, 5, 5, 5]);
    expect(replayed(1)).to.deep.include({ fairnessKey: 'alice', fairnessWeight: 2 });
  });
});

describe('npm run users: arguments', () => {
  const problem = (argv: string[]) => {
    try {
      parseUsersCommand(argv);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('takes a weight from 0.001 to 1000', () => {
    expect(parseUsersCommand(['set-weight', 'alice', '3'])).to.deep.equal({ command: 'set-weight', user: 'alice', weight: 3 });
    expect(parseUsersCommand(['set-weight', 'alice', '0.001'])).to.deep.include({ weight: 0.001 });
    expect(parseUsersCommand(['set-weight', 'alice', '1000'])).to.deep.include({ weight: 1000 });
    expect(parseUsersCommand(['show', 'alice'])).to.deep.equal({ command: 'show', user: 'alice' });
    expect(parseUsersCommand(['--help'])).to.deep.equal({ command: 'help' });
  });

  it('refuses 0, -1, 5000 and "x" as weights, naming the range', () => {
    for (const weight of ['0', '-1', '5000', 'x', '', '0x10', '1e3', 'Infinity']) {
      expect(problem(['set-weight', 'alice', weight]), weight).to.equal(`WEIGHT: expected a number from 0.001 to 1000, got "${weight}"`);
    }
  });

  it('refuses a missing weight or name, a bad name and an unknown command', () => {
    expect(problem(['set-weight', 'alice'])).to.equal('set-weight: WEIGHT is required');
    expect(problem(['set-weight'])).to.equal('set-weight: the user\'s NAME is required');
    expect(problem(['show', 'a/b'])).to.match(/^NAME: expected letters/);
    expect(problem(['delete', 'alice'])).to.equal('unknown command "delete"');
    expect(problem([])).to.equal('a command is required');
  });
});

describe('fairness in the dynamic config', () => {
  it('is on in the compose file\'s Temporal as in every dev server we start', () => {
    const file = parse(fs.readFileSync(path.join(__dirname, '../../deploy/temporal-dynamic-config.yaml'), 'utf8')) as Record<string, Array<{ value: unknown }>>;
    for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG)) expect(file[key]?.[0]?.value, key).to.equal(value);
    expect(DEV_SERVER_DYNAMIC_CONFIG).to.include({ 'matching.useNewMatcher': true, 'matching.enableFairness': true });
  });
});
