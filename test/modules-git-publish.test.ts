/**
 * The publish flow from a real `git push`, through the build state machine: a repository with two
 * modules (beta requiring alpha) pushed with the git CLI to the built-in host with `main`, a
 * `v1.0.0` tag and a tag that is no release, beside a repository without `modules/`. Only the
 * release tag queues a build, of kind `publish`; the scheduler runs it (`clone`, `plan`,
 * `crates`, `layers`, `locales`) to `published`. Then real cargo and npm consume the packages, a
 * locale export shows the strings, `GET /modules` lists both with their notes, and an image build
 * of another project's default branch whose package-lock.json npm resolved from ops records that
 * project as a consumer (a feature branch's build does not). A second tag whose `layers` step
 * fails is retried: layers published, crates not again. A tag adding an unclaimed module fails
 * at `plan`. Ops stopping during `crates` runs it again at start-up; during `layers` it fails the
 * build `internal`, and the retry resumes.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { eq } from "drizzle-orm";
import { rmSync } from "node:fs";
import { expectStatus, freePort, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken, type Person } from "./fixtures";
import { buildsApp, buildsDataDir, drain, opsToml, SAMPLE_APP, LocalRepo } from "./builds-fixtures";
import { writeTree } from "./support/registries";
import { PUSH, type PushEvent } from "../src/domains/sources/service";
import { getBuildRow, type BuildResponse } from "../src/domains/builds/service";
import { buildsModule } from "../src/domains/builds";
import { schedulerItems } from "../src/core/tables";
import { gitRecords } from "../src/adapters/codehost/builtin/tables";
import { modulesRepo, claimModuleNames } from "./support/modules";
import { consumers, flakyServer, fetchingPrepack } from "./modules-clients";
import { git, cloneUrl, workDir } from "./sources-git-helpers";

const SLUG = "acme";
const PUBLISH_STEPS = ["clone", "plan", "crates", "layers", "locales"];
const FAILED_AT_LAYERS = [
  ["clone", true],
  ["plan", true],
  ["crates", true],
  ["layers", false],
];
const dataDir = buildsDataDir();
/** The asset host the prepack scripts download from: a host port sandboxes may reach (OPS_SANDBOX_HOST_PORTS). */
const ASSET_PORT = freePort();
let t: TestApp;
let dana: Person;
let pushToken: string;
let readerToken: string;
let clone: string;
let npmLock = "";
const pushes: PushEvent[] = [];

const api = (method: string, rest: string, body?: unknown, token = dana.session) => t.request(method, `/api/v1/projects/${SLUG}${rest}`, { token, body });
const audits = (target: string) => t.core.sqlite.query<{ n: number }, [string]>("SELECT count(*) AS n FROM audit_log WHERE target = ? AND outcome = 'allowed'").get(target)!.n;
const detail = async (id: number): Promise<BuildResponse> => (await expectStatus<{ build: BuildResponse }>(await api("GET", `/builds/${id}`), 200)).build;
const publishBuilds = async (): Promise<BuildResponse[]> => (await expectStatus<BuildResponse[]>(await api("GET", "/builds"), 200)).filter((b) => b.kind === "publish");
const stepsOf = (b: BuildResponse) => b.step_timings.map((s) => [s.step, s.ok ?? null]);
const notesOf = (b: BuildResponse) => Object.fromEntries(b.step_timings.map((s) => [s.step, s.note]));

async function logOf(id: number): Promise<string> {
  const page = await expectStatus<{ lines: Array<{ step: string; line: string; level: string }> }>(await api("GET", `/builds/${id}/log?limit=5000`), 200);
  return page.lines.map((l) => `${l.step} ${l.level}: ${l.line}`).join("\n");
}

/** Push `refs` of the library's working copy; returns the publish build each pushed tag queued. */
async function pushLib(...refs: string[]): Promise<BuildResponse[]> {
  const before = new Set((await publishBuilds()).map((b) => b.id));
  await git(clone, "push", "-q", cloneUrl(t.url, `${SLUG}/lib`, pushToken), ...refs);
  return (await publishBuilds()).filter((b) => !before.has(b.id)).reverse();
}

beforeAll(async () => {
  t = await buildsApp({ OPS_BUILD_STEP_TIMEOUT_SECS: "300", OPS_SANDBOX_HOST_PORTS: String(ASSET_PORT) }, { dataDir });
  makeProject(t, SLUG);
  makeProject(t, "shop");
  dana = await makePerson(t, [{ role: "developer", project: SLUG }]);
  pushToken = mintToken(t, dana.principal, { role: "developer", project: SLUG });
  readerToken = mintToken(t, dana.principal, { role: "viewer", project: SLUG });
  await claimModuleNames(t, SLUG, dana);
  await expectStatus(await api("POST", "/sources", { repo: `${SLUG}/lib` }), 201);
  await expectStatus(await api("POST", "/sources", { repo: `${SLUG}/plain` }), 201);
  t.core.events.on(PUSH, (ev) => void pushes.push(ev));
}, 60_000);

afterAll(async () => {
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("a tag pushed with git publishes the modules through a publish build", () => {
  test("git push of main, v1.0.0 and a tag that is no release, and a tag of a repository without modules/: one publish build queued", async () => {
    clone = workDir();
    await git(clone, "init", "-q", "-b", "main");
    writeTree(clone, modulesRepo());
    await git(clone, "add", ".");
    await git(clone, "commit", "-q", "-m", "Two modules");
    await git(clone, "tag", "-a", "v1.0.0", "-m", "Release 1.0.0");
    await git(clone, "tag", "not-a-release");
    const queued = await pushLib("main", "v1.0.0", "not-a-release");
    const plain = workDir();
    await git(plain, "init", "-q", "-b", "main");
    writeTree(plain, { "README.md": "no modules here\n" });
    await git(plain, "add", ".");
    await git(plain, "commit", "-q", "-m", "Plain");
    await git(plain, "tag", "v1.0.0");
    await git(plain, "push", "-q", cloneUrl(t.url, `${SLUG}/plain`, pushToken), "main", "v1.0.0");

    expect(pushes).toHaveLength(5);
    const head = (await git(clone, "rev-parse", "HEAD")).trim();
    // An annotated tag: the push names the tag object; the build is of the commit it points to.
    expect(pushes.find((p) => p.ref === "refs/tags/v1.0.0" && p.repo === `${SLUG}/lib`)!.after).not.toBe(head);
    const all = await expectStatus<BuildResponse[]>(await api("GET", "/builds"), 200);
    expect(all).toHaveLength(1);
    expect(queued).toHaveLength(1);
    // Dispatched at once (a free slot); the scheduler runs its steps.
    expect(queued[0]).toMatchObject({ kind: "publish", status: "cloning", trigger: "push", requested_by: "host", branch: "v1.0.0", commit_sha: head, repo: `${SLUG}/lib`, service: "", environment: "", message: "Two modules" });
    // It belongs to no environment or service: every environment's list shows it, a service's does not.
    expect(await expectStatus<BuildResponse[]>(await api("GET", "/builds?service=web"), 200)).toEqual([]);
  }, 60_000);

  test("the scheduler runs it: clone, plan, crates, layers, locales, then published", async () => {
    const [queued] = await publishBuilds();
    await drain(t);
    const b = await detail(queued!.id);
    expect(b.status).toBe("published");
    expect(b.failure_kind ?? null).toBeNull();
    expect(stepsOf(b)).toEqual(PUBLISH_STEPS.map((s) => [s, true]));
    expect(notesOf(b)).toMatchObject({
      plan: "2 module(s) at 1.0.0: alpha, beta",
      crates: "2 crate(s) published",
      layers: "2 layer(s) published",
      locales: "2 locale file(s) registered; 2 module(s) recorded",
    });
    const log = await logOf(b.id);
    expect(log).toContain(`queue info: queued by a push of the tag v1.0.0 by ${dana.email}`);
    expect(log).toContain("plan info: beta: crate acme-beta, layer @ops/beta; requires alpha");
    // The plan is kept on the build row.
    const plan = JSON.parse(getBuildRow(t.core, SLUG, b.id)!.plan!) as { version: string; commit: string; modules: Array<{ name: string }> };
    expect([plan.version, plan.commit, plan.modules.map((m) => m.name)]).toEqual(["1.0.0", b.commit_sha, ["alpha", "beta"]]);
    const pub = t.core.sqlite.query<{ actor: string; context: string }, []>("SELECT actor, context FROM audit_log WHERE target = 'package:npm:@ops/beta@1.0.0'").get()!;
    expect([pub.actor, JSON.parse(pub.context).pusher, JSON.parse(pub.context).build]).toEqual(["system", dana.email, b.id]);
    // A published build is final: no cancel. The code host's check run (`ops/publish`) concluded success.
    await expectStatus(await api("POST", `/builds/${b.id}/cancel`), 409);
    const check = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, b.host_check_run_id!)).get()!;
    expect(check).toMatchObject({ kind: "check_run", repo: `${SLUG}/lib`, sha: b.commit_sha, name: "ops/publish", state: "completed", conclusion: "success" });
  }, 300_000);

  test("real cargo and npm consume the packages; a locale export shows the strings; GET /modules lists both with notes", async () => {
    const clients = consumers(t, readerToken);
    const app = await clients.cargoBuild(`acme-beta = { version = "1.0.0", registry = "ops" }\n`, 'fn main() { println!("{}", acme_beta::value()); }\n');
    expect(app.build.code).toBe(0);
    expect(app.stdout.trim()).toBe("42");
    const npmApp = await clients.npmInstall(["@ops/beta@1.0.0"]);
    expect(npmApp.install.code).toBe(0);
    expect(Bun.spawnSync(["node", "-e", "console.log(require('@ops/beta').value())"], { cwd: npmApp.dir }).stdout.toString().trim()).toBe("42");
    npmLock = npmApp.lock;

    const shopDev = await makePerson(t, [{ role: "developer", project: "shop" }]);
    const tr = (rest: string) => `/api/v1/projects/shop/translations${rest}`;
    await expectStatus(await t.request("POST", tr("/bundles"), { token: shopDev.session, body: { name: "shop" } }), 201);
    const kit = (await expectStatus(await t.request("GET", "/api/v1/tms/bundles", { token: shopDev.session }), 200)).find((b: { name: string }) => b.name === "@ops/alpha");
    await expectStatus(await t.request("POST", tr("/attachments"), { token: shopDev.session, body: { bundle: kit.id, version: "1.0.0" } }), 200);
    expect((await expectStatus(await t.request("GET", tr("/export/en"), { token: shopDev.session }), 200)).alpha).toEqual({ greeting: "Hello from alpha", farewell: "Bye, {name}" });
    expect((await expectStatus(await t.request("GET", tr("/export/fr"), { token: shopDev.session }), 200)).alpha.greeting).toBe("Bonjour d'alpha");

    const list = await expectStatus(await api("GET", "/modules", undefined, readerToken), 200);
    expect(list.version).toBe("1.0.0");
    expect(list.modules.map((m: { name: string; crate_name: string; layer_name: string; requires: string[] }) => [m.name, m.crate_name, m.layer_name, m.requires])).toEqual([
      ["alpha", "acme-alpha", "@ops/alpha", []],
      ["beta", "acme-beta", "@ops/beta", ["alpha"]],
    ]);
    for (const [name, versions] of [
      ["alpha", ["1.0.0", "0.9.0"]],
      ["beta", ["1.0.0"]],
    ] as const) {
      const notes = await expectStatus(await api("GET", `/modules/${name}/notes`, undefined, readerToken), 200);
      expect(notes.map((n: { version: string }) => n.version)).toEqual(versions);
    }
  }, 300_000);

  test("an image build of shop's default branch records what its package-lock.json resolved from ops; a feature branch's build does not", async () => {
    expect(npmLock).toContain(`"resolved": "${t.url}/npm/@ops%2Fbeta/-/beta-1.0.0.tgz"`);
    const owner = await makePerson(t, [{ role: "owner", project: "shop" }]);
    const shop = (method: string, rest: string, body?: unknown) => t.request(method, `/api/v1/projects/shop${rest}`, { token: owner.session, body });
    await expectStatus(await shop("POST", "/sources", { repo: "shop/app" }), 201);
    await expectStatus(await shop("PUT", "/resources/service/web", { spec: { source: { repo: "shop/app" }, port: 3000 } }), 201);
    const local = await LocalRepo.create(cloneUrl(t.url, "shop/app", owner.session));
    try {
      await local.commit({ ...SAMPLE_APP, "ops.toml": opsToml({ build: ["node build.js"] }), "package-lock.json": npmLock }, "Use the beta layer");
      await local.push("main");
      await drain(t);
      const consumersOf = async () => {
        const list = await expectStatus(await api("GET", "/modules", undefined, readerToken), 200);
        return Object.fromEntries(list.modules.map((m: { name: string; consumers: unknown[] }) => [m.name, m.consumers]));
      };
      const [main] = await expectStatus<BuildResponse[]>(await shop("GET", "/builds"), 200);
      expect([main!.kind, main!.branch, main!.status]).toEqual(["image", "main", "healthy"]);
      const recorded = {
        alpha: [{ package: "@ops/alpha", project: "shop", version: "1.0.0" }],
        beta: [{ package: "@ops/beta", project: "shop", version: "1.0.0" }],
      };
      expect(await consumersOf()).toEqual(recorded);

      // A build of another branch (here without a lockfile) leaves the default branch's record alone.
      await local.commit({ "package-lock.json": null }, "Drop the lockfile", "feature");
      await local.push("feature");
      const feature = await expectStatus<BuildResponse>(await shop("POST", "/builds", { service: "web", ref: "feature" }), 201);
      await drain(t);
      expect((await expectStatus<{ build: BuildResponse }>(await shop("GET", `/builds/${feature.id}`), 200)).build.status).toBe("healthy");
      expect(await consumersOf()).toEqual(recorded);
    } finally {
      local.remove();
    }
  }, 300_000);

  test("v1.1.0: the layers step fails (publish); the retry publishes the layers without republishing the crates", async () => {
    const flaky = flakyServer(1, ASSET_PORT);
    try {
      writeTree(clone, modulesRepo({ betaPrepack: fetchingPrepack(flaky.url), extra: { "modules/beta/CHANGELOG.md": "## 1.1.0\n\nBeta downloads an asset.\n\n## 1.0.0\n\nBeta builds on alpha.\n" } }));
      await git(clone, "commit", "-q", "-am", "Beta downloads an asset when packed");
      await git(clone, "tag", "v1.1.0");
      const [queued] = await pushLib("main", "v1.1.0");
      await drain(t);
      const first = await detail(queued!.id);
      expect(first).toMatchObject({ status: "failed", failure_kind: "publish", branch: "v1.1.0" });
      expect(first.error).toContain("npm pack of @ops/beta");
      expect(stepsOf(first)).toEqual(FAILED_AT_LAYERS);
      expect(notesOf(first).crates).toBe("2 crate(s) published");
      expect(await logOf(first.id)).toContain("asset download failed: 503");
      expect((await expectStatus(await api("GET", "/modules", undefined, readerToken), 200)).version).toBe("1.0.0");

      const retry = await expectStatus<BuildResponse>(await api("POST", `/builds/${first.id}/retry`), 201);
      expect(retry).toMatchObject({ kind: "publish", trigger: "retry", branch: "v1.1.0", commit_sha: first.commit_sha, requested_by: dana.email });
      await drain(t);
      const done = await detail(retry.id);
      expect(done.status).toBe("published");
      expect(stepsOf(done)).toEqual(PUBLISH_STEPS.map((s) => [s, true]));
      expect(notesOf(done)).toMatchObject({
        plan: "2 module(s) at 1.1.0: alpha, beta",
        crates: "0 crate(s) published; 2 already published by this tag (acme-alpha@1.1.0, acme-beta@1.1.0)",
        layers: "1 layer(s) published; 1 already published by this tag (@ops/alpha@1.1.0)",
        locales: "2 locale file(s) registered; 2 module(s) recorded",
      });
      expect(await logOf(done.id)).not.toContain("Packaging");
      expect(audits("package:cargo:acme-alpha@1.1.0")).toBe(1);
      expect(audits("package:cargo:acme-beta@1.1.0")).toBe(1);
      expect(audits("package:npm:@ops/beta@1.1.0")).toBe(1);
      expect(audits(`build:${retry.id}`)).toBe(1);
      expect((await expectStatus(await api("GET", "/modules", undefined, readerToken), 200)).version).toBe("1.1.0");
      expect((await expectStatus(await api("GET", "/modules/beta/notes", undefined, readerToken), 200))[0]).toEqual({ version: "1.1.0", notes: "Beta downloads an asset." });
    } finally {
      flaky.stop();
    }
  }, 400_000);

  test("v1.2.0 adds a module whose names the project has not claimed: the plan is refused, the build fails publish", async () => {
    writeTree(clone, { "modules/gamma/package.json": JSON.stringify({ name: "gamma", version: "0.0.0", main: "index.js", license: "MIT" }), "modules/gamma/index.js": "exports.value = () => 3;\n" });
    await git(clone, "add", ".");
    await git(clone, "commit", "-q", "-m", "A third module");
    await git(clone, "tag", "v1.2.0");
    const [queued] = await pushLib("main", "v1.2.0");
    await drain(t);
    const b = await detail(queued!.id);
    expect(b).toMatchObject({ status: "failed", failure_kind: "publish" });
    expect(b.error).toContain("the publish plan was refused");
    expect(b.error).toContain("@ops/gamma");
    expect(stepsOf(b)).toEqual([
      ["clone", true],
      ["plan", false],
    ]);
    expect((await expectStatus(await api("GET", "/modules", undefined, readerToken), 200)).version).toBe("1.1.0");
  }, 120_000);

  test("ops stops during crates, then during layers: crates runs again at start-up; layers fails internal and its retry resumes", async () => {
    await git(clone, "rm", "-q", "-r", "modules/gamma");
    writeTree(clone, modulesRepo());
    await git(clone, "commit", "-q", "-am", "Not yet; beta packs without a download");
    await git(clone, "tag", "v1.3.0");
    const [queued] = await pushLib("main", "v1.3.0");
    const row = () => getBuildRow(t.core, SLUG, queued!.id)!;
    /** Run the build's current step item only, as one worker of a server would. */
    const step = async () => {
      await t.core.scheduler.runNow(row().stepItem!);
      return stepsOf(await detail(queued!.id));
    };
    /** A worker holds the build's current item (its lease running) and ops stops; a new server starts on the same data dir. */
    const restart = async (): Promise<string> => {
      const held = row().stepItem!;
      t.core.db.update(schedulerItems).set({ state: "running", leasedUntil: t.clock.now() + 60_000 }).where(eq(schedulerItems.id, held)).run();
      await t.close();
      t = await buildsApp({ OPS_BUILD_STEP_TIMEOUT_SECS: "300" }, { dataDir });
      await buildsModule.onServe!(t.core);
      return held;
    };
    await step();
    // A step's end opens the next step's timing (it starts as soon as a worker takes its item).
    expect(await step()).toEqual([
      ["clone", true],
      ["plan", true],
      ["crates", null],
    ]);
    const heldCrates = await restart();
    expect(row()).toMatchObject({ status: "publishing" });
    expect(row().stepItem).not.toBe(heldCrates);
    expect(await step()).toEqual([...FAILED_AT_LAYERS.slice(0, 3), ["layers", null]]);
    expect(await logOf(queued!.id)).toContain("ops stopped during the crates step (found at start-up); running it again");

    await restart();
    const failed = await detail(queued!.id);
    expect(failed).toMatchObject({ status: "failed", failure_kind: "internal" });
    expect(failed.error).toContain("ops stopped while the build was in publishing, step layers");
    expect(stepsOf(failed)).toEqual(FAILED_AT_LAYERS);

    const retry = await expectStatus<BuildResponse>(await api("POST", `/builds/${failed.id}/retry`), 201);
    t.clock.advance(120_000);
    await drain(t);
    const done = await detail(retry.id);
    expect(done.status).toBe("published");
    expect(notesOf(done)).toMatchObject({ crates: "0 crate(s) published; 2 already published by this tag (acme-alpha@1.3.0, acme-beta@1.3.0)", layers: "2 layer(s) published" });
    expect(audits("package:cargo:acme-beta@1.3.0")).toBe(1);
    expect((await expectStatus(await api("GET", "/modules", undefined, readerToken), 200)).version).toBe("1.3.0");
  }, 300_000);
});
