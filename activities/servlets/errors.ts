/**
 * A module or servlet that cannot be used, with a message that names why ("describe returned invalid JSON: ...").
 * Publishing maps it to 400; it never carries a servlet's configuration.
 */
export class ServletError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServletError';
  }
}

/**
 * The text of anything a plugin call rejected with. Extism rejects with Errors from the host side but with plain
 * `{ message, originalStack }` objects from the worker (traps), so `instanceof Error` is not enough.
 */
export function rejectionText(reason: unknown): string {
  if (typeof reason === 'string') return reason;
  const message = (reason as { message?: unknown } | null)?.message;
  if (typeof message === 'string' && message) return message;
  try {
    return JSON.stringify(reason) ?? String(reason);
  } catch {
    return String(reason);
  }
}
