import { expect } from 'chai';
import { exampleAnswer, formFieldLines } from '../../src/cli/ptr/input-form';

/** A form question as server-everything's `trigger-elicitation-request` asks it (a few of its fields). */
const FORM = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'String', description: 'Your full, legal name' },
    check: { type: 'boolean', description: 'Agree to the terms' },
    integer: { type: 'integer', description: 'Your favorite integer', default: 42 },
    email: { type: 'string', format: 'email' },
    friend: { type: 'string', enum: ['Monica', 'Rachel'], default: 'Monica' },
    hero: { type: 'string', oneOf: [{ const: 'hero-1', title: 'Superman' }, { const: 'hero-2', title: 'Batman' }] },
    fish: { type: 'array', items: { anyOf: [{ const: 'fish-1' }, { const: 'fish-2' }] } },
  },
  required: ['name', 'check', 'hero', 'fish'],
};

describe('ptr: an MCP server\'s form question as a person reads it', () => {
  it('lists each field with its type, whether it is required, what it is for, its choices and default', () => {
    expect(formFieldLines(FORM)).to.deep.equal([
      'name (string, required): Your full, legal name',
      'check (boolean, required): Agree to the terms',
      'integer (integer): Your favorite integer; default 42',
      'email (string email)',
      'friend (string): one of "Monica", "Rachel"; default "Monica"',
      'hero (string, required): one of "hero-1", "hero-2"',
      'fish (array, required): any of "fish-1", "fish-2"',
    ]);
  });

  it('gives an answer to edit with the required fields only: a placeholder, a value of the type, or the first choice', () => {
    expect(JSON.parse(exampleAnswer(FORM))).to.deep.equal({ name: '<name>', check: false, hero: 'hero-1', fish: ['fish-1'] });
  });

  it('reads nothing from a schema that is not a form, and answers {} for a form without required fields', () => {
    for (const schema of [undefined, null, 'x', { properties: 3 }, {}]) expect(formFieldLines(schema)).to.deep.equal([]);
    expect(exampleAnswer({ properties: { a: { type: 'string' } } })).to.equal('{}');
  });
});
