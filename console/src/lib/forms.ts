/** The trimmed value of a form's field, or undefined when it is empty. */
export function text(form: HTMLFormElement, name: string): string | undefined {
  const field = form.elements.namedItem(name) as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement | null;
  const value = field?.value.trim();
  return value ? value : undefined;
}

/** A whole number from a field, or undefined when it is empty. */
export function whole(form: HTMLFormElement, name: string): number | undefined {
  const value = text(form, name);
  return value === undefined ? undefined : Number(value);
}

export function checked(form: HTMLFormElement, name: string): boolean {
  return (form.elements.namedItem(name) as HTMLInputElement | null)?.checked ?? false;
}

/** JSON that must be an object: the object, or a message saying what is wrong. */
export function jsonObject(source: string): { value: Record<string, unknown> } | { problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch (err) {
    return { problem: `not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { problem: 'expected a JSON object, such as {"topic": "tides"}' };
  return { value: value as Record<string, unknown> };
}

/** A local date and time for a timestamp of the API. */
export const when = (iso: string | number | undefined | null) => (iso === undefined || iso === null ? '' : new Date(iso).toLocaleString());

/** `1.2 s`, `3 min 4 s`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** Copies `value` to the clipboard; false when the browser refuses (no permission, not a secure context). */
export async function copy(value: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(value);
    return true;
  } catch {
    return false;
  }
}
