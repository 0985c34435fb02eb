/**
 * Models their providers have announced an end of life for, with that date (ISO, UTC). Pure: the API warns when a
 * task is saved on one, lists the tasks on one (`?deprecated=true`), and a run's log says it once.
 *
 * Anthropic: the installed SDK's own list (`internal/data/deprecated-models`), which test/unit/model-deprecations
 * holds this table to. OpenAI: its SDK has no such list; the shutdown dates of chat models from OpenAI's
 * deprecations page.
 */
const END_OF_LIFE: Record<string, Record<string, string>> = {
  anthropic: {
    'claude-mythos-preview': '2026-06-30',
    'claude-sonnet-4-5': '2026-11-30',
    'claude-sonnet-4-5-20250929': '2026-11-30',
  },
  openai: {
    'codex-mini-latest': '2026-01-16',
    'chatgpt-4o-latest': '2026-02-17',
    'computer-use-preview': '2026-07-23',
    'computer-use-preview-2025-03-11': '2026-07-23',
    'gpt-4o-audio-preview-2024-12-17': '2026-07-23',
    'gpt-4o-mini-audio-preview-2024-12-17': '2026-07-23',
    'gpt-4o-search-preview-2025-03-11': '2026-07-23',
    'gpt-4o-mini-search-preview-2025-03-11': '2026-07-23',
    'gpt-5-chat-latest': '2026-07-23',
    'gpt-5.1-chat-latest': '2026-07-23',
    'gpt-5.1-codex': '2026-07-23',
    'gpt-5.2-chat-latest': '2026-08-10',
    'gpt-5.3-chat-latest': '2026-08-10',
    'gpt-3.5-turbo': '2026-10-23',
    'gpt-3.5-turbo-0125': '2026-10-23',
    'gpt-4': '2026-10-23',
    'gpt-4-0613': '2026-10-23',
    'gpt-5': '2026-12-11',
    'gpt-5-2025-08-07': '2026-12-11',
    'gpt-5-mini': '2026-12-11',
    'gpt-5-mini-2025-08-07': '2026-12-11',
    'gpt-5-nano': '2026-12-11',
    'gpt-5-nano-2025-08-07': '2026-12-11',
  },
};

export interface ModelDeprecation {
  /** The day the provider stops serving the model (YYYY-MM-DD). */
  end_of_life: string;
  message: string;
}

/** The deprecation of `model` on `runner`, or undefined when the model has no announced end of life. */
export function modelDeprecation(runner: string, model: string): ModelDeprecation | undefined {
  const table = Object.hasOwn(END_OF_LIFE, runner) ? END_OF_LIFE[runner]! : undefined;
  const end = table && Object.hasOwn(table, model) ? table[model]! : undefined;
  if (!end) return undefined;
  return { end_of_life: end, message: `${runner} model "${model}" is deprecated and reaches end of life on ${end}; runs on it fail from that day: choose a current model` };
}

/** Every listed model of `runner` (for queries that find the tasks on one). */
export function deprecatedModels(runner: string): string[] {
  return Object.hasOwn(END_OF_LIFE, runner) ? Object.keys(END_OF_LIFE[runner]!) : [];
}
