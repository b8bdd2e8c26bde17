/**
 * The masker of a project's own secret values (build logs, service output), form by form: the
 * literal value, base64 and base64url with and without padding, the value base64-encoded inside a
 * longer text at each of the three byte offsets, hex in both cases, percent-encoding with upper-
 * and lowercase escapes and with `+` for spaces. Short values and short encodings are left alone.
 */
import { describe, test, expect } from "bun:test";
import { secretMasker } from "./process";
import { encodedForms, MIN_FORM_CHARS } from "../../core/secret-encodings";

const secret = "s3cr3t+/value?&=421";
const mask = secretMasker([secret]);
const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("secretMasker", () => {
  test("the literal value, longest values first, multi-line values line by line", () => {
    const m = secretMasker(["abc", "token-1234", "token-1234-extended", "-----BEGIN X-----\nAAAABBBBCCCC\n-----END X-----"]);
    expect(m("a token-1234-extended and token-1234 abc")).toBe("a *** and *** abc");
    expect(m("AAAABBBBCCCC")).toBe("***");
    expect(mask(`value=${secret}`)).toBe("value=***");
  });

  test("base64 and base64url, with and without padding", () => {
    const std = b64(secret);
    expect(mask(`std ${std} end`)).toBe("std *** end");
    expect(mask(`nopad ${std.replace(/=+$/, "")} end`)).not.toContain(std.replace(/=+$/, "").slice(0, -1));
    expect(mask(`url ${Buffer.from(secret).toString("base64url")} end`)).toBe("url *** end");
  });

  test("inside a longer base64 text, at each of the three byte offsets", () => {
    for (const prefix of ["", "a", "ab", "abc", "user:"]) {
      for (const suffix of ["", "!", "!!", "\n"]) {
        const text = b64(`${prefix}${secret}${suffix}`);
        const out = mask(text);
        expect(out, `${JSON.stringify(prefix)} + secret + ${JSON.stringify(suffix)}`).toContain("***");
        // Nothing of the value's own encoding is left: at most the few characters it shares with the filler.
        const stable = Buffer.from(`${prefix}${secret}`).toString("base64").slice(Math.ceil((prefix.length * 8) / 6), Math.floor(((prefix.length + secret.length) * 8) / 6));
        expect(out).not.toContain(stable.slice(0, 8));
        const url = Buffer.from(`${prefix}${secret}${suffix}`).toString("base64url");
        expect(mask(url)).toContain("***");
      }
    }
  });

  test("hex in both cases", () => {
    const hex = Buffer.from(secret).toString("hex");
    expect(mask(`dump ${hex}`)).toBe("dump ***");
    expect(mask(`DUMP ${hex.toUpperCase()}`)).toBe("DUMP ***");
    expect(mask(`inside 00ff${hex}ff00`)).toBe("inside 00ff***ff00");
  });

  test("percent-encoded: upper- and lowercase escapes, and + for spaces", () => {
    expect(mask(`GET /cb?code=${encodeURIComponent(secret)}&x=1`)).toBe("GET /cb?code=***&x=1");
    expect(mask(`lower ${encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}`)).toBe("lower ***");
    const spaced = "pass phrase with spaces";
    expect(secretMasker([spaced])(`form=${encodeURIComponent(spaced).replace(/%20/g, "+")}`)).toBe("form=***");
  });

  test("short values are not masked, and encodings shorter than the minimum are not forms", () => {
    const m = secretMasker(["abc", "abcd"]);
    expect(m("abc YWJj 616263")).toBe("abc YWJj 616263");
    expect(m("abcd")).toBe("***");
    expect(encodedForms("abcd").every((f) => f.length >= MIN_FORM_CHARS)).toBe(true);
    expect(encodedForms("abcd")).toContain("YWJjZA==");
    expect(encodedForms("abcd")).toContain("61626364");
    expect(m("plain output line")).toBe("plain output line");
  });
});
