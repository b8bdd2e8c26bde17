/**
 * TOTP (RFC 6238) through the `otpauth` package: SHA-1, 6 digits, 30-second steps (what every
 * authenticator app supports). A code is accepted within ±1 step, and only when its step is newer
 * than the last step accepted for the account (`mfa_last_counter`), so a code works once and an
 * older code inside the window cannot be replayed either.
 */
import * as OTPAuth from "otpauth";

const PERIOD = 30;
const DIGITS = 6;

/** A fresh 160-bit seed, base32 without padding. */
export function newTotpSeed(): string {
  return new OTPAuth.Secret({ size: 20 }).base32;
}

function totp(seed: string, label = "ops", issuer = "ops"): OTPAuth.TOTP {
  return new OTPAuth.TOTP({ issuer, label, algorithm: "SHA1", digits: DIGITS, period: PERIOD, secret: OTPAuth.Secret.fromBase32(seed) });
}

/** The otpauth:// URI an authenticator app scans. */
export function totpUri(seed: string, account: string, issuer: string): string {
  return totp(seed, account, issuer).toString();
}

/**
 * The step (counter) `code` matches at `nowMs` within ±1 step, or null. A match at or before
 * `lastCounter` is a replay and counts as no match.
 */
export function matchTotp(seed: string, code: string, nowMs: number, lastCounter: number | null): number | null {
  const token = code.replace(/\s+/g, "");
  if (!/^\d{6}$/.test(token)) return null;
  const gen = totp(seed);
  const delta = gen.validate({ token, timestamp: nowMs, window: 1 });
  if (delta === null) return null;
  const counter = gen.counter({ timestamp: nowMs }) + delta;
  if (lastCounter !== null && counter <= lastCounter) return null;
  return counter;
}

/** The code for `nowMs` (tests and the bench use oathtool instead; this is for internal checks). */
export function totpCode(seed: string, nowMs: number): string {
  return totp(seed).generate({ timestamp: nowMs });
}
