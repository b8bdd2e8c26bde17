/**
 * What a build prints is masked before it is stored, in every form a hostile or careless build
 * command can print a secret in: a secret build variable of the project as base64, base64url, hex
 * (both cases) and percent-encoded, also inside a longer text that was base64-encoded whole (at
 * each of the three byte offsets), percent-encoded with every byte escaped, split by a control
 * character or an escape sequence, or across the cut of a long line, and secrets of any origin by their shape (a GitHub token, an AWS
 * key id, a private key printed line by line). A real build on the built-in host runs the commands
 * (the sandbox's own node prints the forms), and the stored log is read back through the API and
 * searched in the log store.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { expectStatus, type TestApp } from "./harness";
import { buildsApp, buildWorld, drain, ENV_GROUP, getBuild, logText, manualBuild, opsToml, SAMPLE_APP, type BuildWorld } from "./builds-fixtures";
import { existingWriter } from "../src/domains/observability/writer";
import { MAX_LINE_CHARS } from "../src/adapters/runtime/process";

let t: TestApp;
let w: BuildWorld;

beforeAll(async () => {
  t = await buildsApp();
  w = await buildWorld(t, { envGroup: true });
}, 120_000);
afterAll(async () => {
  w?.local.remove();
  await t?.close();
});

const secret = ENV_GROUP.DEPLOY_TOKEN;
const b64 = (s: string) => Buffer.from(s).toString("base64");
const escapeAll = (s: string, upper: boolean) => [...Buffer.from(s)].map((b) => `%${b.toString(16).padStart(2, "0")[upper ? "toUpperCase" : "toLowerCase"]()}`).join("");
/** What the build prints, one form per line, each behind a label that stays readable. */
const FORMS: Record<string, string> = {
  base64: b64(secret),
  base64url: Buffer.from(secret).toString("base64url"),
  hex: Buffer.from(secret).toString("hex"),
  HEX: Buffer.from(secret).toString("hex").toUpperCase(),
  percent: encodeURIComponent(`${secret}/&=`),
  "basic (offset 2)": b64(`ci:${secret}`),
  "json (offset 1)": b64(`{"token":"${secret}","scope":"deploy"}`),
  "prefixed (offset 0)": b64(`abc${secret}!!`),
  "percent (every byte)": escapeAll(secret, true),
  "percent (every byte, lower)": escapeAll(secret, false),
};
/** Lines that show the secret whole once their control characters are dropped, as a terminal or the console shows them. */
const SPLIT = ["\r", "\x1b[0m", "\x1b[1;31m"];
/** Where the builder cuts a long line. */
const CUT = MAX_LINE_CHARS;
// The sample app keeps its own build; the extra command prints the forms with the sandbox's node.
const PRINT_FORMS = `
const s = process.env.DEPLOY_TOKEN;
const b64 = (x) => Buffer.from(x).toString("base64");
const forms = {
  base64: b64(s),
  base64url: Buffer.from(s).toString("base64url"),
  hex: Buffer.from(s).toString("hex"),
  HEX: Buffer.from(s).toString("hex").toUpperCase(),
  percent: encodeURIComponent(s + "/&="),
  "basic (offset 2)": b64("ci:" + s),
  "json (offset 1)": b64(JSON.stringify({ token: s, scope: "deploy" })),
  "prefixed (offset 0)": b64("abc" + s + "!!"),
  "percent (every byte)": [...Buffer.from(s)].map((b) => "%" + b.toString(16).padStart(2, "0").toUpperCase()).join(""),
  "percent (every byte, lower)": [...Buffer.from(s)].map((b) => "%" + b.toString(16).padStart(2, "0")).join(""),
};
for (const [k, v] of Object.entries(forms)) console.log("form " + k + ": " + v);
for (const [i, c] of ${JSON.stringify(SPLIT)}.entries()) console.log("split " + i + ": " + s.slice(0, 5) + c + s.slice(5));
// A line longer than the builder keeps whole, the secret across its cut.
console.log("long: " + "x".repeat(${CUT} - "long: ".length - 5) + s + " end of long");
console.log("github token: ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6");
console.log("aws key id: AKIA" + "QX7RZ2MB5KWT3NYC");
const { privateKey } = require("node:crypto").generateKeyPairSync("ec", { namedCurve: "P-256" });
const pem = privateKey.export({ type: "pkcs8", format: "pem" });
for (const line of pem.trimEnd().split("\\n")) console.log(line);
console.log("after the key");
`;

describe("a build's log masks secrets in their encoded forms and by their shape", () => {
  let log = "";

  test("the build runs and prints every form", async () => {
    await w.local.commit({ ...SAMPLE_APP, "print-forms.js": PRINT_FORMS, "ops.toml": opsToml({ build: ["node print-forms.js", "node build.js"] }) }, "print the forms");
    await w.local.push("main");
    await drain(t);
    const [first] = await expectStatus<Array<{ id: number }>>(await w.ctx.req("GET", "/builds"), 200);
    log = await logText(w, first.id);
    const b = await getBuild(w, first.id);
    expect(b.status, `${JSON.stringify(b)}\n${log}`).toBe("healthy");
    for (const name of Object.keys(FORMS)) expect(log).toContain(`form ${name}: `);
    expect(log).toContain("after the key");
  }, 120_000);

  test("each encoded form of the secret variable is masked", () => {
    for (const [name, form] of Object.entries(FORMS)) {
      const line = log.split("\n").find((l) => l.startsWith(`form ${name}: `))!;
      expect(line, name).toContain("***");
      expect(line, name).not.toContain(form);
    }
    expect(log).not.toContain(secret);
  });

  test("a secret split by a control character, or across the cut of a long line, is masked as it shows", () => {
    const lines = log.split("\n");
    for (let i = 0; i < SPLIT.length; i++) {
      const line = lines.find((l) => l.startsWith(`split ${i}: `))!;
      expect(line, JSON.stringify(SPLIT[i])).toBe(`split ${i}: ***`);
    }
    const at = lines.findIndex((l) => l.startsWith("long: "));
    expect(at).toBeGreaterThanOrEqual(0);
    const joined = lines[at] + lines[at + 1];
    expect(joined).not.toContain(secret);
    expect(joined).toContain("*** end of long");
  });

  test("secret shapes are masked whatever their origin; a private key line by line, through its END line", () => {
    expect(log).toContain("github token: [redacted]");
    expect(log).toContain("aws key id: [redacted]");
    expect(log).not.toContain("BEGIN PRIVATE KEY");
    expect(log).not.toMatch(/^MI[A-Za-z0-9+/]{20,}/m);
    expect(log).toContain("after the key");
  });

  test("the copy in the log store holds none of it either", async () => {
    await existingWriter(t.core)?.flush();
    const entries = await expectStatus<Array<{ message: string }>>(await t.request("GET", `/api/v1/obs/logs?project=${w.ctx.slug}&service=web&q=form&limit=100`, { token: w.token }), 200);
    expect(entries.length).toBeGreaterThanOrEqual(Object.keys(FORMS).length);
    const text = JSON.stringify(entries);
    for (const form of Object.values(FORMS)) expect(text).not.toContain(form);
  });
});
