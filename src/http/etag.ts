/** Whether an `If-None-Match` header matches `etag`: a list of tags or `*`, compared weakly (`W/"x"` is `"x"`). */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || opaque(tag) === opaque(etag));
}
