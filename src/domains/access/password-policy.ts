/**
 * Which passwords a person may choose (NIST SP 800-63B §5.1.1.2): at least 12 characters, and
 * none that an attacker tries first: the most common passwords of public breach corpora (the
 * ranked list @zxcvbn-ts/language-common ships as data, about 49 000 entries, compared without
 * case, without trailing digits or punctuation, and said twice or more), one character or a short group repeated
 * (`aaaaaaaaaaaa`, `abcabcabcabc`), a run of consecutive characters (`abcdefghijkl`,
 * `123456789012`), and anything containing the account's own e-mail name. The list is loaded on
 * the first password check (decompressing it takes a few hundred milliseconds), never at start-up.
 */
import { invalid } from "../../core/errors";

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

let common: Promise<ReadonlySet<string>> | null = null;

/** The breached-password list, lower-cased, loaded once per process. */
function commonPasswords(): Promise<ReadonlySet<string>> {
  common ??= import("@zxcvbn-ts/language-common").then(({ dictionary }) => new Set(dictionary["passwords-common"].map((p) => p.toLowerCase())));
  return common;
}

/** True when the whole text is one group of up to 4 characters said again and again. */
function repeated(text: string): boolean {
  return /^(.{1,4}?)\1+$/su.test(text);
}

/** The step from character `a` to `b`: digits go round (`9` then `0` is +1). */
function stepOf(a: number, b: number): number {
  const isDigit = (c: number) => c >= 48 && c <= 57;
  if (!isDigit(a) || !isDigit(b)) return b - a;
  const d = (((b - a) % 10) + 10) % 10;
  return d === 1 ? 1 : d === 9 ? -1 : 0;
}

/** True when every character follows the one before by the same step of +1 or -1 (`abcd`, `4321`, `8901`). */
function consecutive(text: string): boolean {
  const codes = Array.from(text, (c) => c.codePointAt(0) ?? 0);
  const step = stepOf(codes[0], codes[1]);
  if (step !== 1 && step !== -1) return false;
  return codes.every((c, i) => i === 0 || stepOf(codes[i - 1], c) === step);
}

/** Why `password` may not be chosen for the account `email`, or null when it may. */
export async function passwordProblem(password: string, email: string | null): Promise<string | null> {
  if (password.length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `must be at most ${MAX_PASSWORD_LENGTH} characters`;
  const lower = password.toLowerCase();
  if (repeated(lower)) return "repeats the same few characters; choose a passphrase of several words";
  if (consecutive(lower)) return "is a run of consecutive characters; choose a passphrase of several words";
  const name = (email ?? "").toLowerCase().split("@")[0];
  if (name.length >= 3 && lower.includes(name)) return "must not contain your e-mail address";
  const list = await commonPasswords();
  const core = lower.replace(/[\d\s!-/:-@[-`{-~]+$/u, "");
  const unit = /^(.+?)\1+$/su.exec(lower)?.[1] ?? lower;
  if (list.has(lower) || list.has(unit) || (core.length >= 4 && list.has(core))) return "is one of the most common passwords in breach lists; choose another";
  return null;
}

/** 422 naming `field` unless `password` may be chosen for the account `email`. */
export async function checkPassword(password: string, email: string | null, field = "password"): Promise<void> {
  const problem = await passwordProblem(password, email);
  if (problem) throw invalid(field, problem);
}
