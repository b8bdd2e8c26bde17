/**
 * Applying the shapes: a private key printed line by line is masked through its END line and no
 * further; hostile text built to make each rule backtrack (its keywords repeated, runs of its own
 * characters, openings that never close) is masked in linear time: at 1 MiB, a pattern that
 * restarted inside such runs would need hours, so these tests would time out rather than pass.
 */
import { describe, test, expect } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { SECRET_SHAPES } from "./secret-shapes";
import { findSecrets, redactSecrets, SecretLineFilter, REDACTED } from "./secret-redact";

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 1024 });
const pem = privateKey.export({ type: "pkcs1", format: "pem" }) as string;

describe("SecretLineFilter", () => {
  test("a private key printed line by line is masked from BEGIN through END, and the lines after it are not", () => {
    const f = new SecretLineFilter();
    const lines = ["writing key:", ...pem.trimEnd().split("\n"), "done writing key", "next step"];
    const out = lines.map((l) => f.filter(l));
    expect(out[0]).toBe("writing key:");
    expect(out.slice(1, -2).every((l) => l === REDACTED)).toBe(true);
    expect(out.slice(-2)).toEqual(["done writing key", "next step"]);
    expect(out.join("\n")).not.toContain(pem.split("\n")[1]);
  });

  test("a BEGIN line followed by ordinary output stops masking at the first line that cannot be a key", () => {
    const f = new SecretLineFilter();
    expect(f.filter('grep -r "-----BEGIN PRIVATE KEY-----" src/')).toContain(REDACTED);
    expect(f.filter("src/pem.js:12: if (line.startsWith(marker)) {")).toBe("src/pem.js:12: if (line.startsWith(marker)) {");
    expect(f.filter("MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu")).toBe("MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu");
  });

  test("public keys and certificates pass; other shapes in a line are masked as by redactSecrets", () => {
    const f = new SecretLineFilter();
    expect(f.filter("-----BEGIN PUBLIC KEY-----")).toBe("-----BEGIN PUBLIC KEY-----");
    expect(f.filter("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE")).toBe("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE");
    expect(f.filter("export DB_PASSWORD=hunter22")).toBe(`export DB_PASSWORD=${REDACTED}`);
  });
});

describe("hostile text is masked in linear time", () => {
  const MiB = 1024 * 1024;
  const fill = (unit: string) => unit.repeat(Math.ceil(MiB / unit.length)).slice(0, MiB);
  const hostile: Record<string, string[]> = {
    keywords: SECRET_SHAPES.flatMap((s) => s.keywords.map((k) => fill(`${k}a-`))),
    runs: [fill("a-"), fill("a."), fill("a_"), fill("A"), fill("9")],
    openings: [
      fill("-----BEGIN PRIVATE KEY-----\n"),
      `-----BEGIN PRIVATE KEY-----\n${fill("QUJD\n")}`,
      fill('password="a'),
      fill("password='"),
      fill("x-token: a "),
      fill("eyJa-"),
      fill("eyJaaaaaaaaa.eyJaaaaaaaaa-"),
      fill("a://b:c"),
      fill("a://"),
      fill("sk-aaaaaaaaaaaaaaaaaaaaT3Blbk"),
      fill("bearer "),
      fill("basic aaaa"),
      fill("Bearer aaaaaaaa"),
      fill("glpat-aaaaaaaaaa"),
      fill("hooks.slack.com/services/"),
    ],
  };
  for (const [kind, texts] of Object.entries(hostile)) {
    test(`${kind}: ${texts.length} texts of 1 MiB`, () => {
      for (const text of texts) {
        const out = redactSecrets(text);
        expect(out.length).toBeGreaterThan(0);
        findSecrets(text, true);
      }
    });
  }
});
