/**
 * Scrubbing at ingest: every text ops stores from telemetry (log messages, targets and severity
 * texts, span names, routes and statuses, metric names, units and label sets, service, environment
 * and host names …) passes through `scrub` before it is written, so a secret a service logs by
 * mistake never reaches telemetry.db.
 *
 * What is replaced, and by what:
 * - every secret shape of the shared rule set (src/core/secret-shapes.ts: ops's own tokens, cloud
 *   and code-host tokens, private keys, JWTs, HTTP credentials, passwords in URLs, secret-sounding
 *   `key=value` pairs …) → `[redacted]`, keeping what a rule keeps (the key name, a URL's host);
 * - email addresses → `[email]`;
 * - card-like numbers (13–19 digits, optionally grouped by spaces or dashes, starting 2–6 as
 *   payment cards do, and passing the Luhn check, so timestamps and ids survive) → `[card]`.
 */
import { redactSecrets } from "../../core/secret-redact";

const PII = /@|\d{4}/;
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

/** `text` with emails and card numbers replaced (the secret shapes are masked by the caller). */
export function scrubPersonal(text: string): string {
  return PII.test(text) ? text.replace(EMAIL, "[email]").replace(CARD, card) : text;
}

/** `text` with secrets, credentials, emails and card numbers replaced. */
export function scrub(text: string): string {
  if (text.length < 4) return text;
  return scrubPersonal(redactSecrets(text));
}

/** `scrub` for optional values. */
export function scrubOpt(text: string | null): string | null {
  return text === null ? null : scrub(text);
}
