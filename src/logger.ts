import pino, { type Logger } from 'pino';
import { prettyStream } from './pretty-log';

/** Field names whose values are secrets wherever they appear in a log object. */
const REDACT = ['key', 'apiKey', 'authorization', 'cookie', 'sessionId', 'settings.key', 'config', 'secret'];

export type { Logger };

/**
 * Structured JSON logs, or with `format: 'pretty'` (LOG_FORMAT, which `npm run dev` sets for a terminal) one
 * readable line per entry on stdout. Secrets are redacted by field name as a second line of defence; code never
 * logs them.
 */
export function createLogger(options: { level: string; name: string; format?: 'json' | 'pretty'; destination?: pino.DestinationStream }): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      redact: { paths: [...REDACT, ...REDACT.map((k) => `*.${k}`)], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? (options.format === 'pretty' ? prettyStream(process.stdout) : undefined),
  );
}
