/**
 * Field-line helpers both head parsers share (request-parser.ts, response-parser.ts): token
 * characters, case-insensitive name tests on a head string, list tokens, and removing named
 * lines from the ranges a head keeps.
 */

/** tchar (RFC 9110 §5.6.2) by char code: 1 for a token character. */
export const TCHAR = new Uint8Array(256);
for (const ch of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TCHAR[ch.charCodeAt(0)] = 1;

/** Whether `head[from, from + name.length)` is `name` (lower case), ignoring ASCII case. */
export function nameIs(head: string, from: number, name: string): boolean {
  for (let i = 0; i < name.length; i++) if ((head.charCodeAt(from + i) | 0x20) !== name.charCodeAt(i)) return false;
  return true;
}

/** Whether `head[from, from + name.length)` is `name` with one or more of its `-` written `_`, ignoring ASCII case. */
export function nameIsUnderscored(head: string, from: number, name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = head.charCodeAt(from + i);
    const want = name.charCodeAt(i);
    if ((c | 0x20) !== want && !(c === 95 && want === 45)) return false;
  }
  return true;
}

/** The comma-separated tokens of a list field, trimmed and lower case. */
export function tokens(list: string | null): string[] {
  if (!list) return [];
  if (!list.includes(",")) {
    const v = list.trim();
    return v ? [v.toLowerCase()] : [];
  }
  const out: string[] = [];
  for (const t of list.split(",")) {
    const v = t.trim();
    if (v) out.push(v.toLowerCase());
  }
  return out;
}

/** Remove from `keep` the field lines whose (lower case) name `names` holds. */
export function dropNamed(head: string, keep: number[], names: ReadonlySet<string>): void {
  const out: number[] = [];
  for (let k = 0; k < keep.length; k += 2) {
    let runStart = keep[k];
    const stop = keep[k + 1];
    let at = runStart;
    while (at < stop) {
      let next = head.indexOf("\r\n", at + 2);
      if (next < 0 || next > stop) next = stop;
      const name = head.slice(at + 2, head.indexOf(":", at + 2)).toLowerCase();
      if (names.has(name)) {
        if (at > runStart) out.push(runStart, at);
        runStart = next;
      }
      at = next;
    }
    if (stop > runStart) out.push(runStart, stop);
  }
  keep.length = 0;
  keep.push(...out);
}
