/**
 * The real `ops` binary against a live server (Done-when of the device/CLI issue): built with
 * build.ts into a temp dir (three versions, for `ops update`), then driven as a person would —
 * `ops login` in a child process approved through the API, `ops whoami`, `ops logout`; the
 * generated installer run with `sh` in a temp HOME; `ops update` replacing itself; and tampered
 * releases refused by both the installer and `ops update`.
 *
 * The server runs on wall-clock time here: the CLI really waits its poll interval.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, openSync, writeSync, closeSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, freePort, tempDir, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { startLogin as startLoginAt } from "./support/cli";
import { FixedClock } from "../src/core/clock";
import { fixedRole } from "../src/domains/access/service";
import { hostTarget } from "../src/domains/cli/service";

const ROOT = path.resolve(import.meta.dir, "..");

/** The harness wants a FixedClock; this one follows the wall clock. */
class WallClock extends FixedClock {
  override now(): number {
    return Date.now();
  }
}

const dirs: string[] = [];
function dir(prefix: string): string {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
}

const binDir = dir("ops-e2e-bin-");
const V1 = "1.0.0-e2e";
const V2 = "2.0.0-e2e";
const V3 = "3.0.0-e2e";
const bin = (v: string) => path.join(binDir, v, "ops");

let t: TestApp;
let dev: Person;
let project: string;

function build(version: string): void {
  const r = Bun.spawnSync([process.execPath, "build.ts", "--version", version, "--outfile", bin(version)], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`build of ${version} failed:\n${r.stdout}${r.stderr}`);
}

beforeAll(async () => {
  for (const v of [V1, V2, V3]) build(v);
  t = await createTestApp({ clock: new WallClock() });
  const p = makeProject(t);
  project = p.slug;
  dev = await makePerson(t, [{ role: "developer", project }], { displayName: "Dana Developer" });
}, 180_000);

afterAll(async () => {
  await t?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Only what a shell user would have: HOME, PATH and what the test adds. */
function envFor(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { HOME: home, PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", ...extra };
}

async function run(cmd: string[], env: Record<string, string>, cwd = "/"): Promise<Run> {
  const p = Bun.spawn(cmd, { env, cwd, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/** Start `ops login` as `home`'s person and resolve with the user code it prints (test/support/cli.ts). */
function startLogin(binary: string, home: string, args: string[] = []) {
  return startLoginAt(binary, t.url, envFor(home), args);
}

function configOf(home: string): { server: string; token: string | null; project?: string | null } {
  return JSON.parse(readFileSync(path.join(home, ".config", "ops", "config.json"), "utf8"));
}

function mode(file: string): number {
  return statSync(file).mode & 0o777;
}

async function publish(version: string, file: string): Promise<{ digest: string; size_bytes: number }> {
  const owner = await makePerson(t, [{ role: "owner", project: null }]);
  const res = await t.request("POST", `/api/v1/cli/releases?version=${version}&target=${hostTarget()}`, {
    token: owner.session,
    raw: Bun.file(file),
    headers: { "content-type": "application/octet-stream" },
  });
  return expectStatus(res, 201);
}

/** Corrupt a published release's stored bytes (same size, one byte flipped in the middle). */
function tamper(digest: string): void {
  const file = path.join(t.dataDir, "blobs", "sha256", digest.slice(0, 2), digest);
  const size = statSync(file).size;
  const fd = openSync(file, "r+");
  const at = Math.floor(size / 2);
  const buf = Buffer.alloc(1);
  require("node:fs").readSync(fd, buf, 0, 1, at);
  buf[0] = buf[0] ^ 0xff;
  writeSync(fd, buf, 0, 1, at);
  closeSync(fd);
}

async function installCode(): Promise<string> {
  return (await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: dev.session, body: { project } }), 200)).code;
}

async function installer(code: string): Promise<string> {
  return expectStatus<string>(await t.request("GET", "/api/v1/cli/install.sh", { token: code }), 200);
}

describe("ops login, whoami, logout (real binary, live server)", () => {
  test("login prints the code like gh, the person approves through the API, the token lands in config.json (0600)", async () => {
    const home = dir("ops-e2e-home-");
    const login = await startLogin(bin(V1), home, ["--project", project]);
    expect(login.stderrSoFar).toContain(`${t.url}/device?user_code=${login.userCode}`);
    const grant = await expectStatus(await t.request("GET", `/api/v1/auth/device/${login.userCode}`, { token: dev.session }), 200);
    expect(grant.requested_project).toBe(project);
    await expectStatus(
      await t.request("POST", `/api/v1/auth/device/${login.userCode}/approve`, { token: dev.session, body: { role_id: fixedRole(t.core, "developer").id, project } }),
      204,
    );
    const done = await login.finished;
    expect(done.code).toBe(0);
    expect(done.stderr).toContain("Authentication complete");
    expect(done.stdout).toContain(dev.email);
    const cfgFile = path.join(home, ".config", "ops", "config.json");
    expect(mode(cfgFile)).toBe(0o600);
    const cfg = configOf(home);
    expect(cfg.server).toBe(t.url);
    expect(cfg.token).toMatch(/^opst_/);
    expect(done.stdout + done.stderr).not.toContain(cfg.token!);

    const who = await run([bin(V1), "whoami"], envFor(home));
    expect(who.code).toBe(0);
    expect(who.stdout).toContain(dev.email);
    expect(who.stdout).toContain("Developer");
    expect(who.stdout).toContain(project);

    const token = cfg.token!;
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token }), 200);
    const out = await run([bin(V1), "logout"], envFor(home));
    expect(out.code).toBe(0);
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token }), 401);
    expect(configOf(home).token).toBeNull();
    const after = await run([bin(V1), "whoami"], envFor(home));
    expect(after.code).toBe(3);
    expect(after.stderr).toContain("ops login");
  }, 60_000);

  test("a denied login exits 5 with a clear message", async () => {
    const home = dir("ops-e2e-home-");
    const login = await startLogin(bin(V1), home);
    await expectStatus(await t.request("POST", `/api/v1/auth/device/${login.userCode}/deny`, { token: dev.session }), 204);
    const done = await login.finished;
    expect(done.code).toBe(5);
    expect(done.stderr).toContain("denied");
    expect(existsSync(path.join(home, ".config", "ops", "config.json"))).toBe(false);
  }, 60_000);

  test("OPS_TOKEN overrides the file; a revoked token exits 3; an unreachable server exits 4", async () => {
    const home = dir("ops-e2e-home-");
    const bad = await run([bin(V1), "whoami"], envFor(home, { OPS_SERVER: t.url, OPS_TOKEN: "opst_" + "0".repeat(49) }));
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain("expired, revoked or unknown");
    const gone = await run([bin(V1), "whoami"], envFor(home, { OPS_SERVER: "http://127.0.0.1:9", OPS_TOKEN: "opst_x" }));
    expect(gone.code).toBe(4);
    expect(gone.stderr).toContain("cannot reach the ops server");
  });
});

describe("the installer (sh, temp HOME, live server)", () => {
  let installedHome: string;

  test("installs the published release, verified, with a config the installed ops uses; the code works once", async () => {
    await publish(V1, bin(V1));
    const code = await installCode();
    const script = await installer(code);
    installedHome = dir("ops-e2e-install-");
    const scriptFile = path.join(dir("ops-e2e-script-"), "install.sh");
    writeFileSync(scriptFile, script);
    const r = await run(["sh", scriptFile], envFor(installedHome));
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("verified SHA-256");
    expect(r.stdout).toContain(`installed ops ${V1} (${hostTarget()})`);
    const installed = path.join(installedHome, ".local", "bin", "ops");
    expect(mode(installed) & 0o111).not.toBe(0);
    expect(readdirSync(path.dirname(installed))).toEqual(["ops"]);
    const cfgFile = path.join(installedHome, ".config", "ops", "config.json");
    expect(mode(cfgFile)).toBe(0o600);
    expect(configOf(installedHome)).toMatchObject({ server: t.url, project });

    const who = await run([installed, "whoami"], envFor(installedHome));
    expect(who.code).toBe(0);
    expect(who.stdout).toContain(dev.email);
    expect(who.stdout).toContain(project);
    const version = await run([installed, "--version"], envFor(installedHome));
    expect(version.stdout.trim()).toBe(`ops ${V1}`);

    await expectStatus(await t.request("GET", "/api/v1/cli/install.sh", { token: code }), 401);
  }, 60_000);

  test("ops tokens mint, list and revoke with the installed binary", async () => {
    const installed = path.join(installedHome, ".local", "bin", "ops");
    const minted = await run([installed, "tokens", "mint", "--name", "ci runner", "--role", "viewer", "--project", project, "--expires-in-days", "7"], envFor(installedHome));
    expect(minted.stderr).toContain("shown once");
    expect(minted.code).toBe(0);
    const secret = minted.stdout.trim();
    expect(secret).toMatch(/^opst_[0-9A-Za-z]{49}$/);
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token: secret }), 200);
    const list = await run([installed, "tokens", "list"], envFor(installedHome));
    expect(list.code).toBe(0);
    const line = list.stdout.split("\n").find((l) => l.includes("ci runner"))!;
    expect(line).toContain("Viewer");
    expect(line).toContain(project);
    const id = line.split(/\s+/)[0];
    const revoked = await run([installed, "tokens", "revoke", id], envFor(installedHome));
    expect(revoked.code).toBe(0);
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token: secret }), 401);
    const over = await run([installed, "tokens", "mint", "--name", "too much", "--role", "maintainer", "--project", project], envFor(installedHome));
    expect(over.code).toBe(1);
    expect(over.stderr).toContain("cannot carry more");
  }, 60_000);

  test("OPS_INSTALL_DIR chooses where the binary goes", async () => {
    const home = dir("ops-e2e-install-");
    const target = path.join(home, "tools", "bin");
    const scriptFile = path.join(dir("ops-e2e-script-"), "install.sh");
    writeFileSync(scriptFile, await installer(await installCode()));
    const r = await run(["sh", scriptFile], envFor(home, { OPS_INSTALL_DIR: target }));
    expect(r.code).toBe(0);
    expect(existsSync(path.join(target, "ops"))).toBe(true);
    expect(existsSync(path.join(home, ".local"))).toBe(false);
  }, 60_000);

  test("ops update replaces itself with the newer release, atomically", async () => {
    await publish(V2, bin(V2));
    const installed = path.join(installedHome, ".local", "bin", "ops");
    const r = await run([installed, "update"], envFor(installedHome));
    expect(r.stderr).toContain(`downloading ops ${V2}: 100%`);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${V1} → ${V2}`);
    expect((await run([installed, "--version"], envFor(installedHome))).stdout.trim()).toBe(`ops ${V2}`);
    expect(readdirSync(path.dirname(installed))).toEqual(["ops"]);
    const again = await run([installed, "update"], envFor(installedHome));
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("nothing to do");
  }, 60_000);

  test("ops update refuses a release whose bytes do not match its digest and keeps the old binary", async () => {
    const release = await publish(V3, bin(V3));
    tamper(release.digest);
    const installed = path.join(installedHome, ".local", "bin", "ops");
    const before = Bun.hash(readFileSync(installed));
    const r = await run([installed, "update"], envFor(installedHome));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("digest mismatch");
    expect(Bun.hash(readFileSync(installed))).toBe(before);
    expect((await run([installed, "--version"], envFor(installedHome))).stdout.trim()).toBe(`ops ${V2}`);
    expect(readdirSync(path.dirname(installed))).toEqual(["ops"]);
  }, 60_000);

  test("a tampered release makes the installer stop and install nothing", async () => {
    // The current release is V3, whose stored bytes the previous test corrupted.
    const home = dir("ops-e2e-install-");
    mkdirSync(path.join(home, ".local", "bin"), { recursive: true });
    const scriptFile = path.join(dir("ops-e2e-script-"), "install.sh");
    writeFileSync(scriptFile, await installer(await installCode()));
    const r = await run(["sh", scriptFile], envFor(home));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("checksum mismatch");
    expect(r.stderr).toContain("nothing was installed");
    expect(readdirSync(path.join(home, ".local", "bin"))).toEqual([]);
    expect(existsSync(path.join(home, ".config", "ops", "config.json"))).toBe(false);
  }, 60_000);
});

describe("a fresh estate served by the built binary", () => {
  test("publishes itself as the CLI release; the install command from the API installs it in sh", async () => {
    const data = dir("ops-e2e-estate-");
    const home = dir("ops-e2e-newcomer-");
    const port = freePort();
    const ingressPort = freePort();
    const server = `http://127.0.0.1:${port}`;
    const created = await run([bin(V1), "admin", "create-project", "--slug", "shop", "--data-dir", data], envFor(home));
    expect(created.code).toBe(0);
    const serving = Bun.spawn([bin(V1), "serve", "--data-dir", data, "--listen", `127.0.0.1:${port}`], {
      env: envFor(home, { OPS_BOOTSTRAP_EMAIL: "owner@ops.test", OPS_BOOTSTRAP_PASSWORD: "a long owner passphrase 42", OPS_INGRESS_LISTEN: `127.0.0.1:${ingressPort}` }),
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const deadline = Date.now() + 30_000;
      while ((await fetch(`${server}/readyz`).catch(() => null))?.status !== 200) {
        if (Date.now() > deadline) throw new Error("the built ops did not become ready");
        await Bun.sleep(100);
      }
      const release = await (await fetch(`${server}/api/v1/cli/release?target=${hostTarget()}`, { headers: { authorization: `Bearer ${await ownerSession(server)}` } })).json();
      expect(release).toMatchObject({ version: V1, target: hostTarget() });
      const codeRes = await fetch(`${server}/api/v1/cli/install-codes`, {
        method: "POST",
        headers: { authorization: `Bearer ${await ownerSession(server)}`, "content-type": "application/json" },
        body: JSON.stringify({ project: "shop" }),
      });
      const { install_command } = (await codeRes.json()) as { install_command: string };
      const r = await run(["sh", "-c", install_command], envFor(home));
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`installed ops ${V1} (${hostTarget()})`);
      const installed = path.join(home, ".local", "bin", "ops");
      const who = await run([installed, "whoami"], envFor(home));
      expect(who.code).toBe(0);
      expect(who.stdout).toContain("owner@ops.test");
      const again = await run(["sh", "-c", install_command], envFor(home));
      expect(again.code).toBe(1);
      expect(again.stderr).toContain("ops installer: error:");

      // ops login finds the API from what a person types (issue 27).
      const noScheme = await loginUntilCode(installed, home, `127.0.0.1:${port}`);
      expect(noScheme).toContain(`${server}/device`);
      const withApi = await loginUntilCode(installed, home, `${server}/api/v1`);
      expect(withApi).toContain("without /api/v1");
      const ingress = await run([installed, "login", "--server", `127.0.0.1:${ingressPort}`], envFor(home));
      expect(ingress.code).toBe(2);
      expect(ingress.stderr).toContain("is the ops ingress, which serves your apps, not the API");
      const tls = await run([installed, "login", "--server", `https://127.0.0.1:${port}`], envFor(home));
      expect(tls.code).toBe(2);
      expect(tls.stderr).toContain(`but ${server} does: use --server ${server}`);
    } finally {
      serving.kill("SIGTERM");
      await serving.exited;
    }
  }, 120_000);
});

async function ownerSession(server: string): Promise<string> {
  const res = await fetch(`${server}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "owner@ops.test", password: "a long owner passphrase 42" }) });
  const body = (await res.json()) as { token: string };
  return body.token;
}

/** Run `ops login --server <input>` until it prints its one-time code, then stop it; its stderr so far. */
async function loginUntilCode(binary: string, home: string, input: string): Promise<string> {
  const login = await startLoginAt(binary, input, envFor(home));
  await login.stop();
  return login.stderrSoFar;
}
