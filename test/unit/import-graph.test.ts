import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(__dirname, '../..');
const DIRS = ['src', 'activities', 'workflows'];

/** Every .ts file of the service's code, by path from the root. */
function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts')) out.push(rel);
    }
  };
  DIRS.forEach(walk);
  return out;
}

/** The project files a file imports (type imports too: a circle of types is still a circle to a reader). */
function importsOf(file: string, known: Set<string>): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
    const base = path.normalize(path.join(path.dirname(file), match[1]!));
    const target = [`${base}.ts`, path.join(base, 'index.ts')].find((candidate) => known.has(candidate));
    if (target) found.push(target);
  }
  return found;
}

/** Strongly connected components of more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe('the layout of the code (issue "The house")', () => {
  const files = sourceFiles();
  const known = new Set(files);
  const graph = new Map(files.map((f) => [f, importsOf(f, known)]));

  it('has no import circle through workflows/, activities/ and src/ (each workflow is typed by its own activities)', () => {
    const crossing = circles(graph).filter((scc) => new Set(scc.map((f) => f.split(path.sep)[0])).size > 1 || scc.some((f) => f.startsWith(`workflows${path.sep}`)));
    expect(crossing, JSON.stringify(crossing, null, 1)).to.deep.equal([]);
  });

  it('lets src/store/, src/http/ and src/runs/ import the contract, never workflows/', () => {
    const wrong = [...graph].filter(([f]) => /^src\/(store|http|runs)\//.test(f)).flatMap(([f, deps]) => deps.filter((d) => d.startsWith('workflows/')).map((d) => `${f} -> ${d}`));
    expect(wrong).to.deep.equal([]);
  });

  it('keeps the contract free of the rest of the project (the workflow sandbox imports it)', () => {
    const wrong = [...graph].filter(([f]) => f.startsWith('src/contract/')).flatMap(([f, deps]) => deps.filter((d) => !d.startsWith('src/contract/')).map((d) => `${f} -> ${d}`));
    expect(wrong).to.deep.equal([]);
  });
});
