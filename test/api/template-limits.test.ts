import { expect } from 'chai';
import { signedIn, taskBody, type ApiResponse } from '../helpers/api';
import { getStack } from '../helpers/stack';

const nested = (depth: number) => `${'{{#a}}'.repeat(depth)}{{ b }}${'{{/a}}'.repeat(depth)}`;

function expectRefused(res: ApiResponse, message: string) {
  expect(res.status, res.text).to.equal(400);
  expect(res.body.error).to.deep.equal({ code: 'invalid_template', message });
}

describe('template limits at save', () => {
  it('refuses sections nested deeper than TEMPLATE_MAX_DEPTH, naming the field and the limit', async () => {
    const me = await signedIn('tl');
    const limit = getStack().config.TEMPLATE_MAX_DEPTH;
    expectRefused(
      await me.api.put('/api/tasks/~/default/deep', taskBody('openai', nested(5000), 'gpt-4.1', 'sk-1')),
      `openai.prompt: sections are nested 5000 deep; the limit is ${limit} (TEMPLATE_MAX_DEPTH)`,
    );
    expectRefused(
      await me.api.put('/api/tasks/~/default/deep', { provider: 'anthropic', prompt: nested(limit + 1), settings: { key: 'k' } }),
      `prompt: sections are nested ${limit + 1} deep; the limit is ${limit} (TEMPLATE_MAX_DEPTH)`,
    );
  });

  it('refuses a template larger than TEMPLATE_MAX_BYTES, counted in UTF-8 bytes', async () => {
    const me = await signedIn('tl');
    const limit = getStack().config.TEMPLATE_MAX_BYTES;
    // Half as many characters as the limit, each two bytes, and one more.
    const prompt = 'é'.repeat(limit / 2 + 1);
    expectRefused(
      await me.api.put('/api/tasks/~/default/big', taskBody('anthropic', prompt, 'claude-any', 'sk-1')),
      `anthropic.prompt: the template is ${limit + 2} bytes; the limit is ${limit} (TEMPLATE_MAX_BYTES)`,
    );
  });

  it('saves a template 30 sections deep, and one at the size limit', async () => {
    const me = await signedIn('tl');
    const deep = await me.api.put('/api/tasks/~/default/deep', taskBody('openai', nested(30), 'gpt-4.1', 'sk-1'));
    expect(deep.status, deep.text).to.equal(201);
    expect(deep.body.prompt).to.equal(nested(30));
    const full = await me.api.put('/api/tasks/~/default/full', taskBody('openai', 'x'.repeat(getStack().config.TEMPLATE_MAX_BYTES), 'gpt-4.1', 'sk-1'));
    expect(full.status, full.text).to.equal(201);
  });
});
