/**
 * What ends a `ptr` command other than success, and its exit code: a mistake in the command line, its files or the
 * configuration is a usage error (2); an error answer of the API, an unreachable API or a run that ends in `error`
 * is a failure (1), printed as `error <code>: <message>`.
 */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** A failure with a stable code; the API's own errors keep the HTTP status and the code the API gave. */
export class Failure extends Error {
  override name = 'Failure';
  constructor(
    readonly code: string,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Failures worth another attempt when following a run: the API unreachable, overloaded or failing. */
export const isTransient = (err: unknown) =>
  err instanceof Failure && (err.status === undefined ? err.code === 'connection_failed' : err.status >= 500 || err.status === 429);
