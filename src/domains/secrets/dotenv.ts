/**
 * Dotenv rendering, in the dialect Docker Compose and python-dotenv read:
 *
 * - `NAME=value` unquoted when the value holds only characters no reader treats specially;
 * - `NAME='value'` (literal: no escapes, no `$` interpolation) when it has no `'`, `\` or line break;
 * - otherwise `NAME="…"` with `\\`, `\"`, `\n`, `\r` escaped and `$` written `\$` so interpolating
 *   readers (Compose, dotenv-expand, Bun) keep it literal.
 */
const PLAIN = /^[A-Za-z0-9_.,:/@%+=-]+$/;

export function quoteDotenvValue(value: string): string {
  if (PLAIN.test(value)) return value;
  if (!/['\\\r\n]/.test(value)) return `'${value}'`;
  const escaped = value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\$/g, "\\$");
  return `"${escaped}"`;
}

/** A dotenv document of `entries`, one line each, in the given order. */
export function renderDotenv(entries: Array<[string, string]>): string {
  return entries.map(([k, v]) => `${k}=${quoteDotenvValue(v)}\n`).join("");
}
