/**
 * The forms a secret value takes when a program prints it encoded, so that masking a project's own
 * secret values (build, release-step, job and replica output) catches more than the literal text
 * (DESIGN §6 "Secrets in output"): base64 and base64url (with and without padding), hex in any
 * case, and percent-encoding with any subset of its bytes escaped, in any case (what
 * `encodeURIComponent` and `encodeURI` write, every byte escaped, `+` for spaces as HTML forms
 * write; decision 0515). Each form is a regular expression source, so hex and percent escapes
 * match in upper, lower and mixed case without a form per case.
 *
 * A value embedded in a longer text before encoding (`user:secret` in a Basic credential, a key in
 * a base64'd JSON file) shows in the base64 output only through the characters that encode its own
 * bytes, and which characters those are depends on where the value starts, modulo 3 bytes. For
 * each of the three offsets the part of the encoding that depends on the value alone is a form too:
 * with k filler bytes before it, the first ceil(8k/6) characters also carry filler bits, and past
 * floor(8(k+n)/6) characters the bits of whatever follows begin.
 */

/** Shorter encoded forms are not masked: they turn up by chance in ordinary base64 and hex. */
export const MIN_FORM_CHARS = 8;

/** One form of a value, as a regular expression source without capturing groups. */
export interface FormPattern {
  source: string;
  /** Only its matches that hold a `%` are not literal forms too: text without a `%` can skip it. */
  percent: boolean;
  /** The fewest and the most characters a match has. */
  min: number;
  max: number;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `text` itself, as a form. */
export const literalPattern = (text: string): FormPattern => ({ source: escapeRe(text), percent: false, min: text.length, max: text.length });

/** Characters of the base64 of `bytes` preceded by `k` filler bytes that depend on `bytes` alone. */
function base64Core(bytes: Uint8Array, k: number): string {
  const padded = new Uint8Array(k + bytes.length);
  padded.set(bytes, k);
  const b64 = Buffer.from(padded).toString("base64");
  return b64.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
}

const toUrl = (b64: string) => b64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** Hex digits in either case: `6c` → `6[cC]`. */
const anyCaseHex = (hex: string) => hex.replace(/[a-f]/g, (c) => `[${c}${c.toUpperCase()}]`);

/**
 * Percent-encoding: each character as itself or as its UTF-8 bytes escaped (either case), a space
 * also as `+`. A match without a `%` is the value itself or the value with `+` for its spaces,
 * which are literal forms of their own; so text without a `%` can skip this one.
 */
function percentPattern(value: string): FormPattern {
  let source = "";
  let max = 0;
  for (const ch of value) {
    const bytes = Buffer.from(ch);
    const escaped = [...bytes].map((b) => `%${anyCaseHex(b.toString(16).padStart(2, "0"))}`).join("");
    source += `(?:${escapeRe(ch)}|${escaped}${ch === " " ? "|\\+" : ""})`;
    max += 3 * bytes.length;
  }
  return { source, percent: true, min: value.length, max };
}

/** Every form of `value` worth masking (each encoding at least MIN_FORM_CHARS long), the literal value included, without duplicates. */
export function formPatterns(value: string): FormPattern[] {
  const bytes = new TextEncoder().encode(value);
  const literal = new Set<string>();
  const whole = Buffer.from(bytes).toString("base64");
  literal.add(whole);
  literal.add(toUrl(whole));
  for (let k = 0; k < 3; k++) {
    const core = base64Core(bytes, k);
    literal.add(core);
    literal.add(toUrl(core));
  }
  literal.delete(value);
  const out: FormPattern[] = [...literal].filter((f) => f.length >= MIN_FORM_CHARS).map(literalPattern);
  const hex = Buffer.from(bytes).toString("hex");
  if (hex.length >= MIN_FORM_CHARS) out.push({ source: anyCaseHex(hex), percent: false, min: hex.length, max: hex.length });
  out.push(literalPattern(value), percentPattern(value));
  if (value.includes(" ")) out.push(literalPattern(value.replace(/ /g, "+")));
  return out;
}
