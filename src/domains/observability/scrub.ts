/**
 * Scrubbing at ingest: every text ops stores from telemetry (log messages and targets, span
 * names, routes, attribute values, service names …) passes through `scrub` before it is written,
 * so a secret a service logs by mistake never reaches telemetry.db.
 *
 * What is replaced, and by what:
 * - ops's own secrets (`opss_…`, `opst_…`, `opsi_…`, `opsd_…`, any `ops<letters>_` prefix with a
 *   long base62 tail) → `[redacted]`;
 * - HTTP credentials: `Bearer <token>` and `Basic <base64>` → `Bearer [redacted]`;
 * - secret-sounding pairs in text, query strings and JSON (`password=…`, `"api_key": "…"`,
 *   `token: …`, `client_secret=…` …) → the key kept, the value `[redacted]`;
 * - email addresses → `[email]`;
 * - card-like numbers (13–19 digits, optionally grouped by spaces or dashes, starting 2–6 as
 *   payment cards do, and passing the Luhn check, so timestamps and ids survive) → `[card]`.
 */

const QUICK = /[@=:]|ops[a-z]{0,4}_|bearer|basic|\d{4}/i;
const OPS_SECRET = /\bops[a-z]{1,4}_[A-Za-z0-9]{20,}/g;
const BEARER = /\b(bearer)\s+[A-Za-z0-9._~+/-]{8,}=*/gi;
const BASIC = /\b(basic)\s+(?=[A-Za-z0-9+/]*[0-9+/])[A-Za-z0-9+/]{12,}={0,2}/gi;
const PAIR =
  /(["']?)\b((?:[a-z]+[_-])?(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?))\1(\s*[=:]\s*)("(?:[^"\\]|\\.)*"|'[^']*'|[^\s&,;"'}\]]+)/gi;
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
const CARD = /(?<![\d.])[2-6]\d{3}(?:[ -]?\d){9,15}(?![\d.])/g;

function luhn(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

function card(match: string): string {
  const digits = match.replace(/[ -]/g, "");
  return digits.length >= 13 && digits.length <= 19 && luhn(digits) ? "[card]" : match;
}

function pair(_m: string, quote: string, key: string, sep: string, value: string): string {
  const q = value.startsWith('"') ? '"' : value.startsWith("'") ? "'" : "";
  return `${quote}${key}${quote}${sep}${q}[redacted]${q}`;
}

/** `text` with secrets, credentials, emails and card numbers replaced. */
export function scrub(text: string): string {
  if (text.length < 4 || !QUICK.test(text)) return text;
  return text
    .replace(OPS_SECRET, "[redacted]")
    .replace(BEARER, "$1 [redacted]")
    .replace(BASIC, "$1 [redacted]")
    .replace(PAIR, pair)
    .replace(EMAIL, "[email]")
    .replace(CARD, card);
}

/** `scrub` for optional values. */
export function scrubOpt(text: string | null): string | null {
  return text === null ? null : scrub(text);
}
