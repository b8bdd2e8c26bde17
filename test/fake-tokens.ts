/**
 * Token-shaped test strings generated from an issuer's documented alphabet and length, never
 * pasted: repeatable (a seeded generator per caller), and no real credential sits in the source.
 */
export const DIGITS = "0123456789";
export const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
export const LOWER = "abcdefghijklmnopqrstuvwxyz";
export const ALNUM = DIGITS + UPPER + LOWER;
export const URLSAFE = ALNUM + "_-";
export const B64 = ALNUM + "+/";
export const HEX = "0123456789abcdef";

/** A generator of `n` characters of `alphabet` at a time, pseudo-random and repeatable from `seed`. */
export function fakeChars(seed = 7): (n: number, alphabet?: string) => string {
  let state = seed >>> 0;
  return (n, alphabet = ALNUM) => {
    let out = "";
    for (let i = 0; i < n; i++) {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      out += alphabet[state % alphabet.length];
    }
    return out;
  };
}
