import Mustache, { type Context, type RenderOptions } from 'mustache';
import { promptTooLarge } from './failure';

/**
 * A Mustache writer that stops with `too_large` as soon as its output passes `maxBytes` (UTF-8). Measuring only the
 * finished prompt is too late: a section over a long list builds its whole string first, gigabytes for
 * `{{#list}}{{ @payload }}{{/list}}`.
 *
 * Every piece of output is made once, by a leaf (text or a placeholder), so counting each piece when it is made gives
 * the size of the output so far. (Mustache's other source of output, a section whose value is a function, cannot
 * occur: a payload is JSON, and Mustache calls an inherited method it finds, such as a list's `join`, for its value.)
 */
export class BoundedWriter extends Mustache.Writer {
  private bytes = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override rawValue(token: string[]): string {
    return this.counted(super.rawValue(token));
  }

  override escapedValue(token: string[], context: Context, config?: RenderOptions): string {
    return this.counted(super.escapedValue(token, context, config));
  }

  override unescapedValue(token: string[], context: Context): string {
    return this.counted(super.unescapedValue(token, context));
  }

  /** Mustache appends any value but undefined to the output, as `String(value)`. */
  private counted<T>(piece: T): T {
    if (piece !== undefined) {
      this.bytes += Buffer.byteLength(String(piece));
      if (this.bytes > this.maxBytes) throw promptTooLarge(this.maxBytes);
    }
    return piece;
  }
}
