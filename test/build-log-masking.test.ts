/**
 * What a build prints is masked before it is stored, in every form a hostile or careless build
 * command can print a secret in: a secret build variable of the project as base64, base64url, hex
 * (both cases) and percent-encoded, also inside a longer text that was base64-encoded whole (at
 * each of the three byte offsets), and secrets of any origin by their shape (a GitHub token, an AWS
 * key id, a private key printed line by line). A real build on the built-in host runs the commands
 * (the sandbox's own node prints the forms), and the stored log is read back through the API and
 * searched in the log store.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { expectStatus, type TestApp } from "./harness";
import { buildsApp, buildWorld, drain, ENV_GROUP, getBuild, logText, manualBuild, opsToml, SAMPLE_APP, type BuildWorld } from "./builds-fixtures";
import { existingWriter } from "../src/domains/observability/writer";

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
};
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
};
for (const [k, v] of Object.entries(forms)) console.log("form " + k + ": " + v);
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
