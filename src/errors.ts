/**
 * The error hierarchy. HTTP maps AppError once (middleware/errors.ts) to its status and
 * `{ "error": { "code", "message" } }`; codes are stable and documented in the README.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** More fields of the error body, beside `code` and `message` (e.g. the run a failed trigger recorded). */
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (message: string, code = 'invalid_request') => new AppError(400, code, message);
export const unauthorized = (message = 'a valid session cookie (sessionId) is required') =>
  new AppError(401, 'unauthorized', message);
export const forbidden = (message: string, code = 'forbidden') => new AppError(403, code, message);
export const notFound = (what: string) => new AppError(404, 'not_found', `${what} not found`);
export const conflict = (message: string, code = 'conflict') => new AppError(409, code, message);
export const payloadTooLarge = (message: string) => new AppError(413, 'payload_too_large', message);
export const unsupportedMediaType = (message: string) => new AppError(415, 'unsupported_media_type', message);

/** A dependency that did not answer in time: 503 with `Retry-After`, the code naming it. */
export type Dependency = 'mongodb' | 'temporal';
export const dependencyUnavailable = (dependency: Dependency, extra?: Record<string, unknown>, hint = 'retry in a moment') =>
  new AppError(503, `${dependency}_unavailable`, `${dependency === 'mongodb' ? 'MongoDB' : 'Temporal'} did not answer in time; ${hint}`, extra);

/** Past a limit: 429 with `Retry-After` (whole seconds) and a code naming the limit (docs: "Rate limits"). */
export class RateLimited extends AppError {
  constructor(
    code: string,
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, code, message);
  }
}

/** LIVE_RUNS_PER_USER: the owner has that many runs `pending` or `running`; places free as they end. */
export const liveRunsLimited = (limit: number) =>
  new RateLimited('live_runs_limit', `LIVE_RUNS_PER_USER: ${limit} runs are already pending or running for this user; nothing was started (retry once some have ended)`, 5);
