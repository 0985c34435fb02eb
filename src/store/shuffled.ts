import { randomInt } from 'node:crypto';

/** A copy of `items` in a random order (Fisher-Yates): which free place or slot a writer tries first. */
export function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
