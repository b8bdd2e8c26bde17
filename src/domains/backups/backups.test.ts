/**
 * Backups of a live server: a writer loop on the API keeps creating resources while
 * `ops backup create` (a separate process, as on a VM) snapshots the data dir; the restore holds
 * every write acknowledged before the backup started, and exactly a prefix of the writer's
 * sequence (a consistent snapshot). A second backup stores only new objects; `verify` catches a
 * flipped byte; `restore` refuses a non-empty dir; encrypted backups hide their contents and
 * refuse a wrong passphrase; an S3 place (s3rver) works the same.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, freePort, tempDir, type TestApp } from "../../../test/harness";
import { projectWithOwner, type ProjectCtx } from "../../../test/resources-helpers";
import { runCli } from "../../main";
import { plainGitEnv } from "./snapshot";

const ROOT = path.resolve(import.meta.dir, "../../..");
const dirs: string[] = [];
const scratch = (p: string) => {
  const d = tempDir(p);
  dirs.push(d);
  return d;
};

let t: TestApp;
let p: ProjectCtx;

async function ops(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runCli(args, { stdout: (s) => (out += s), stderr: (s) => (err += s), env: { ...env }, cwd: ROOT });
  return { code, out, err };
}

/** `ops …` as its own process, the way an operator runs it beside the server. */
async function opsProcess(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn([process.execPath, "src/main.ts", ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

function git(args: string[], cwd: string) {
  const r = Bun.spawnSync(["git", ...args], { cwd, env: { ...plainGitEnv(cwd), GIT_AUTHOR_NAME: "a", GIT_AUTHOR_EMAIL: "a@ops.test", GIT_COMMITTER_NAME: "a", GIT_COMMITTER_EMAIL: "a@ops.test" }, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.toString().trim();
}

/** A bare repository under the data dir's git/ with two commits and a tag pushed to it. */
function makeRepo(dataDir: string, slug: string): string {
  const bare = path.join(dataDir, "git", slug, "app.git");
  mkdirSync(path.dirname(bare), { recursive: true });
  git(["init", "--bare", "--quiet", "--initial-branch=main", bare], dataDir);
  const work = scratch("ops-backup-work-");
  git(["init", "--quiet", "--initial-branch=main", work], work);
  writeFileSync(path.join(work, "app.js"), "console.log('one')\n");
  git(["add", "."], work);
  git(["commit", "--quiet", "-m", "one"], work);
  writeFileSync(path.join(work, "app.js"), "console.log('two')\n");
  git(["commit", "--quiet", "-am", "two"], work);
  git(["tag", "-a", "v1.0.0", "-m", "release"], work);
  git(["push", "--quiet", bare, "main", "v1.0.0"], work);
  return git(["rev-parse", "main"], work);
}

function bucketNames(dataDir: string): string[] {
  const db = new Database(path.join(dataDir, "ops.db"), { readonly: true });
  try {
    return (db.query("SELECT name FROM resources WHERE type = 'bucket' ORDER BY name").all() as Array<{ name: string }>).map((r) => r.name);
  } finally {
    db.close(false);
  }
}

function objectsAt(place: string): string[] {
  const root = path.join(place, "objects");
  return existsSync(root) ? readdirSync(root).flatMap((d) => readdirSync(path.join(root, d))) : [];
}

let head = "";
let marker = "";

beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
  head = makeRepo(t.dataDir, p.slug);
  marker = `blob-marker-${crypto.randomUUID()}`;
  await t.core.blobs.put(marker.repeat(100));
});

afterAll(async () => {
  await t.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("ops backup create of a live server", () => {
  test("restores every write acknowledged before the backup, as a consistent prefix of the writer's sequence", async () => {
    const place = scratch("ops-backup-place-");
    const acked: Array<{ name: string; at: number }> = [];
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop && i < 5000; i++) {
        const name = `w${String(i).padStart(5, "0")}`;
        const res = await p.req("POST", "/resources/bucket", { name, spec: {} });
        if (res.status !== 201) throw new Error(`write ${name}: ${res.status} ${await res.text()}`);
        acked.push({ name, at: performance.now() });
        if (i % 10 === 0) await expectStatus(await p.req("PUT", `/secrets/${name}/TOKEN`, { value: `secret-${i}` }), 204);
      }
    })();
    while (acked.length < 20) await Bun.sleep(10);
    const startedAt = performance.now();
    const ackedBefore = acked.filter((a) => a.at <= startedAt).map((a) => a.name);
    const r = await opsProcess(["backup", "create", "--to", place, "--data-dir", t.dataDir]);
    const afterBackup = acked.length;
    stop = true;
    await writer;
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^backup \d{8}T\d{9}Z-[0-9a-z]{6} at /);
    expect(afterBackup).toBeGreaterThan(ackedBefore.length);

    const restored = path.join(scratch("ops-restore-"), "data");
    const rr = await ops(["restore", place, "--data-dir", restored]);
    expect(rr.err).toBe("");
    expect(rr.code).toBe(0);
    const names = bucketNames(restored);
    for (const n of ackedBefore) expect(names).toContain(n);
    // Sequential writes: a consistent snapshot holds w00000 … wK with no gap.
    expect(names).toEqual(acked.slice(0, names.length).map((a) => a.name));
    expect(existsSync(path.join(restored, "keys", "secrets.key"))).toBe(true);
    expect(git(["--git-dir", path.join(restored, "git", p.slug, "app.git"), "rev-parse", "main"], restored)).toBe(head);
    expect(git(["--git-dir", path.join(restored, "git", p.slug, "app.git"), "cat-file", "-t", "v1.0.0"], restored)).toBe("tag");

    // A server on the restored dir answers with the same sessions, resources and secrets.
    const again = await createTestApp({ dataDir: restored });
    try {
      const first = await expectStatus(await again.request("GET", `${p.base}/resources/bucket/${ackedBefore[0]}`, { token: p.owner.session }), 200);
      expect(first.name).toBe(ackedBefore[0]);
      expect(again.core.secrets.sealed).toBe(false);
    } finally {
      await again.close();
    }

    const v = await ops(["backup", "verify", place]);
    expect(v.err).toBe("");
    expect(v.out).toMatch(/is good: \d+ files .* ops\.db, telemetry\.db pass integrity_check; 1 repositories pass git fsck; (\d+) of \1 secrets open/);
  }, 120_000);
});

describe("incremental backups, verify and restore", () => {
  let at = "";
  test("a second backup to the same place stores only the objects the first did not have", async () => {
    at = scratch("ops-backup-inc-");
    const one = await ops(["backup", "create", "--to", at, "--data-dir", t.dataDir]);
    expect(one.code).toBe(0);
    const before = new Set(objectsAt(at));
    const m1 = JSON.parse(readFileSync(path.join(at, "manifests", readdirSync(path.join(at, "manifests"))[0]), "utf8")).manifest;
    const added = await t.core.blobs.put(`a new blob ${crypto.randomUUID()}`);
    const two = await ops(["backup", "create", "--to", at, "--data-dir", t.dataDir]);
    expect(two.code).toBe(0);
    const manifests = readdirSync(path.join(at, "manifests")).sort();
    expect(manifests).toHaveLength(2);
    const m2 = JSON.parse(readFileSync(path.join(at, "manifests", manifests[1]), "utf8")).manifest;
    const after = objectsAt(at);
    const fresh = after.filter((o) => !before.has(o));
    const shasBefore = new Set(m1.files.map((f: { sha256: string }) => f.sha256));
    const expected = [...new Set(m2.files.map((f: { sha256: string }) => f.sha256).filter((s: string) => !shasBefore.has(s)))];
    expect(fresh.sort()).toEqual((expected as string[]).sort());
    expect(fresh).toContain(added.digest);
    expect(m2.stats.new_objects).toBe(fresh.length);
    expect(m2.stats.new_objects).toBeLessThan(m2.stats.files / 2);
  }, 60_000);

  test("verify catches a flipped byte and names the file", async () => {
    const copy = scratch("ops-backup-flip-");
    Bun.spawnSync(["cp", "-a", `${at}/.`, copy]);
    const m = JSON.parse(readFileSync(path.join(copy, "manifests", readdirSync(path.join(copy, "manifests")).sort()[1]), "utf8")).manifest;
    const victim = m.files.find((f: { path: string }) => f.path.startsWith("git/") && f.path.includes("/objects/"));
    const file = path.join(copy, "objects", victim.object.slice(0, 2), victim.object);
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.length / 2)] ^= 0x01;
    writeFileSync(file, bytes);
    const v = await ops(["backup", "verify", copy]);
    expect(v.code).toBe(1);
    expect(v.err).toContain(victim.path);
    expect(v.err).toContain("SHA-256");
    const good = await ops(["backup", "verify", at]);
    expect(good.code).toBe(0);
  }, 60_000);

  test("restore refuses a non-empty dir and leaves it as it was", async () => {
    const dir = scratch("ops-restore-busy-");
    writeFileSync(path.join(dir, "precious.txt"), "mine");
    const r = await ops(["restore", at, "--data-dir", dir]);
    expect(r.code).toBe(1);
    expect(r.err).toContain("is not empty");
    expect(readdirSync(dir)).toEqual(["precious.txt"]);
  });
});

describe("encrypted backups", () => {
  test("--passphrase-file: nothing readable at the place, a wrong passphrase is refused, the right one restores", async () => {
    const at = scratch("ops-backup-enc-");
    const keys = scratch("ops-pass-");
    writeFileSync(path.join(keys, "pass"), "correct horse battery staple\n");
    writeFileSync(path.join(keys, "wrong"), "incorrect horse battery staple\n");
    const one = await ops(["backup", "create", "--to", at, "--data-dir", t.dataDir, "--passphrase-file", path.join(keys, "pass")]);
    expect(one.err).toBe("");
    const two = await ops(["backup", "create", "--to", at, "--data-dir", t.dataDir, "--passphrase-file", path.join(keys, "pass")]);
    expect(two.out).toMatch(/stored \d+ new objects/);
    const manifests = readdirSync(path.join(at, "manifests"));
    expect(manifests).toHaveLength(2);
    const all = Bun.spawnSync(["grep", "-rl", marker, at]);
    expect(all.stdout.toString()).toBe("");
    const stored = readFileSync(path.join(at, "manifests", manifests[0]), "utf8");
    expect(stored).not.toContain("ops.db");
    const bad = await ops(["backup", "verify", at, "--passphrase-file", path.join(keys, "wrong")]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("passphrase does not open");
    const none = await ops(["backup", "verify", at]);
    expect(none.err).toContain("encrypted");
    const wrongWrite = await ops(["backup", "create", "--to", at, "--data-dir", t.dataDir, "--passphrase-file", path.join(keys, "wrong")]);
    expect(wrongWrite.code).toBe(1);
    const ok = await ops(["backup", "verify", at, "--passphrase-file", path.join(keys, "pass")]);
    expect(ok.err).toBe("");
    expect(ok.code).toBe(0);
    // A flipped byte in an encrypted object fails its tag.
    const obj = objectsAt(at)[0];
    const file = path.join(at, "objects", obj.slice(0, 2), obj);
    const bytes = readFileSync(file);
    bytes[bytes.length - 20] ^= 0x80;
    writeFileSync(file, bytes);
    const flipped = await ops(["backup", "verify", at, "--passphrase-file", path.join(keys, "pass")]);
    expect(flipped.code).toBe(1);
  }, 60_000);
});

describe("an S3 backup place", () => {
  test("backup create, verify and restore against s3rver", async () => {
    const { default: S3rver } = await import("s3rver");
    const dir = scratch("ops-s3-");
    const port = freePort();
    const server = new S3rver({ port, address: "127.0.0.1", silent: true, directory: dir, configureBuckets: [{ name: "backups", configs: [] }] });
    await server.run();
    const env = { OPS_BACKUP_S3_ENDPOINT: `http://127.0.0.1:${port}`, OPS_BACKUP_S3_ACCESS_KEY_ID: "S3RVER", OPS_BACKUP_S3_SECRET_ACCESS_KEY: "S3RVER" };
    try {
      const one = await ops(["backup", "create", "--to", "s3://backups/vm-1", "--data-dir", t.dataDir], env);
      expect(one.err).toBe("");
      const two = await ops(["backup", "create", "--to", "s3://backups/vm-1", "--data-dir", t.dataDir], env);
      expect(two.err).toBe("");
      const m = /manifest: (s3:\/\/\S+)/.exec(two.out)![1];
      expect(m).toMatch(/^s3:\/\/backups\/vm-1\/manifests\/.+\.json$/);
      expect(Number(/stored (\d+) new objects/.exec(two.out)![1])).toBeLessThan(Number(/(\d+) files/.exec(two.out)![1]) / 2);
      const v = await ops(["backup", "verify", m], env);
      expect(v.err).toBe("");
      const restored = path.join(scratch("ops-s3-restore-"), "data");
      const r = await ops(["restore", "s3://backups/vm-1", "--data-dir", restored], env);
      expect(r.err).toBe("");
      expect(bucketNames(restored).length).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  }, 60_000);
});
