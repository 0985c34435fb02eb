import type { CheckResult } from './checks';

/** One run of an eval as its scorecard counts it (store/evals.ts EvalItem, with what its replay's record says). */
export interface ScoredItem {
  variant: string;
  /** The replay's run name. */
  run: string;
  status: string;
  checks: CheckResult[];
  tokens: number;
  duration_ms?: number;
  /** The address of the replay's diff from its original. */
  diff_url: string;
}

/** A variant's scorecard (GET <task path>/evals/:id, docs/evals.md). */
export interface VariantScore {
  name: string;
  runs: { done: number; total: number };
  checks: { passed: number; total: number };
  /** Input plus output tokens of its replays so far. */
  tokens: number;
  /** The median duration of its ended replays; null before any ended. */
  p50_duration_ms: number | null;
  diffs: Array<{ run: string; status: string; checks_passed: number; checks_total: number; diff_url: string }>;
}

const ENDED = new Set(['ready', 'error', 'cancelled', 'deleted']);

/** The scorecard of each variant, in the order the eval names them. */
export function scorecard(variants: string[], items: ScoredItem[]): VariantScore[] {
  return variants.map((name) => {
    const mine = items.filter((i) => i.variant === name);
    const ended = mine.filter((i) => ENDED.has(i.status));
    const checks = mine.flatMap((i) => i.checks);
    return {
      name,
      runs: { done: ended.length, total: mine.length },
      checks: { passed: checks.filter((c) => c.passed).length, total: checks.length },
      tokens: mine.reduce((sum, i) => sum + i.tokens, 0),
      p50_duration_ms: median(ended.flatMap((i) => (i.duration_ms === undefined ? [] : [i.duration_ms]))),
      diffs: mine.map((i) => ({ run: i.run, status: i.status, checks_passed: i.checks.filter((c) => c.passed).length, checks_total: i.checks.length, diff_url: i.diff_url })),
    };
  });
}

/** The median (the lower middle of an even count); null for none. */
export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}
