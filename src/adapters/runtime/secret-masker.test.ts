/**
 * The masker of a project's own secret values (build logs, service output), form by form: the
 * literal value, base64 and base64url with and without padding, the value base64-encoded inside a
 * longer text at each of the three byte offsets, hex in both cases, percent-encoding with upper-
 * and lowercase escapes and with `+` for spaces. Short values and short encodings are left alone.
 */
import { describe, test, expect } from "bun:test";
import { MAX_LINE_CHARS, secretMasker, startCommand } from "./process";
import { startKeptCommand } from "./kept";
import { formPatterns, MIN_FORM_CHARS } from "../../core/secret-encodings";

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
    const forms = formPatterns("abcd");
    // Every encoding is at least MIN_FORM_CHARS long: a shorter form is the value itself (or its percent-encoding, which matches it too).
    expect(forms.filter((f) => f.min < MIN_FORM_CHARS).every((f) => new RegExp(`^(?:${f.source})$`).test("abcd"))).toBe(true);
    expect(forms.map((f) => f.source)).toContain("YWJjZA==");
    expect(forms.some((f) => new RegExp(`^(?:${f.source})$`).test("61626364"))).toBe(true);
    expect(m("plain output line")).toBe("plain output line");
  });
});

describe("secretMasker: forms a console shows whole (issue 32 item 7)", () => {
  const unreserved = "Alpha-Bravo_Charlie.7~x";
  const m = secretMasker([unreserved]);
  const escapeAll = (s: string, upper: boolean) => [...Buffer.from(s)].map((b) => `%${b.toString(16).padStart(2, "0")[upper ? "toUpperCase" : "toLowerCase"]()}`).join("");

  test("percent-encoded with every byte escaped, in upper, lower and mixed case", () => {
    const upper = escapeAll(unreserved, true);
    expect(upper).toStartWith("%41%6C%70");
    expect(m(`GET /cb?code=${upper}&x=1`)).toBe("GET /cb?code=***&x=1");
    expect(m(`lower ${escapeAll(unreserved, false)}`)).toBe("lower ***");
    const mixed = upper.replace(/%([0-9A-F])([A-F])/g, (_, a, b) => `%${a}${b.toLowerCase()}`);
    expect(mixed).not.toBe(upper);
    expect(m(`mixed ${mixed}`)).toBe("mixed ***");
    // Some bytes escaped, some not (what encodeURI or a hand-made URL writes).
    expect(m(`some ${upper.slice(0, 9)}${unreserved.slice(3)}`)).toBe("some ***");
    const reserved = "pa ss/wo+rd&é!";
    expect(secretMasker([reserved])(`all ${escapeAll(reserved, true)} end`)).toBe("all *** end");
  });

  test("a value split by a control character or an ANSI escape is masked as the console shows it", () => {
    const s = "s3cr3t-value-42";
    const mm = secretMasker([s]);
    for (const split of ["\r", "\x1b[0m", "\x1b[1;31m", "\x07", "\x00", "\x1b]8;;https://x.example\x07", "\x9b0m"]) {
      const line = `key=${s.slice(0, 6)}${split}${s.slice(6)} done`;
      const out = mm(line);
      expect(out, JSON.stringify(line)).toBe("key=*** done");
    }
    // In an encoded form too, and more than once in a line.
    const hex = Buffer.from(s).toString("hex");
    expect(mm(`${hex.slice(0, 10)}\x1b[32m${hex.slice(10)} and ${s.slice(0, 3)}\r${s.slice(3)}`)).toBe("*** and ***");
    // A line whose control characters split nothing is left as it is.
    expect(mm("\x1b[32mgreen\x1b[0m text\r")).toBe("\x1b[32mgreen\x1b[0m text\r");
  });
});

describe("a secret across the cut of a long line (issue 32 item 7)", () => {
  const s = "cut-secret-7f3a9b";
  const pad = MAX_LINE_CHARS - 6;
  // The line is cut into pieces of MAX_LINE_CHARS; the secret starts 6 characters before a cut.
  const cases = {
    "a whole line": `printf '%${pad}s' '' | tr ' ' x; printf '%s\\n' "$S"`,
    "an unfinished line": `printf '%${pad}s' '' | tr ' ' x; printf '%s' "$S"; sleep 0.3; printf '%20000s' '' | tr ' ' y; sleep 0.3; echo end`,
    "an unfinished line, hex": `printf '%${pad}s' '' | tr ' ' x; printf '%s' "$S" | od -An -tx1 | tr -d ' \\n'; printf '%20000s' '' | tr ' ' y; echo`,
  };
  const hex = Buffer.from(s).toString("hex");
  const check = (pieces: string[]) => {
    const joined = pieces.join("");
    expect(joined).not.toContain(s);
    expect(joined).not.toContain(hex);
    expect(joined).toContain("***");
    expect(Math.max(...pieces.map((l) => l.length))).toBeLessThanOrEqual(MAX_LINE_CHARS);
  };

  for (const [name, command] of Object.entries(cases)) {
    test(`startCommand (builds, jobs, release steps): ${name}`, async () => {
      const mask = secretMasker([s]);
      const pieces: string[] = [];
      const run = startCommand({ command, cwd: "/", env: { PATH: "/usr/bin:/bin", S: s }, mask, onLine: (_stream, line) => pieces.push(mask(line)) });
      await run.done;
      check(pieces);
    }, 20_000);

    test(`startKeptCommand (replicas): ${name}`, async () => {
      const mask = secretMasker([s]);
      const pieces: string[] = [];
      const run = startKeptCommand({ command: ["sh", "-c", command], cwd: "/", env: { PATH: "/usr/bin:/bin", S: s }, mask, onLine: (_stream, line) => pieces.push(mask(line)) });
      await run.done;
      check(pieces);
    }, 20_000);
  }
});
