/**
 * `git clone` of a repository with 10 000 files and 50 MiB of content from ops's built-in git host
 * (`/git/`, smart HTTP with a token, the compiled binary) against `git daemon` serving the very
 * same bare repository, on the same machine, in the same run. Clones alternate between the two
 * (after one warm-up each) and the medians are compared; the ratio is daemon time / ops time
 * (1.0 = as fast as git's own server; the goal is at least 0.8). A second figure times bare clones
 * (the transfer alone, no checkout).
 *
 * Standalone: `bun bench/git-clone.bench.ts [--runs N]`; or `npm run bench -- git-clone`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { runAloneTimes, type BenchContext } from "./lib";
import { loadConfig } from "../src/core/config";
import { createCore, closeCore } from "../src/app";
import { tx } from "../src/core/db/client";
import { SYSTEM_ACTOR } from "../src/core/audit";
import { createProject, insertOperator, upsertMembership, fixedRole, insertToken } from "../src/domains/access/service";
import { codeHostFor } from "../src/adapters/codehost";

export const name = "git-clone";
export const description = "git clone of 10 000 files / 50 MiB: ops /git/ (smart HTTP) vs git daemon";

const FILES = 10_000;
const TOTAL_BYTES = 50 * 1024 * 1024;
const REPO = "bench/big";

function gitEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: "bench",
    GIT_AUTHOR_EMAIL: "bench@ops.invalid",
    GIT_COMMITTER_NAME: "bench",
    GIT_COMMITTER_EMAIL: "bench@ops.invalid",
  };
}

async function git(cwd: string, home: string, ...args: string[]): Promise<void> {
  const proc = Bun.spawn(["git", ...args], { cwd, env: gitEnv(home), stdout: "ignore", stderr: "pipe" });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`git ${args.join(" ")} exited ${code}: ${await new Response(proc.stderr).text()}`);
}

/** A data dir with project `bench`, a machine token, and `bench/big` holding the files in one commit. */
async function seed(home: string): Promise<{ dataDir: string; token: string; bare: string }> {
  const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "ops-bench-git-")), "data");
  const core = createCore(loadConfig({ OPS_DATA_DIR: dataDir, OPS_LOG_LEVEL: "error" }), { logSink: () => {} });
  let token: string;
  try {
    const project = createProject(core, { slug: "bench", name: "bench" }, SYSTEM_ACTOR);
    token = tx(core.db, (t) => {
      const op = insertOperator(core, t, { kind: "machine", handle: "bench-ci", displayName: "bench" }, null);
      const role = fixedRole(core, "developer");
      upsertMembership(core, t, op.id, project.id, role.id);
      return insertToken(core, t, { operatorId: op.id, name: "bench", kind: "api", role, projectId: project.id, expiresAt: null }).secret;
    });
    const host = codeHostFor(core);
    const inst = (await host.installationFor("bench", "bench")) as number;
    if (!(await host.ensureRepo({ repo: REPO, installationId: inst }))) throw new Error("the git host did not create the repository");
  } finally {
    await closeCore(core);
  }
  // The content: incompressible bytes spread over 10 000 files in 100 directories.
  const work = mkdtempSync(path.join(tmpdir(), "ops-bench-git-work-"));
  const per = Math.floor(TOTAL_BYTES / FILES);
  for (let d = 0; d < 100; d++) mkdirSync(path.join(work, `dir${d}`));
  for (let i = 0; i < FILES; i++) writeFileSync(path.join(work, `dir${i % 100}`, `file${i}.bin`), crypto.getRandomValues(new Uint8Array(per)));
  await git(work, home, "init", "-q", "-b", "main");
  await git(work, home, "add", ".");
  await git(work, home, "commit", "-q", "-m", "10 000 files");
  const bare = path.join(dataDir, "git", `${REPO}.git`);
  await git(work, home, "push", "-q", bare, "main");
  rmSync(work, { recursive: true, force: true });
  return { dataDir, token: token!, bare };
}

/** One `git clone` into a fresh directory; wall-clock ms. */
async function clone(url: string, home: string, bare: boolean): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-clone-"));
  try {
    const t0 = performance.now();
    await git(dir, home, "clone", "-q", ...(bare ? ["--bare"] : []), url, "c");
    return performance.now() - t0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = s.port as number;
  s.stop(true);
  return port;
}

/** `git daemon` exporting the data dir's git/ folder; ready when ls-remote answers. */
async function startDaemon(root: string, home: string): Promise<{ url: string; stop(): Promise<void> }> {
  const port = freePort();
  const child = Bun.spawn(["git", "daemon", `--base-path=${root}`, "--export-all", "--reuseaddr", "--listen=127.0.0.1", `--port=${port}`, root], { env: gitEnv(home), stdout: "ignore", stderr: "ignore" });
  const url = `git://127.0.0.1:${port}/${REPO}.git`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const probe = Bun.spawn(["git", "ls-remote", url], { env: gitEnv(home), stdout: "ignore", stderr: "ignore" });
    if ((await probe.exited) === 0) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("git daemon did not start");
    await Bun.sleep(100);
  }
  return {
    url,
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function alternate(runs: number, a: () => Promise<number>, b: () => Promise<number>): Promise<{ a: number[]; b: number[] }> {
  await a();
  await b();
  const ra: number[] = [];
  const rb: number[] = [];
  for (let i = 0; i < runs; i++) {
    if (i % 2 === 0) {
      ra.push(await a());
      rb.push(await b());
    } else {
      rb.push(await b());
      ra.push(await a());
    }
  }
  return { a: ra, b: rb };
}

export async function run(ctx: BenchContext, runs = 5): Promise<string> {
  const home = mkdtempSync(path.join(tmpdir(), "ops-bench-git-home-"));
  const seeded = await seed(home);
  const ops = await ctx.startServer([ctx.binary, "serve", "--data-dir", seeded.dataDir, "--listen", "127.0.0.1:{port}"], "/readyz");
  const daemon = await startDaemon(path.join(seeded.dataDir, "git"), home);
  try {
    const probe = await fetch(`${ops.url}/git/${REPO}.git/info/refs?service=git-upload-pack`);
    await probe.arrayBuffer();
    if (probe.status !== 401) throw new Error(`dist/ops does not serve /git/ (HTTP ${probe.status}): rebuild it with npm run build`);
    const u = new URL(`${ops.url}/git/${REPO}.git`);
    u.username = "bench";
    u.password = seeded.token;
    const opsUrl = u.toString();

    const full = await alternate(runs, () => clone(opsUrl, home, false), () => clone(daemon.url, home, false));
    const bare = await alternate(runs, () => clone(opsUrl, home, true), () => clone(daemon.url, home, true));
    const o = median(full.a);
    const d = median(full.b);
    const ob = median(bare.a);
    const db = median(bare.b);
    return (
      `git-clone: ops ${o.toFixed(0)} ms, git daemon ${d.toFixed(0)} ms, ratio daemon/ops ${(d / o).toFixed(2)} ` +
      `(median of ${runs} clones with checkout of ${FILES} files / ${TOTAL_BYTES / 1024 / 1024} MiB; ops runs ${full.a.map((x) => x.toFixed(0)).join(", ")}; daemon runs ${full.b.map((x) => x.toFixed(0)).join(", ")}); ` +
      `bare clones: ops ${ob.toFixed(0)} ms, git daemon ${db.toFixed(0)} ms, ratio ${(db / ob).toFixed(2)}`
    );
  } finally {
    await daemon.stop();
    await ops.stop();
    rmSync(path.dirname(seeded.dataDir), { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  }
}

if (import.meta.main) await runAloneTimes(run);
