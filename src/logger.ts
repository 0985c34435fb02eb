import pino, { type Logger } from 'pino';

/** Field names whose values are secrets wherever they appear in a log object. */
const REDACT = ['key', 'apiKey', 'authorization', 'cookie', 'sessionId', 'settings.key', 'config', 'secret'];

export type { Logger };

/** Structured JSON logs. Secrets are redacted by field name as a second line of defence; code never logs them. */
export function createLogger(options: { level: string; name: string; destination?: pino.DestinationStream }): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      redact: { paths: [...REDACT, ...REDACT.map((k) => `*.${k}`)], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination,
  );
}
