/**
 * Compares two V8 heap snapshots (`.heapsnapshot`, as Node writes on `--heapsnapshot-signal`): per constructor
 * (objects, closures by function name) or node type (strings, arrays, code…), the count, the self size and the
 * retained size in each, biggest self-size growth first; then the single objects whose retained size grew most
 * (node ids are stable between snapshots of one process), each with what holds it.
 *
 *   npx tsx bench/heap-summary.ts a.heapsnapshot b.heapsnapshot [--top 30] [--other-process]
 *
 * `--other-process`: the snapshots are of two processes (ids do not match): lists the objects retaining most in b.
 *
 * Retained sizes follow Chrome DevTools: the dominator tree over every edge but weak ones (and shortcuts, except from
 * the root); a class's retained size counts only its instances no other instance of the class dominates.
 */
import fs from 'node:fs';

export interface ClassFigures {
  count: number;
  selfBytes: number;
  retainedBytes: number;
}

export interface HeapSummary {
  file: string;
  totalBytes: number;
  nodes: number;
  byClass: Map<string, ClassFigures>;
  /** Retained bytes of every object retaining at least 256 KiB, by node id. */
  bigObjects: Map<number, { name: string; retainedBytes: number; heldBy: string }>;
}

/** What grew between two snapshots, in plain data (bytes), as the bench keeps it. */
export interface HeapGrowth {
  files: [string, string];
  /** Whether object ids of `a` and `b` match (snapshots of one process). */
  sameProcess: boolean;
  totalBytes: [number, number];
  nodes: [number, number];
  /** The classes whose self size grew most, biggest first. */
  classes: Array<{ name: string; count: [number, number]; selfBytes: [number, number]; retainedBytes: [number, number] }>;
  /** The single objects whose retained size grew most by at least 1 MiB (other processes: retaining most in `b`). */
  objects: Array<{ id: number; name: string; retainedBytes: [number, number]; heldBy: string }>;
}

/**
 * Reads a snapshot: the header with `JSON.parse`, the node and edge arrays by scanning the bytes (so a file over
 * V8's string limit still reads), the strings table (the last section) with `JSON.parse`.
 */
export function summarizeHeap(file: string): HeapSummary {
  const buf = fs.readFileSync(file);
  const nodesAt = buf.indexOf('"nodes":[');
  const { snapshot } = JSON.parse(`${buf.toString('utf8', 0, nodesAt).replace(/,\s*$/, '')}}`);
  const meta = snapshot.meta;
  const nodeFields: string[] = meta.node_fields;
  const edgeFields: string[] = meta.edge_fields;
  const nodes = new Float64Array(snapshot.node_count * nodeFields.length);
  const edges = new Uint32Array(snapshot.edge_count * edgeFields.length);
  const edgesAt = readInts(buf, nodesAt + 9, nodes);
  readInts(buf, buf.indexOf('"edges":[', edgesAt) + 9, edges);
  const stringsAt = buf.indexOf('"strings":[', edgesAt) + 10;
  const strings: string[] = JSON.parse(buf.toString('utf8', stringsAt, buf.lastIndexOf(']') + 1));

  const NF = nodeFields.length;
  const EF = edgeFields.length;
  const [TYPE, NAME, ID, SELF, EDGES] = ['type', 'name', 'id', 'self_size', 'edge_count'].map((f) => nodeFields.indexOf(f)) as [number, number, number, number, number];
  const [E_TYPE, E_NAME, E_TO] = ['type', 'name_or_index', 'to_node'].map((f) => edgeFields.indexOf(f)) as [number, number, number];
  const nodeTypes: string[] = meta.node_types[TYPE];
  const edgeTypes: string[] = meta.edge_types[E_TYPE];
  const n = snapshot.node_count as number;
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0; i < n; i++) firstEdge[i + 1] = firstEdge[i]! + nodes[i * NF + EDGES]!;
  const weak = edgeTypes.indexOf('weak');
  const shortcut = edgeTypes.indexOf('shortcut');
  const essential = (from: number, e: number) => edges[e * EF + E_TYPE] !== weak && (edges[e * EF + E_TYPE] !== shortcut || from === 0);
  const classOf = (i: number) => className(nodeTypes[nodes[i * NF + TYPE]!]!, strings[nodes[i * NF + NAME]!]!);

  const { order, dominator } = dominators(n, firstEdge, (e) => edges[e * EF + E_TO]! / NF, essential);
  const retained = new Float64Array(n);
  for (let i = 0; i < n; i++) retained[i] = nodes[i * NF + SELF]!;
  for (const v of order) if (v !== 0 && dominator[v]! >= 0) retained[dominator[v]!] += retained[v]!;

  const classIds = new Map<string, number>();
  const classNames: string[] = [];
  const cls = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const name = classOf(i);
    let id = classIds.get(name);
    if (id === undefined) classIds.set(name, (id = classNames.push(name) - 1));
    cls[i] = id;
  }
  const figures = classNames.map(() => ({ count: 0, selfBytes: 0, retainedBytes: 0 }));
  let totalBytes = 0;
  for (let i = 0; i < n; i++) {
    figures[cls[i]!]!.count++;
    figures[cls[i]!]!.selfBytes += nodes[i * NF + SELF]!;
    totalBytes += nodes[i * NF + SELF]!;
  }
  // Non-nested retained size per class: a walk down the dominator tree counting, per class, the instances above.
  const childrenAt = new Uint32Array(n + 1);
  for (let v = 1; v < n; v++) if (dominator[v]! >= 0) childrenAt[dominator[v]! + 1]++;
  for (let i = 0; i < n; i++) childrenAt[i + 1] += childrenAt[i]!;
  const children = new Uint32Array(childrenAt[n]!);
  const fill = childrenAt.slice(0, n);
  for (let v = 1; v < n; v++) if (dominator[v]! >= 0) children[fill[dominator[v]!]!++] = v;
  const above = new Int32Array(classNames.length);
  const stack: number[] = [0];
  while (stack.length > 0) {
    const v = stack.pop()!;
    if (v < 0) {
      above[cls[~v]!]--;
      continue;
    }
    if (above[cls[v]!] === 0) figures[cls[v]!]!.retainedBytes += retained[v]!;
    above[cls[v]!]++;
    stack.push(~v);
    for (let c = childrenAt[v]!; c < childrenAt[v + 1]!; c++) stack.push(children[c]!);
  }

  // Objects retaining 256 KiB or more, each with up to two of its retainers (the edges naming how it is held).
  const heldBy = new Map<number, string[]>();
  for (let v = 1; v < n; v++) if (retained[v]! >= 256 * 1024 && dominator[v]! >= 0 && nodeTypes[nodes[v * NF + TYPE]!] !== 'synthetic') heldBy.set(v, []);
  for (let u = 0; u < n; u++) {
    for (let e = firstEdge[u]!; e < firstEdge[u + 1]!; e++) {
      const holders = heldBy.get(edges[e * EF + E_TO]! / NF);
      if (!holders || holders.length === 2 || !essential(u, e)) continue;
      const type = edgeTypes[edges[e * EF + E_TYPE]!];
      const via = type === 'element' || type === 'hidden' ? `[${edges[e * EF + E_NAME]}]` : `.${strings[edges[e * EF + E_NAME]!]}`;
      holders.push(`${classNames[cls[u]!]} @${nodes[u * NF + ID]}${via}`);
    }
  }
  const bigObjects: HeapSummary['bigObjects'] = new Map();
  for (const [v, holders] of heldBy) bigObjects.set(nodes[v * NF + ID]!, { name: classNames[cls[v]!]!, retainedBytes: retained[v]!, heldBy: holders.join(', ') });
  return { file, totalBytes, nodes: n, byClass: new Map(classNames.map((name, i) => [name, figures[i]!])), bigObjects };
}

/**
 * The `top` classes whose self size grew most from `a` to `b`, and up to 10 objects: with `sameProcess`, those whose
 * retained size grew most (node ids match within one process); otherwise those of `b` retaining most.
 */
export function heapGrowth(a: HeapSummary, b: HeapSummary, top: number, sameProcess = true): HeapGrowth {
  const none: ClassFigures = { count: 0, selfBytes: 0, retainedBytes: 0 };
  const classes = [...new Set([...a.byClass.keys(), ...b.byClass.keys()])]
    .map((name) => ({ name, a: a.byClass.get(name) ?? none, b: b.byClass.get(name) ?? none }))
    .sort((x, y) => y.b.selfBytes - y.a.selfBytes - (x.b.selfBytes - x.a.selfBytes))
    .slice(0, top)
    .map(({ name, a: x, b: y }) => ({ name, count: [x.count, y.count], selfBytes: [x.selfBytes, y.selfBytes], retainedBytes: [x.retainedBytes, y.retainedBytes] }) as HeapGrowth['classes'][number]);
  // An object absent from `a`'s list retained under 256 KiB there (or was not there): counted from 0.
  const before = (id: number) => (sameProcess ? (a.bigObjects.get(id)?.retainedBytes ?? 0) : 0);
  const objects = [...b.bigObjects.entries()]
    .map(([id, o]) => ({ id, name: o.name, retainedBytes: [before(id), o.retainedBytes] as [number, number], heldBy: o.heldBy }))
    .filter((o) => o.retainedBytes[1] - o.retainedBytes[0] >= 2 ** 20)
    .sort((x, y) => y.retainedBytes[1] - y.retainedBytes[0] - (x.retainedBytes[1] - x.retainedBytes[0]))
    .slice(0, 10);
  return { files: [a.file, b.file], sameProcess, totalBytes: [a.totalBytes, b.totalBytes], nodes: [a.nodes, b.nodes], classes, objects };
}

/** The growth as printable lines: totals, the classes, the objects. */
export function formatGrowth(g: HeapGrowth): string[] {
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(2);
  const signed = (bytes: number) => `${bytes >= 0 ? '+' : ''}${mb(bytes)}`;
  const delta = ([x, y]: [number, number]) => signed(y - x);
  const rows = g.classes.map((c) => [
    c.name.length > 48 ? `${c.name.slice(0, 47)}…` : c.name,
    `${c.count[0]} → ${c.count[1]}`,
    `${mb(c.selfBytes[0])} → ${mb(c.selfBytes[1])}`,
    delta(c.selfBytes),
    delta(c.retainedBytes),
  ]);
  const head = ['class / node type', 'count', 'self MB', 'Δ self MB', 'Δ retained MB'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    `heap: ${mb(g.totalBytes[0])} MB in ${g.nodes[0]} nodes → ${mb(g.totalBytes[1])} MB in ${g.nodes[1]} nodes (${delta(g.totalBytes)} MB)`,
    line(head),
    ...rows.map(line),
    ...(g.objects.length ? [g.sameProcess ? 'objects whose retained size grew most (≥ 1 MB):' : 'objects retaining most in the second snapshot (≥ 1 MB):'] : []),
    ...g.objects.map((o) => `  ${o.name} @${o.id}: ${g.sameProcess ? `${mb(o.retainedBytes[0])} → ` : ''}${mb(o.retainedBytes[1])} MB retained, held by ${o.heldBy}`),
  ];
}

/** DevTools' grouping: objects by constructor, closures by function, the rest by node type. */
function className(type: string, name: string): string {
  if (type === 'object' || type === 'native') return name;
  if (type === 'closure') return `(closure) ${name || '(anonymous)'}`;
  if (type === 'array') return name ? `(array) ${name}` : '(array)';
  if (type === 'hidden' && name.startsWith('system /')) return name.replace(/ \(.*$/, '');
  if (type === 'code') return '(compiled code)';
  if (type === 'number') return '(heap number)';
  return `(${type})`;
}

/** Reads `out.length` non-negative integers from `buf` at `from` (any separators between them): where it stopped. */
function readInts(buf: Buffer, from: number, out: Float64Array | Uint32Array): number {
  let pos = from;
  for (let i = 0; i < out.length; i++) {
    let c = buf[pos]!;
    while (c < 48 || c > 57) c = buf[++pos]!;
    let value = 0;
    while (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48);
      c = buf[++pos]!;
    }
    out[i] = value;
  }
  return pos;
}

/**
 * Immediate dominators from node 0 (Cooper, Harvey and Kennedy's iterative algorithm, on a depth-first post-order):
 * `order` lists the reachable nodes in post-order (a node after everything it dominates), `dominator[v]` is -1 for
 * nodes unreachable through essential edges.
 */
function dominators(n: number, firstEdge: Uint32Array, target: (e: number) => number, essential: (from: number, e: number) => boolean) {
  const post = new Int32Array(n).fill(-1);
  const order: number[] = [];
  const visited = new Uint8Array(n);
  const stack = [0];
  const nextEdge = new Uint32Array(n);
  visited[0] = 1;
  nextEdge[0] = firstEdge[0]!;
  while (stack.length > 0) {
    const v = stack[stack.length - 1]!;
    let pushed = false;
    while (nextEdge[v]! < firstEdge[v + 1]!) {
      const e = nextEdge[v]!++;
      const w = target(e);
      if (visited[w] || !essential(v, e)) continue;
      visited[w] = 1;
      nextEdge[w] = firstEdge[w]!;
      stack.push(w);
      pushed = true;
      break;
    }
    if (!pushed) {
      stack.pop();
      post[v] = order.push(v) - 1;
    }
  }
  // Predecessors through essential edges, by post-order index.
  const m = order.length;
  const predAt = new Uint32Array(m + 1);
  const forEachEdge = (fn: (from: number, to: number) => void) => {
    for (const v of order) for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e++) if (essential(v, e) && post[target(e)]! >= 0) fn(post[v]!, post[target(e)]!);
  };
  forEachEdge((_, to) => predAt[to + 1]++);
  for (let i = 0; i < m; i++) predAt[i + 1] += predAt[i]!;
  const preds = new Uint32Array(predAt[m]!);
  const fill = predAt.slice(0, m);
  forEachEdge((from, to) => (preds[fill[to]!++] = from));

  const idom = new Int32Array(m).fill(-1);
  const root = m - 1;
  idom[root] = root;
  const intersect = (x: number, y: number) => {
    while (x !== y) {
      while (x < y) x = idom[x]!;
      while (y < x) y = idom[y]!;
    }
    return x;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let v = root - 1; v >= 0; v--) {
      let next = -1;
      for (let p = predAt[v]!; p < predAt[v + 1]!; p++) {
        const u = preds[p]!;
        if (idom[u] === -1) continue;
        next = next === -1 ? u : intersect(u, next);
      }
      if (next !== idom[v]) {
        idom[v] = next;
        changed = true;
      }
    }
  }
  const dominator = new Int32Array(n).fill(-1);
  for (let i = 0; i < m; i++) dominator[order[i]!] = order[idom[i]!]!;
  return { order, dominator };
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 30;
  const otherProcess = args.indexOf('--other-process');
  if (otherProcess >= 0) args.splice(otherProcess, 1);
  if (args.length !== 2 || !(top > 0)) {
    console.error('usage: npx tsx bench/heap-summary.ts a.heapsnapshot b.heapsnapshot [--top N] [--other-process]');
    process.exit(2);
  }
  const [a, b] = args.map((f) => summarizeHeap(f!)) as [HeapSummary, HeapSummary];
  console.log(formatGrowth(heapGrowth(a, b, top, otherProcess < 0)).join('\n'));
}
