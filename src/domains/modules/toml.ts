/**
 * A TOML writer for manifests ops rewrites (a module's Cargo.toml with its published name,
 * version and sibling dependencies). Bun parses TOML but does not write it; what is written here
 * is what Bun's parser gave back: tables, arrays (of tables or of values), strings, numbers,
 * booleans and dates. Comments and formatting of the original are not kept: the file is read by
 * cargo, which normalises it again when it packages the crate.
 */

type Value = string | number | boolean | Date | Value[] | { [k: string]: Value };

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

function isTable(v: unknown): v is Record<string, Value> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function isTableArray(v: unknown): v is Record<string, Value>[] {
  return Array.isArray(v) && v.length > 0 && v.every(isTable);
}

/** A TOML basic string: JSON's escapes are TOML's, plus DEL, which TOML wants escaped too. */
function str(s: string): string {
  return JSON.stringify(s).replace(/\u007f/g, "\\u007F");
}

function key(k: string): string {
  return BARE_KEY.test(k) ? k : str(k);
}

function inline(v: Value): string {
  if (typeof v === "string") return str(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "nan";
    if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
    return String(v);
  }
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return `[${v.map(inline).join(", ")}]`;
  return `{ ${Object.entries(v)
    .map(([k, x]) => `${key(k)} = ${inline(x)}`)
    .join(", ")} }`;
}

function section(out: string[], path: string[], table: Record<string, Value>, header: string | null): void {
  const scalars = Object.entries(table).filter(([, v]) => !isTable(v) && !isTableArray(v));
  const tables = Object.entries(table).filter(([, v]) => isTable(v));
  const arrays = Object.entries(table).filter(([, v]) => isTableArray(v)) as Array<[string, Record<string, Value>[]]>;
  // A table with only sub-tables needs no header of its own (`[a.b]` implies `[a]`).
  if (header !== null && (scalars.length > 0 || (tables.length === 0 && arrays.length === 0) || header.startsWith("[["))) {
    if (out.length > 0) out.push("");
    out.push(header);
  }
  for (const [k, v] of scalars) out.push(`${key(k)} = ${inline(v)}`);
  for (const [k, v] of tables) section(out, [...path, k], v as Record<string, Value>, `[${[...path, k].map(key).join(".")}]`);
  for (const [k, list] of arrays) {
    for (const item of list) section(out, [...path, k], item, `[[${[...path, k].map(key).join(".")}]]`);
  }
}

/** Write a parsed TOML document back as TOML text. */
export function stringifyToml(doc: Record<string, unknown>): string {
  const out: string[] = [];
  section(out, [], doc as Record<string, Value>, null);
  return `${out.join("\n")}\n`;
}
