/** Why a template could not be expanded: each maps to its own run failure (src/contract/failures.ts). */
export type TemplateFailureKind = 'timeout' | 'too_large' | 'invalid';

/** A template that cannot be expanded within the limits; `message` is written for the run's reader. */
export class TemplateFailure extends Error {
  constructor(
    readonly kind: TemplateFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'TemplateFailure';
  }
}

export const promptTooLarge = (maxPromptBytes: number) =>
  new TemplateFailure('too_large', `the expanded prompt is larger than ${maxPromptBytes} bytes (limit RUN_PROMPT_MAX_BYTES)`);
