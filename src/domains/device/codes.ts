/**
 * User codes (RFC 8628 §6.1): 8 letters of the base-20 consonant alphabet BCDFGHJKLMNPQRSTVWXZ
 * (no vowels, so no accidental words; no digits, so no 0/O or 1/I), shown as `XXXX-XXXX`, typed
 * back case- and dash-insensitively. Drawn from the CSPRNG with rejection sampling so every
 * letter is equally likely (a plain `byte % 20` would favour the first 16 letters).
 */
import { randomBytes } from "node:crypto";

export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
export const USER_CODE_LENGTH = 8;
/** The largest multiple of 20 that fits a byte: bytes at or above it are thrown away. */
const ACCEPT_BELOW = 256 - (256 % USER_CODE_ALPHABET.length);

/** A fresh user code in normalised form (8 letters, no dash). */
export function newUserCode(random: (n: number) => Uint8Array = randomBytes): string {
  let out = "";
  while (out.length < USER_CODE_LENGTH) {
    for (const b of random(16)) {
      if (b >= ACCEPT_BELOW) continue;
      out += USER_CODE_ALPHABET[b % USER_CODE_ALPHABET.length];
      if (out.length === USER_CODE_LENGTH) break;
    }
  }
  return out;
}

/**
 * What a person typed, normalised for comparison: upper-cased, with dashes, spaces and anything
 * outside the alphabet removed. Returns null when that does not leave exactly 8 letters.
 */
export function normaliseUserCode(input: string): string | null {
  const cleaned = input.toUpperCase().replace(/[^A-Z]/g, "");
  if (cleaned.length !== USER_CODE_LENGTH) return null;
  for (const c of cleaned) if (!USER_CODE_ALPHABET.includes(c)) return null;
  return cleaned;
}

/** `BCDFGHJK` → `BCDF-GHJK`. */
export function displayUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}
