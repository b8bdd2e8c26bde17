/**
 * Reading a dotenv file in the browser, in the dialect ops writes (domains/secrets/dotenv.ts) and
 * Docker Compose reads: `NAME=value`, an optional `export `, `#` comments and blank lines,
 * `'literal'` values, and `"quoted"` values with `\n`, `\r`, `\"`, `\\` and `\$` escapes. The
 * `dotenv` package's parser is not used because its module loads Node's fs and crypto, which a
 * browser bundle does not have.
 */
const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/;

/** The entries of a dotenv document, in order; `bad` lists the lines that are not one. */
export function parseDotenv(text: string): { entries: Array<[string, string]>; bad: number[] } {
  const entries: Array<[string, string]> = [];
  const bad: number[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    if (/^\s*(#.*)?$/.test(raw)) return;
    const m = LINE.exec(raw);
    if (!m) return void bad.push(i + 1);
    const [, name, rest] = m as unknown as [string, string, string];
    let value = rest;
    if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end < 0) return void bad.push(i + 1);
      value = rest.slice(1, end);
    } else if (rest.startsWith('"')) {
      const m2 = /^"((?:[^"\\]|\\.)*)"/.exec(rest);
      if (!m2) return void bad.push(i + 1);
      value = (m2[1] ?? "").replace(/\\([nr"\\$])/g, (_x, c: string) => (c === "n" ? "\n" : c === "r" ? "\r" : c));
    } else {
      value = rest.replace(/\s+#.*$/, "");
    }
    entries.push([name, value]);
  });
  return { entries, bad };
}
