/**
 * The publish flow from a real `git push`: a repository with two modules (beta requiring alpha)
 * pushed with the git CLI to the built-in host, then a tag. The push event's tag is recognised as
 * a publish trigger (`publishTagOf`: a `v<semver>` tag on a commit with a `modules/` tree; not a
 * branch, not a deleted tag, not a repository without `modules/`), the tagged commit is fetched
 * as a build's clone step does, and the publish build's steps run (`runPublishStep`: plan,
 * crates, layers, locales) as the builds domain will run them. Then real cargo and npm consume
 * the packages, a locale export shows the strings, `GET /modules` lists both with their notes;
 * and a second tag whose `layers` step fails is retried: layers published, crates not again.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken, type Person } from "./fixtures";
import { writeTree } from "../src/domains/registries/testing";
import { PUSH, type PushEvent, fetchCommit, sourceById } from "../src/domains/sources/service";
import { publishTagOf, runPublishStep, PublishStepFailure, PUBLISH_STEPS, type PublishStepInput } from "../src/domains/modules/build-steps";
import { modulesRepo, claimModuleNames } from "../src/domains/modules/testing";
import { consumers, flakyServer, fetchingPrepack } from "./modules-clients";
import { git, cloneUrl, workDir } from "./sources-git-helpers";

let t: TestApp;
let dana: Person;
let pushToken: string;
let readerToken: string;
const pushes: PushEvent[] = [];
const SLUG = "acme";
let build = 0;

/** What a publish build does for a tag push, step by step; returns the step notes and log. */
async function publishBuild(ev: PushEvent, trigger: { tag: string; commit: string }, stopAfter?: string): Promise<{ notes: Record<string, string>; log: string[]; failed?: PublishStepFailure }> {
  const id = ++build;
  const source = sourceById(t.core, ev.sourceId)!;
  const dir = path.join(t.dataDir, "run", "builds", String(id));
  const src = path.join(dir, "src");
  mkdirSync(src, { recursive: true });
  await fetchCommit(t.core, source, trigger.commit, src);
  const log: string[] = [];
  const notes: Record<string, string> = {};
  const input: PublishStepInput = { core: t.core, projectId: t.core.access.findProject(SLUG)!.id, tag: trigger.tag, commit: trigger.commit, treeDir: src, workDir: path.join(dir, "work"), plan: null, pusher: ev.pusher, buildId: id, log: (level, line) => log.push(`${level}: ${line}`) };
  try {
    for (const step of PUBLISH_STEPS) {
      const res = await runPublishStep(step, input);
      notes[step] = res.note;
      if (res.plan) input.plan = res.plan;
      if (step === stopAfter) break;
    }
  } catch (e) {
    if (e instanceof PublishStepFailure) return { notes, log, failed: e };
    throw e;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { notes, log };
}

const audits = (target: string) => t.core.sqlite.query<{ n: number }, [string]>("SELECT count(*) AS n FROM audit_log WHERE target = ? AND outcome = 'allowed'").get(target)!.n;

beforeAll(async () => {
  t = await createTestApp();
  chmodSync(t.dataDir, 0o755);
  makeProject(t, SLUG);
  makeProject(t, "shop");
  dana = await makePerson(t, [{ role: "developer", project: SLUG }]);
  pushToken = mintToken(t, dana.principal, { role: "developer", project: SLUG });
  readerToken = mintToken(t, dana.principal, { role: "viewer", project: SLUG });
  await claimModuleNames(t, SLUG, dana);
  await expectStatus(await t.request("POST", `/api/v1/projects/${SLUG}/sources`, { token: dana.session, body: { repo: `${SLUG}/lib` } }), 201);
  await expectStatus(await t.request("POST", `/api/v1/projects/${SLUG}/sources`, { token: dana.session, body: { repo: `${SLUG}/plain` } }), 201);
  t.core.events.on(PUSH, (ev) => void pushes.push(ev));
}, 60_000);
afterAll(() => t.close());

describe("a tag pushed with git publishes the modules", () => {
  let clone: string;
  const tagPush = (tag: string) => pushes.find((p) => p.ref === `refs/tags/${tag}` && p.repo === `${SLUG}/lib`)!;

  test("git push of main and v1.0.0: only the tag on a modules/ tree is a publish trigger", async () => {
    clone = workDir();
    await git(clone, "init", "-q", "-b", "main");
    writeTree(clone, modulesRepo());
    await git(clone, "add", ".");
    await git(clone, "commit", "-q", "-m", "Two modules");
    await git(clone, "tag", "-a", "v1.0.0", "-m", "Release 1.0.0");
    await git(clone, "tag", "not-a-release");
    await git(clone, "push", "-q", cloneUrl(t.url, `${SLUG}/lib`, pushToken), "main", "v1.0.0", "not-a-release");
    const plain = workDir();
    await git(plain, "init", "-q", "-b", "main");
    writeTree(plain, { "README.md": "no modules here\n" });
    await git(plain, "add", ".");
    await git(plain, "commit", "-q", "-m", "Plain");
    await git(plain, "tag", "v1.0.0");
    await git(plain, "push", "-q", cloneUrl(t.url, `${SLUG}/plain`, pushToken), "main", "v1.0.0");

    const triggers = await Promise.all(pushes.map(async (p) => [p.repo, p.ref, await publishTagOf(t.core, sourceById(t.core, p.sourceId)!, p)]));
    const head = (await git(clone, "rev-parse", "HEAD")).trim();
    expect(triggers.filter(([, , trigger]) => trigger !== null)).toEqual([[`${SLUG}/lib`, "refs/tags/v1.0.0", { tag: "v1.0.0", commit: head }]]);
    expect(triggers).toHaveLength(5);
    // An annotated tag: the push names the tag object, which the host peels to the commit.
    expect(tagPush("v1.0.0").after).not.toBe(head);
    expect(tagPush("v1.0.0").pusher).toBe(dana.email);
  }, 60_000);

  test("the publish build's steps: plan, crates, layers, locales", async () => {
    const ev = tagPush("v1.0.0");
    const res = await publishBuild(ev, (await publishTagOf(t.core, sourceById(t.core, ev.sourceId)!, ev))!);
    expect(res.failed).toBeUndefined();
    expect(res.notes).toEqual({
      plan: "2 module(s) at 1.0.0: alpha, beta",
      crates: "2 crate(s) published",
      layers: "2 layer(s) published",
      locales: "2 locale file(s) registered; 2 module(s) recorded",
    });
    expect(res.log).toContain("info: beta: crate acme-beta, layer @ops/beta; requires alpha");
    const pub = t.core.sqlite.query<{ actor: string; context: string }, []>("SELECT actor, context FROM audit_log WHERE target = 'package:npm:@ops/beta@1.0.0'").get()!;
    expect([pub.actor, JSON.parse(pub.context).pusher, JSON.parse(pub.context).build]).toEqual(["system", dana.email, 1]);
  }, 300_000);

  test("real cargo and npm consume the packages; a locale export shows the strings; GET /modules lists both with notes", async () => {
    const clients = consumers(t, readerToken);
    const app = await clients.cargoBuild(`acme-beta = { version = "1.0.0", registry = "ops" }\n`, 'fn main() { println!("{}", acme_beta::value()); }\n');
    expect(app.build.code).toBe(0);
    expect(app.stdout.trim()).toBe("42");
    const npmApp = await clients.npmInstall(["@ops/beta@1.0.0"]);
    expect(npmApp.install.code).toBe(0);
    expect(Bun.spawnSync(["node", "-e", "console.log(require('@ops/beta').value())"], { cwd: npmApp.dir }).stdout.toString().trim()).toBe("42");

    const shopDev = await makePerson(t, [{ role: "developer", project: "shop" }]);
    const tr = (rest: string) => `/api/v1/projects/shop/translations${rest}`;
    await expectStatus(await t.request("POST", tr("/bundles"), { token: shopDev.session, body: { name: "shop" } }), 201);
    const kit = (await expectStatus(await t.request("GET", "/api/v1/tms/bundles", { token: shopDev.session }), 200)).find((b: { name: string }) => b.name === "@ops/alpha");
    await expectStatus(await t.request("POST", tr("/attachments"), { token: shopDev.session, body: { bundle: kit.id, version: "1.0.0" } }), 200);
    expect((await expectStatus(await t.request("GET", tr("/export/en"), { token: shopDev.session }), 200)).alpha).toEqual({ greeting: "Hello from alpha", farewell: "Bye, {name}" });
    expect((await expectStatus(await t.request("GET", tr("/export/fr"), { token: shopDev.session }), 200)).alpha.greeting).toBe("Bonjour d'alpha");

    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules`, { token: readerToken }), 200);
    expect(list.version).toBe("1.0.0");
    expect(list.modules.map((m: { name: string; crate_name: string; layer_name: string; requires: string[] }) => [m.name, m.crate_name, m.layer_name, m.requires])).toEqual([
      ["alpha", "acme-alpha", "@ops/alpha", []],
      ["beta", "acme-beta", "@ops/beta", ["alpha"]],
    ]);
    for (const [name, versions] of [
      ["alpha", ["1.0.0", "0.9.0"]],
      ["beta", ["1.0.0"]],
    ] as const) {
      const notes = await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules/${name}/notes`, { token: readerToken }), 200);
      expect(notes.map((n: { version: string }) => n.version)).toEqual(versions);
    }
  }, 300_000);

  test("v1.1.0: the layers step fails; the retry publishes the layers without republishing the crates", async () => {
    const flaky = flakyServer(1);
    try {
      writeTree(clone, modulesRepo({ betaPrepack: fetchingPrepack(flaky.url), extra: { "modules/beta/CHANGELOG.md": "## 1.1.0\n\nBeta downloads an asset.\n\n## 1.0.0\n\nBeta builds on alpha.\n" } }));
      await git(clone, "commit", "-q", "-am", "Beta downloads an asset when packed");
      await git(clone, "tag", "v1.1.0");
      await git(clone, "push", "-q", cloneUrl(t.url, `${SLUG}/lib`, pushToken), "main", "v1.1.0");
      const ev = tagPush("v1.1.0");
      const trigger = (await publishTagOf(t.core, sourceById(t.core, ev.sourceId)!, ev))!;
      expect(trigger).toEqual({ tag: "v1.1.0", commit: ev.after });

      const first = await publishBuild(ev, trigger);
      expect(first.notes.crates).toBe("2 crate(s) published");
      expect(first.failed?.message).toContain("npm pack of @ops/beta");
      expect(first.log.join("\n")).toContain("asset download failed: 503");
      expect((await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules`, { token: readerToken }), 200)).version).toBe("1.0.0");

      const retry = await publishBuild(ev, trigger);
      expect(retry.failed).toBeUndefined();
      expect(retry.notes).toEqual({
        plan: "2 module(s) at 1.1.0: alpha, beta",
        crates: "0 crate(s) published; 2 already published by this tag (acme-alpha@1.1.0, acme-beta@1.1.0)",
        layers: "1 layer(s) published; 1 already published by this tag (@ops/alpha@1.1.0)",
        locales: "2 locale file(s) registered; 2 module(s) recorded",
      });
      expect(retry.log.join("\n")).not.toContain("cargo package");
      expect(audits("package:cargo:acme-alpha@1.1.0")).toBe(1);
      expect(audits("package:cargo:acme-beta@1.1.0")).toBe(1);
      expect(audits("package:npm:@ops/beta@1.1.0")).toBe(1);
      expect((await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules`, { token: readerToken }), 200)).version).toBe("1.1.0");
      expect((await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules/beta/notes`, { token: readerToken }), 200))[0]).toEqual({ version: "1.1.0", notes: "Beta downloads an asset." });

      // The same tag from another commit (a moved tag) would be a second release of 1.1.0: refused.
      const moved = await publishBuild(ev, { tag: "v1.1.0", commit: (await git(clone, "rev-parse", "HEAD~1")).trim() }, "plan");
      expect(moved.failed?.message).toContain("acme-alpha@1.1.0 is already published (from commit");
    } finally {
      flaky.stop();
    }
  }, 400_000);
});
