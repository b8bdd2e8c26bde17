/**
 * The forms a secret value takes when a program prints it encoded, so that masking a project's own
 * secret values (build logs, service output) catches more than the literal text (DESIGN §6 "Secrets
 * in output"): base64 and base64url (with and without padding), hex in both cases, and
 * percent-encoding (as `encodeURIComponent` writes it, with lowercase escapes, and with `+` for
 * spaces as HTML forms do).
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

/** Characters of the base64 of `bytes` preceded by `k` filler bytes that depend on `bytes` alone. */
function base64Core(bytes: Uint8Array, k: number): string {
  const padded = new Uint8Array(k + bytes.length);
  padded.set(bytes, k);
  const b64 = Buffer.from(padded).toString("base64");
  return b64.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
}

const toUrl = (b64: string) => b64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** Every encoded form of `value` worth masking (at least MIN_FORM_CHARS long, not the value itself), without duplicates. */
export function encodedForms(value: string): string[] {
  const bytes = new TextEncoder().encode(value);
  const forms = new Set<string>();
  const whole = Buffer.from(bytes).toString("base64");
  forms.add(whole);
  forms.add(toUrl(whole));
  for (let k = 0; k < 3; k++) {
    const core = base64Core(bytes, k);
    forms.add(core);
    forms.add(toUrl(core));
  }
  const hex = Buffer.from(bytes).toString("hex");
  forms.add(hex);
  forms.add(hex.toUpperCase());
  const percent = encodeURIComponent(value);
  forms.add(percent);
  forms.add(percent.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()));
  forms.add(percent.replace(/%20/g, "+"));
  forms.delete(value);
  return [...forms].filter((f) => f.length >= MIN_FORM_CHARS);
}
