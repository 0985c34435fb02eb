import type { Models } from './models';

/**
 * A user's fairness weight: their runs' share of the task queue beside other users' when it has a backlog (Temporal
 * dispatches each fairness key's tasks in proportion to its weight). Temporal clamps weights to this range; a weight
 * outside it is refused here rather than clamped without a word.
 */
export const FAIRNESS_WEIGHT = { min: 0.001, max: 1000, default: 1 } as const;
export const FAIRNESS_WEIGHT_RULE = `a number from ${FAIRNESS_WEIGHT.min} to ${FAIRNESS_WEIGHT.max}`;

/** The weight an operator typed (`3`, `0.5`), or a message saying why it is not one. */
export function parseFairnessWeight(text: string): { weight: number } | { problem: string } {
  const weight = /^(\d+(\.\d*)?|\.\d+)$/.test(text.trim()) ? Number(text) : NaN;
  if (!(weight >= FAIRNESS_WEIGHT.min && weight <= FAIRNESS_WEIGHT.max)) return { problem: `expected ${FAIRNESS_WEIGHT_RULE}, got "${text}"` };
  return { weight };
}

/** The user's weight; the default for a user stored before weights existed, or one that does not exist. */
export async function readFairnessWeight(models: Models, username: string): Promise<number> {
  const doc = await models.User.findOne({ username }, { fairness_weight: 1 }).lean<{ fairness_weight?: number | null }>();
  return doc?.fairness_weight ?? FAIRNESS_WEIGHT.default;
}

/** Sets the user's weight (checked by the caller: parseFairnessWeight). false when there is no such user. */
export async function writeFairnessWeight(models: Models, username: string, weight: number): Promise<boolean> {
  const res = await models.User.updateOne({ username }, { $set: { fairness_weight: weight } });
  return res.matchedCount === 1;
}
