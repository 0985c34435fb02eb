import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { modelDeprecation } from '../../src/model-deprecations';

// The package's main file sits at its root (its exports map does not let package.json be resolved).
const SDK_DIR = path.dirname(require.resolve('@anthropic-ai/sdk'));
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** Every `.js` file of the installed SDK (its own copies of the list live in more than one). */
function sdkFiles(dir: string, found: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (name === 'node_modules' || name === 'src') continue;
    if (statSync(file).isDirectory()) sdkFiles(file, found);
    else if (name.endsWith('.js')) found.push(file);
  }
  return found;
}

/** `'claude-x': 'November 30th, 2026'` entries of every `DEPRECATED_MODELS = { ... }` the SDK holds, dates as ISO. */
function sdkDeprecatedModels(): Map<string, string> {
  const models = new Map<string, string>();
  for (const file of sdkFiles(SDK_DIR)) {
    const text = readFileSync(file, 'utf8');
    for (const block of text.matchAll(/DEPRECATED_MODELS = \{([^}]*)\}/g)) {
      for (const [, model, month, day, year] of block[1]!.matchAll(/'([^']+)':\s*'(\w+) (\d+)\w*, (\d{4})'/g)) {
        const m = MONTHS.indexOf(month!) + 1;
        expect(m, `a month name in ${file}`).to.be.greaterThan(0);
        models.set(model!, `${year}-${String(m).padStart(2, '0')}-${day!.padStart(2, '0')}`);
      }
    }
  }
  return models;
}

describe('the table of deprecated models', () => {
  it('names every model the installed Anthropic SDK lists as deprecated, with its end-of-life date', () => {
    const listed = sdkDeprecatedModels();
    expect(listed.size, 'models read from the SDK').to.be.greaterThan(0);
    const missing = [...listed].filter(([model, end]) => modelDeprecation('anthropic', model)?.end_of_life !== end).map(([model, end]) => `${model} (${end})`);
    expect(missing, 'add them to src/model-deprecations.ts').to.deep.equal([]);
  });

  it('answers the end of life and a message naming the model for a listed model', () => {
    const d = modelDeprecation('anthropic', 'claude-sonnet-4-5');
    expect(d?.end_of_life).to.equal('2026-11-30');
    expect(d?.message).to.contain('claude-sonnet-4-5').and.to.contain('2026-11-30');
  });

  it('answers nothing for a current model, another runner, or a name inherited from Object', () => {
    expect(modelDeprecation('anthropic', 'claude-sonnet-5-5')).to.equal(undefined);
    expect(modelDeprecation('openai', 'claude-sonnet-4-5')).to.equal(undefined);
    expect(modelDeprecation('anthropic', 'constructor')).to.equal(undefined);
    expect(modelDeprecation('toString', 'x')).to.equal(undefined);
  });
});
