/**
 * Self-update end to end with real binaries: two builds of ops with the same release key compiled
 * in; the older serves, its estate owner presses the update button (the route), the server takes
 * the newer from a local release server (signature and SHA-256 checked), renames it over itself
 * and re-executes: same pid and port, the new version answering. A tampered download is refused
 * first and changes nothing.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { generateKeyPairSync, sign } from "node:crypto";
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePort, tempDir } from "./harness";
import { signedText } from "../src/domains/appliance/service";
import { hostTarget } from "../src/domains/cli/service";
import { readPidFile } from "../src/commands/restart";

const ROOT = path.resolve(import.meta.dir, "..");
const OLD = "0.9.0";
const NEW = "0.9.1";
let dir: string;
let release: ReturnType<typeof Bun.serve>;
const served = new Map<string, Uint8Array | string>();

function build(version: string, keyFile: string): string {
  const out = path.join(dir, `ops-${version}`);
  const r = Bun.spawnSync([process.execPath, "build.ts", "--version", version, "--outfile", out, "--release-key", keyFile], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`build ${version}: ${r.stdout}${r.stderr}`);
  return out;
}

beforeAll(() => {
  dir = tempDir("ops-selfupdate-bin-");
  const key = generateKeyPairSync("ed25519");
  const pub = path.join(dir, "release.pub.pem");
  writeFileSync(pub, key.publicKey.export({ type: "spki", format: "pem" }));
  build(OLD, pub);
  const next = readFileSync(build(NEW, pub));
  const sha = new Bun.CryptoHasher("sha256").update(next).digest("hex");
  const signature = sign(null, Buffer.from(signedText(NEW, hostTarget(), sha)), key.privateKey).toString("base64");
  served.set("/ops-next", next);
  served.set("/release.json", JSON.stringify({ version: NEW, targets: { [hostTarget()]: { url: "/ops-next", sha256: sha, signature } } }));
  release = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response((served.get(new URL(req.url).pathname) ?? "no") as BodyInit, { status: served.has(new URL(req.url).pathname) ? 200 : 404 }) });
}, 300_000);

afterAll(() => {
  release?.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

describe("the update button on a compiled server", () => {
  test("refuses a tampered binary, then updates and re-executes in place", async () => {
    const bin = path.join(dir, "installed", "ops");
    Bun.spawnSync(["mkdir", "-p", path.dirname(bin)]);
    copyFileSync(path.join(dir, `ops-${OLD}`), bin);
    const data = path.join(dir, "data");
    const port = freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", OPS_DATA_DIR: data, OPS_LISTEN: `127.0.0.1:${port}`, OPS_INGRESS_LISTEN: "off", OPS_BOOTSTRAP_EMAIL: "owner@ops.test", OPS_BOOTSTRAP_PASSWORD: "update-owner-password", OPS_UPDATE_URL: `http://127.0.0.1:${release.port}/release.json`, OPS_LOG_LEVEL: "warn" };
    const server = Bun.spawn([bin, "serve"], { env, stdout: "ignore", stderr: "inherit" });
    try {
      for (let i = 0; i < 300 && !(await fetch(`${url}/readyz`).then((r) => r.ok, () => false)); i++) await Bun.sleep(100);
      expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: "ok", version: OLD });
      const login = await fetch(`${url}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "owner@ops.test", password: "update-owner-password", client: "cli" }) });
      const token = ((await login.json()) as { token: string }).token;
      const press = () => fetch(`${url}/api/v1/estate/self-update`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });

      const good = served.get("/ops-next")!;
      served.set("/ops-next", Buffer.concat([Buffer.from(good as Uint8Array), Buffer.from("tampered")]));
      const refused = await press();
      expect(refused.status).toBe(422);
      expect(((await refused.json()) as { message: string }).message).toContain("not the signed");
      expect(readFileSync(bin).equals(readFileSync(path.join(dir, `ops-${OLD}`)))).toBe(true);

      served.set("/ops-next", good);
      const before = readPidFile(data)!;
      const res = await press();
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ updated: true, from: OLD, version: NEW, restarting: true });
      let version = "";
      for (let i = 0; i < 300 && version !== NEW; i++) {
        await Bun.sleep(100);
        version = await fetch(`${url}/health`).then((r) => r.json().then((b) => (b as { version: string }).version), () => "");
      }
      expect(version).toBe(NEW);
      expect(readPidFile(data)!.pid).toBe(before.pid);
      expect(readPidFile(data)!.pid).toBe(server.pid);
      expect(readFileSync(bin).equals(Buffer.from(good as Uint8Array))).toBe(true);
    } finally {
      server.kill("SIGTERM");
      await server.exited;
    }
  }, 300_000);
});
