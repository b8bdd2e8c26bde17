/**
 * Fixtures for the builds suites: a test app whose data dir the sandbox user can reach (ops makes
 * its own 0755; a temp dir is 0700), a project with a connected repository on the built-in host
 * and a service building from it, a local working copy pushed with the real `git` CLI, the small
 * Node HTTP app the builds build, and helpers that run the scheduler until the queue is empty.
 */
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { cloneUrl, git, workDir } from "./sources-git-helpers";
import type { BuildResponse } from "../src/domains/builds/model";
import type { FixedClock } from "../src/core/clock";
import { DOMAINS } from "../src/domains";

/** Every domain but deployments: these suites test builds on their own (no deployer installed). */
const BUILDS_ALONE = DOMAINS.filter((m) => m.name !== "deployments");

/**
 * A test app for builds (data dir 0755; small memory limit; short step timeout). Closing removes
 * the data dir unless one was given (a restart on the same state).
 */
export async function buildsApp(env: Record<string, string> = {}, opts: { dataDir?: string; clock?: FixedClock } = {}): Promise<TestApp> {
  const dataDir = opts.dataDir ?? buildsDataDir();
  const t = await createTestApp({ dataDir, clock: opts.clock, modules: BUILDS_ALONE, env: { OPS_BUILD_MEMORY_MB: "192", OPS_BUILD_STEP_TIMEOUT_SECS: "120", ...env } });
  if (opts.dataDir) return t;
  const close = t.close.bind(t);
  t.close = async () => {
    await close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  return t;
}

/** A data dir the sandbox user can walk into (the caller removes it). */
export function buildsDataDir(): string {
  const dir = tempDir("ops-builds-");
  chmodSync(dir, 0o755);
  return dir;
}

/** Run every due scheduler item until none is left (builds chain their steps as items). */
export async function drain(t: TestApp): Promise<void> {
  for (let i = 0; i < 50; i++) if ((await t.core.scheduler.runDue()) === 0) return;
  throw new Error("the scheduler did not settle");
}

/** Poll `check` until it returns a value, or fail after `ms` (real processes are involved). */
export async function until<T>(what: string, check: () => Promise<T | null | undefined> | T | null | undefined, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** The sample app: a Node HTTP server built into dist/ by a build script, checked by a check script. */
export const SAMPLE_APP: Record<string, string> = {
  "ops.toml": `[services.web]
build = ["node build.js"]
check = ["node check.js"]
start = "node dist/server.js"
port = 3000
health = "/healthz"
`,
  "server.js": `const http = require("http");
http.createServer((req, res) => {
  if (req.url === "/healthz") return res.end("ok");
  res.end("hello from " + require("./build-info.json").greeting + "\\n");
}).listen(Number(process.env.PORT || 3000));
`,
  "build.js": `const fs = require("fs");
fs.mkdirSync("dist", { recursive: true });
fs.copyFileSync("server.js", "dist/server.js");
fs.writeFileSync("dist/build-info.json", JSON.stringify({ greeting: process.env.GREETING || "ops" }));
console.log("built dist/ for " + process.env.OPS_SERVICE + " at " + process.env.OPS_COMMIT_SHA.slice(0, 7));
if (process.env.DEPLOY_TOKEN) console.log("deploy token: " + process.env.DEPLOY_TOKEN);
`,
  "check.js": `const assert = require("assert");
assert.strictEqual(typeof require("http").createServer, "function");
console.log("checks passed");
`,
};

/** ops.toml of the sample app with other commands (a failing check, a build over its memory …). */
export function opsToml(keys: { build?: string[]; check?: string[]; start?: string; output?: string; port?: number }): string {
  const lines = ["[services.web]"];
  if (keys.build) lines.push(`build = ${JSON.stringify(keys.build)}`);
  if (keys.check) lines.push(`check = ${JSON.stringify(keys.check)}`);
  lines.push(`start = ${JSON.stringify(keys.start ?? "node dist/server.js")}`);
  if (keys.output) lines.push(`output = ${JSON.stringify(keys.output)}`);
  lines.push(`port = ${keys.port ?? 3000}`);
  return lines.join("\n") + "\n";
}

export interface BuildWorld {
  t: TestApp;
  ctx: ProjectCtx;
  repo: string;
  sourceId: string;
  /** The owner's session: an ops token as git's password. */
  token: string;
  local: LocalRepo;
}

/** Build variables of the sample service's env group `web-env` (a text and a secret one). */
export const ENV_GROUP = { GREETING: "the build", DEPLOY_TOKEN: "tok-9f8e7d6c5b4a3921" };

/**
 * A project whose repository `app` is connected and whose service `web` builds from it (in
 * production, or each environment given); with `envGroup`, the service mounts `web-env`
 * holding ENV_GROUP (GREETING as text, DEPLOY_TOKEN as a secret).
 */
export async function buildWorld(t: TestApp, opts: { environments?: string[]; spec?: Record<string, unknown>; envGroup?: boolean } = {}): Promise<BuildWorld> {
  const ctx = await projectWithOwner(t);
  const source = await expectStatus<{ id: string; repo: string }>(await ctx.req("POST", "/sources", { repo: `${ctx.slug}/app` }), 201);
  for (const env of opts.environments ?? ["production"]) {
    if (opts.envGroup) {
      await expectStatus(await ctx.req("PUT", `/resources/secret-group/web-env?environment=${env}`, { spec: { variables: [{ name: "GREETING", kind: "text" }, { name: "DEPLOY_TOKEN", kind: "secret" }] } }), 201);
      await expectStatus(await ctx.req("PUT", `/resources/secret-group/web-env/variables/GREETING?environment=${env}`, { value: ENV_GROUP.GREETING, kind: "text" }), 200);
      await expectStatus(await ctx.req("PUT", `/resources/secret-group/web-env/variables/DEPLOY_TOKEN?environment=${env}`, { value: ENV_GROUP.DEPLOY_TOKEN, kind: "secret" }), 200);
    }
    const spec = { source: { repo: source.repo }, port: 3000, ...(opts.envGroup ? { env_group: "web-env" } : {}), ...opts.spec };
    await expectStatus(await ctx.req("PUT", `/resources/service/web?environment=${env}`, { spec }), 201);
  }
  const local = await LocalRepo.create(cloneUrl(t.url, source.repo, ctx.owner.session));
  return { t, ctx, repo: source.repo, sourceId: source.id, token: ctx.owner.session, local };
}

/** A working copy pushed with the real git CLI. */
export class LocalRepo {
  private constructor(
    readonly dir: string,
    readonly remote: string,
  ) {}

  static async create(remote: string): Promise<LocalRepo> {
    const dir = workDir("ops-builds-work-");
    await git(dir, "init", "-q", "-b", "main");
    await git(dir, "remote", "add", "origin", remote);
    return new LocalRepo(dir, remote);
  }

  /** Write `files` on `branch` (created from main when new) and commit them; returns the sha. */
  async commit(files: Record<string, string | null>, message: string, branch = "main"): Promise<string> {
    const current = (await git(this.dir, "rev-parse", "--abbrev-ref", "HEAD").catch(() => "main")).trim();
    if (current !== branch) {
      const exists = (await git(this.dir, "branch", "--list", branch)).trim() !== "";
      await git(this.dir, "checkout", "-q", ...(exists ? [branch] : ["-b", branch]));
    }
    for (const [p, text] of Object.entries(files)) {
      const file = path.join(this.dir, p);
      if (text === null) rmSync(file, { force: true });
      else {
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, text);
      }
    }
    await git(this.dir, "add", "-A");
    await git(this.dir, "commit", "-q", "--allow-empty", "-m", message);
    const sha = (await git(this.dir, "rev-parse", "HEAD")).trim();
    if (branch !== "main") await git(this.dir, "checkout", "-q", "main");
    return sha;
  }

  /** `git push origin <branches…>`. */
  async push(...branches: string[]): Promise<void> {
    await git(this.dir, "push", "-q", "origin", ...(branches.length > 0 ? branches : ["main"]));
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** GET a build. */
export async function getBuild(w: BuildWorld, id: number): Promise<BuildResponse> {
  return (await expectStatus<{ build: BuildResponse }>(await w.ctx.req("GET", `/builds/${id}`), 200)).build;
}

/** Every log line of a build, in order. */
export async function logText(w: BuildWorld, id: number): Promise<string> {
  const lines: string[] = [];
  let after = 0;
  for (;;) {
    const page = await expectStatus<{ lines: Array<{ line: string; seq: number }>; next: number }>(await w.ctx.req("GET", `/builds/${id}/log?after=${after}&limit=5000`), 200);
    lines.push(...page.lines.map((l) => l.line));
    if (page.lines.length === 0) return lines.join("\n");
    after = page.next;
  }
}

/** Queue a manual build of `ref` and return it. */
export async function manualBuild(w: BuildWorld, ref: string | null, environment = "production"): Promise<BuildResponse> {
  return expectStatus<BuildResponse>(await w.ctx.req("POST", `/builds?environment=${environment}`, { service: "web", ref }), 201);
}
