import { createClient, type ApiClient } from './client';
import { resolveSettings, type CliEnv, type Settings } from './settings';

/** A writable the CLI prints to: the process's stdout and stderr, or a test's stream. */
export interface Sink {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * What every command gets: the output streams, whether `--json` was given, and the API client. Settings are
 * resolved on first use, so `--help` and usage errors never read the config file.
 */
export interface Context {
  readonly json: boolean;
  readonly stdout: Sink;
  readonly stderr: Sink;
  readonly env: CliEnv;
  settings(): Settings;
  client(): ApiClient;
  /** `--json`: the document, as one JSON text; otherwise the lines `human` gives. */
  print(doc: unknown, human: () => string | string[]): void;
}

export function createContext(options: { env: CliEnv; stdout: Sink; stderr: Sink; flags: () => { json?: boolean; origin?: string } }): Context {
  let settings: Settings | undefined;
  let client: ApiClient | undefined;
  const ctx: Context = {
    get json() {
      return Boolean(options.flags().json);
    },
    stdout: options.stdout,
    stderr: options.stderr,
    env: options.env,
    settings: () => (settings ??= resolveSettings(options.env, { origin: options.flags().origin })),
    client: () => {
      if (client) return client;
      const settings = ctx.settings();
      // Nothing configured the origin: say which one and why, lest a stack other than the one meant answer.
      if (settings.originWhy) options.stderr.write(`[ptr] using ${settings.origin}: ${settings.originWhy}\n`);
      return (client = createClient(settings));
    },
    print(doc, human) {
      if (ctx.json) {
        options.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
        return;
      }
      const text = human();
      const lines = Array.isArray(text) ? text : [text];
      if (lines.length > 0) options.stdout.write(`${lines.join('\n')}\n`);
    },
  };
  return ctx;
}

/** Rows as aligned columns (the last one unpadded); the header row first. */
export function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}

/** A timestamp as `2026-11-23 16:28:30` (UTC), or `-`. */
export const when = (iso: unknown) => (typeof iso === 'string' && iso.length >= 19 ? iso.slice(0, 19).replace('T', ' ') : '-');
