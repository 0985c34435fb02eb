import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { z } from 'zod';
import { clusterConfigSchema, configSchema, devConfigSchema } from '../../src/config';

const DOC = fs.readFileSync(path.join(__dirname, '../../docs/configuration.md'), 'utf8');

/** The text of the page from a `## ` heading to the next one. */
function section(heading: string): string {
  const start = DOC.indexOf(`\n## ${heading}\n`);
  expect(start, `docs/configuration.md has no "## ${heading}" section`).to.be.greaterThan(-1);
  const end = DOC.indexOf('\n## ', start + 1);
  return DOC.slice(start, end === -1 ? undefined : end);
}

/** Table rows of a section, by the variable their first cell names: `| \`NAME\` | default | meaning |`. */
function rows(text: string): Map<string, { defaultCell: string }> {
  const found = new Map<string, { defaultCell: string }>();
  for (const line of text.split('\n')) {
    const match = /^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/.exec(line);
    if (match) found.set(match[1]!, { defaultCell: match[2]! });
  }
  return found;
}

const service = rows(section('The service'));
const dev = rows(section('`npm run dev`'));
const cluster = rows(section('`npm run stack:cluster`'));

describe('the configuration page (docs/configuration.md)', () => {
  it('lists every setting of the service that src/config.ts reads', () => {
    const missing = Object.keys(configSchema.shape).filter((name) => !service.has(name));
    expect(missing, 'settings of src/config.ts missing from docs/configuration.md, "## The service"').to.deep.equal([]);
  });

  it('lists every setting of npm run dev', () => {
    const missing = Object.keys(devConfigSchema.shape).filter((name) => !dev.has(name));
    expect(missing, 'settings of npm run dev missing from docs/configuration.md, "## `npm run dev`"').to.deep.equal([]);
  });

  it('lists every setting of npm run stack:cluster', () => {
    const missing = Object.keys(clusterConfigSchema.shape).filter((name) => !cluster.has(name));
    expect(missing, 'settings of npm run stack:cluster missing from docs/configuration.md, "## `npm run stack:cluster`"').to.deep.equal([]);
  });

  it('lists no setting of the service that src/config.ts does not read', () => {
    const unknown = [...service.keys()].filter((name) => !(name in configSchema.shape));
    expect(unknown).to.deep.equal([]);
  });

  it("gives the schema's own default wherever it shows one as a value", () => {
    const wrong: string[] = [];
    const check = (documented: ReturnType<typeof rows>, shape: Record<string, z.ZodType>) => {
      for (const [name, { defaultCell }] of documented) {
        const shown = /^`([^`]*)`/.exec(defaultCell.trim())?.[1];
        const parsed = shape[name]?.safeParse(undefined);
        const actual = parsed?.success ? parsed.data : undefined;
        // A default the schema computes (the cores) or leaves to code (PUBLIC_URL, VARIANT_A_MODEL) is in words.
        if (shown === undefined || actual === undefined || typeof actual === 'object') continue;
        if (String(actual) !== shown) wrong.push(`${name}: the page says ${shown}, the schema ${String(actual)}`);
      }
    };
    check(service, configSchema.shape);
    check(dev, devConfigSchema.shape);
    check(cluster, clusterConfigSchema.shape);
    expect(wrong).to.deep.equal([]);
  });
});
