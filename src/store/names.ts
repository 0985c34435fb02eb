import { z } from 'zod';

/**
 * The safe character set for user, profile, task, run, servlet and install names: letters, digits, `_`, `-`, `.`,
 * starting with a letter or digit, at most 64 characters. No `/`, so a workflow id built from names is unambiguous.
 */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const NAME_RULE = 'letters, digits, "_", "-" or "." (starting with a letter or digit), at most 64 characters';

export const nameSchema = z.string().regex(NAME_PATTERN, `expected ${NAME_RULE}`);
