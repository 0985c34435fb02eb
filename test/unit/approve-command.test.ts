import { expect } from 'chai';
import { approveCommand } from '../../src/cli/ptr/approvals';

describe('ptr approvals: the command that decides an approval', () => {
  it('names the task, run and id, and the profile only when it is not default', () => {
    expect(approveCommand({ run_url: 'http://127.0.0.1:8080/api/runs/alice/default/greet/r1', id: 'a-1' })).to.equal('ptr run approve greet r1 a-1');
    expect(approveCommand({ run_url: 'https://ptr.example/api/runs/alice/work/greet/r.2', id: 'a-2' })).to.equal('ptr run approve greet r.2 a-2 --profile work');
  });
});
