/**
 * The request line as the request parser reads it (RFC 9112 §3): a method of upper-case letters,
 * `-` and `_`, one space, a target of visible bytes, one space, `HTTP/1.0` or `HTTP/1.1`. Its
 * parts come back as numbers, not a record (one per request would be garbage).
 */

/** Where the method ends in the request line `requestLine` read last (set by it: the parse is synchronous). */
export const LINE = new Int32Array(1);

/**
 * Read the request line: where its target ends, times 4, plus 2 for HTTP/1.1 and 1 when the
 * target is ASCII; -1 when malformed (the method's end is left in `LINE[0]`). A number rather
 * than a record: one per request would be garbage.
 */
export function requestLine(head: string, eol: number): number {
  // Methods are upper-case letters, `-` and `_` (what nginx accepts): a lower-case `get` is not GET to every server.
  let i = 0;
  for (let c = head.charCodeAt(0); i < eol && ((c >= 65 && c <= 90) || c === 45 || c === 95); c = head.charCodeAt(++i));
  if (i === 0 || head.charCodeAt(i) !== 32) return -1;
  LINE[0] = i;
  i++;
  const t = i;
  let ascii = 1;
  for (; i < eol; i++) {
    const c = head.charCodeAt(i);
    if (c <= 32 || c === 127 || c > 255) break;
    if (c > 127) ascii = 0;
  }
  if (i === t || head.charCodeAt(i) !== 32 || eol - i !== 9 || !head.startsWith(" HTTP/1.", i)) return -1;
  const minor = head.charCodeAt(i + 8);
  if (minor !== 48 && minor !== 49) return -1;
  return i * 4 + (minor === 49 ? 2 : 0) + ascii;
}

/** Methods most requests use, as constants (a slice of the head would be a new string each time). */
const METHODS = ["GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"];

/** The method of a request line whose method ends at `end`. */
export function methodOf(head: string, end: number): string {
  for (const m of METHODS) if (m.length === end && head.startsWith(m)) return m;
  return head.slice(0, end);
}
