import { expect } from 'chai';
import { answerCommand } from '../../src/cli/ptr/approvals';

describe('ptr approvals: the command that answers an MCP server\'s question', () => {
  it('names the task, the run and the input, and the profile when it is not "default"', () => {
    expect(answerCommand({ run_url: 'http://127.0.0.1:8080/api/runs/alice/default/ask/r1', id: 'i-1' })).to.equal('ptr run answer ask r1 i-1');
    expect(answerCommand({ run_url: 'https://ptr.example/api/runs/alice/work/ask/r.2', id: 'i-2' })).to.equal('ptr run answer ask r.2 i-2 --profile work');
  });
});
