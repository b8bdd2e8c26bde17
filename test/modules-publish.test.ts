/**
 * Publishing a repository's two modules with the real tools, through the modules domain's own
 * functions: `cargo package` and `npm pack` (in the builder's sandbox) make the archives, the
 * registries take them in-process, the locale files become package bundle versions. Then the real
 * clients consume them: `cargo build` of a crate depending on the published crate from the sparse
 * registry, `npm install` of the published layer; a locale export shows the registered strings;
 * `GET /modules` lists both with their notes and, once a lockfile is recorded, their consumers.
 * Last, a `layers` step that fails (its prepack download is refused) and a retry that publishes
 * the layers without republishing the crates.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, readFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, freePort, tempDir, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken, type Person } from "./fixtures";
import { writeTree } from "./support/registries";
import { SYSTEM_ACTOR } from "../src/core/audit";
import type { ProjectRef } from "../src/core/core";
import { planModules, publishCrates, publishLayers, publishLocales, publishModules, PackFailure, recordConsumers, resolutionsIn, type PublishContext, type ModulePlan } from "../src/domains/modules/service";
import { modulesRepo, claimModuleNames } from "./support/modules";
import { consumers, flakyServer, fetchingPrepack } from "./modules-clients";

/** The asset host the prepack scripts download from: a host port sandboxes may reach (OPS_SANDBOX_HOST_PORTS). */
const ASSET_PORT = freePort();
let t: TestApp;
let dana: Person;
let acme: ProjectRef;
let readerToken: string;
const SLUG = "acme";
const COMMIT = "a".repeat(40);

function tree(files: Record<string, string>): string {
  const dir = tempDir("ops-modules-repo-");
  writeTree(dir, files);
  return dir;
}

let runs = 0;
function context(plan: ModulePlan, treeDir: string, log: string[]): PublishContext {
  return {
    core: t.core,
    treeDir,
    workDir: path.join(t.dataDir, "run", "publish", String(++runs)),
    log: (level, line) => log.push(`${level}: ${line}`),
    project: acme,
    plan,
    by: { publisher: { name: dana.email, operatorId: null }, actor: { ...SYSTEM_ACTOR, context: { pusher: dana.email } } },
    buildId: null,
  };
}

const audits = (target: string) => t.core.sqlite.query<{ n: number }, [string]>("SELECT count(*) AS n FROM audit_log WHERE target = ? AND outcome = 'allowed'").get(target)!.n;

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_SANDBOX_HOST_PORTS: String(ASSET_PORT) } });
  // The sandbox user must reach the work dirs under the data dir (ops creates its data dir 0755).
  chmodSync(t.dataDir, 0o755);
  makeProject(t, SLUG);
  makeProject(t, "shop");
  acme = t.core.access.findProject(SLUG)!;
  dana = await makePerson(t, [{ role: "developer", project: SLUG }]);
  readerToken = mintToken(t, dana.principal, { role: "viewer", project: SLUG });
  await claimModuleNames(t, SLUG, dana);
}, 60_000);
afterAll(() => t.close());

describe("publishing modules with the real tools", () => {
  let clients: ReturnType<typeof consumers>;

  test("plan and publish v1.0.0: two crates, two layers, two locale files, the list recorded", async () => {
    const dir = tree(modulesRepo());
    const plan = planModules(t.core, { project: acme, treeDir: dir, tag: "v1.0.0", commit: COMMIT });
    const log: string[] = [];
    const res = await publishModules(context(plan, dir, log));
    expect(res.crates.published).toEqual(["acme-alpha@1.0.0", "acme-beta@1.0.0"]);
    expect(res.layers.published).toEqual(["@ops/alpha@1.0.0", "@ops/beta@1.0.0"]);
    expect(res.locales.published).toEqual(["alpha:en", "alpha:fr"]);
    expect(log.join("\n")).toContain("Packaging acme-beta v1.0.0");
    // The registry's own publish path: audit rows and the package.published notifications.
    expect(audits("package:cargo:acme-beta@1.0.0")).toBe(1);
    expect(audits("package:npm:@ops/beta@1.0.0")).toBe(1);
    // dana, a member of the project, got a package.published notice per version.
    const notices = t.core.sqlite.query<{ params: string }, [string]>("SELECT params FROM notices WHERE kind = 'package.published' AND operator_id = ?").all(dana.operator.id);
    expect(notices.map((n) => JSON.parse(n.params).name).sort()).toEqual(["@ops/alpha", "@ops/beta", "acme-alpha", "acme-beta"]);
    // beta's index line names alpha on this registry, under the key the code uses.
    const index = (await (await t.request("GET", "/cargo/ac/me/acme-beta", { headers: { authorization: readerToken } })).text()).trim();
    expect(JSON.parse(index).deps).toEqual([expect.objectContaining({ name: "alpha", package: "acme-alpha", req: "^1.0.0", registry: null, kind: "normal" })]);
    const detail = await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/packages/npm/${encodeURIComponent("@ops/beta")}`, { token: dana.session }), 200);
    expect(detail.versions[0]).toEqual(expect.objectContaining({ version: "1.0.0", publisher: dana.email }));
  }, 300_000);

  test("real cargo builds a crate depending on the published crate from the sparse registry", async () => {
    clients = consumers(t, readerToken);
    const app = await clients.cargoBuild(`acme-beta = { version = "1", registry = "ops" }\n`, 'fn main() { println!("{}", acme_beta::value()); }\n');
    expect(app.build.stderr).not.toContain("error");
    expect(app.build.code).toBe(0);
    expect(app.stdout.trim()).toBe("42");
    expect(app.lock).toContain(`name = "acme-alpha"\nversion = "1.0.0"\nsource = "sparse+${t.url}/cargo/"`);
  }, 300_000);

  test("real npm installs the published layer with its sibling; the lockfiles make consumers", async () => {
    const app = await clients.npmInstall(["@ops/beta"]);
    expect(app.install.stderr).not.toContain("ERR");
    expect(app.install.code).toBe(0);
    const pj = JSON.parse(readFileSync(path.join(app.dir, "node_modules/@ops/beta/package.json"), "utf8"));
    expect([pj.name, pj.version, pj.dependencies]).toEqual(["@ops/beta", "1.0.0", { "@ops/alpha": "^1.0.0" }]);
    const out = Bun.spawnSync(["node", "-e", "console.log(require('@ops/beta').value())"], { cwd: app.dir });
    expect(out.stdout.toString().trim()).toBe("42");
    // What phase-B image builds will report: the lockfiles' resolutions from this ops, as consumers.
    const shop = t.core.access.findProject("shop")!;
    recordConsumers(t.core, shop.id, null, resolutionsIn(app.dir, t.url));
    const cargoApp = await clients.cargoBuild(`acme-alpha = { version = "1", registry = "ops" }\n`, "fn main() {}\n");
    expect(resolutionsIn(cargoApp.dir, t.url)).toEqual([{ registry: "cargo", name: "acme-alpha", version: "1.0.0" }]);
  }, 300_000);

  test("a locale export shows the registered strings; GET /modules lists both with their notes", async () => {
    const shopDev = await makePerson(t, [{ role: "developer", project: "shop" }]);
    const tr = (rest: string) => `/api/v1/projects/shop/translations${rest}`;
    await expectStatus(await t.request("POST", tr("/bundles"), { token: shopDev.session, body: { name: "shop" } }), 201);
    const bundles = await expectStatus(await t.request("GET", "/api/v1/tms/bundles", { token: shopDev.session }), 200);
    const kit = bundles.find((b: { name: string }) => b.name === "@ops/alpha");
    expect(kit).toEqual(expect.objectContaining({ project: SLUG, owner: "system" }));
    await expectStatus(await t.request("POST", tr("/attachments"), { token: shopDev.session, body: { bundle: kit.id, version: "1.0.0" } }), 200);
    const fr = await expectStatus(await t.request("GET", tr("/export/fr"), { token: shopDev.session }), 200);
    expect(fr.alpha).toEqual({ greeting: "Bonjour d'alpha", farewell: "Au revoir, {name}" });

    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules`, { token: readerToken }), 200);
    expect(list).toEqual({
      version: "1.0.0",
      modules: [
        {
          name: "alpha",
          description: "The alpha module",
          crate_name: "acme-alpha",
          layer_name: "@ops/alpha",
          requires: [],
          consumers: [{ package: "@ops/alpha", project: "shop", version: "1.0.0" }],
        },
        { name: "beta", description: "The beta module", crate_name: "acme-beta", layer_name: "@ops/beta", requires: ["alpha"], consumers: [{ package: "@ops/beta", project: "shop", version: "1.0.0" }] },
      ],
    });
    const alpha = await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules/alpha/notes`, { token: readerToken }), 200);
    expect(alpha.map((n: { version: string }) => n.version)).toEqual(["1.0.0", "0.9.0"]);
    expect(alpha[0].notes).toContain("`value()` returns **41**.");
    expect(await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules/beta/notes`, { token: readerToken }), 200)).toEqual([{ version: "1.0.0", notes: "Beta builds on alpha." }]);
  }, 120_000);

  test("v1.1.0: layers fail (the prepack download is refused); a retry publishes the layers, not the crates", async () => {
    const flaky = flakyServer(1, ASSET_PORT);
    try {
      const files = modulesRepo({ betaPrepack: fetchingPrepack(flaky.url), extra: { "modules/alpha/src/lib.rs": "pub fn value() -> u32 { 51 }\n" } });
      const dir = tree(files);
      const commit = "b".repeat(40);
      const plan = planModules(t.core, { project: acme, treeDir: dir, tag: "v1.1.0", commit });
      const log: string[] = [];
      const first = context(plan, dir, log);
      expect((await publishCrates(first)).published).toEqual(["acme-alpha@1.1.0", "acme-beta@1.1.0"]);
      const failed = await publishLayers(first).catch((e) => e);
      expect(failed).toBeInstanceOf(PackFailure);
      expect((failed as Error).message).toContain("npm pack of @ops/beta");
      expect(log.join("\n")).toContain("asset download failed: 503");
      // Nothing recorded: the list still says 1.0.0.
      expect((await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules`, { token: readerToken }), 200)).version).toBe("1.0.0");

      // The retry plans the same commit again: what this tag published is skipped, not refused.
      const again = planModules(t.core, { project: acme, treeDir: dir, tag: "v1.1.0", commit });
      expect(again.modules.map((m) => [m.name, m.crate?.skip, m.layer?.skip])).toEqual([
        ["alpha", true, true],
        ["beta", true, false],
      ]);
      const retryLog: string[] = [];
      const retry = context(again, dir, retryLog);
      const crates = await publishCrates(retry);
      expect(crates.published).toEqual([]);
      expect(crates.skipped).toEqual(["acme-alpha@1.1.0", "acme-beta@1.1.0"]);
      const layers = await publishLayers(retry);
      expect(layers.published).toEqual(["@ops/beta@1.1.0"]);
      expect(layers.skipped).toEqual(["@ops/alpha@1.1.0"]);
      expect(layers.note).toBe("1 layer(s) published; 1 already published by this tag (@ops/alpha@1.1.0)");
      await publishLocales(retry);
      expect(retryLog.join("\n")).not.toContain("Packaging");
      // Each crate version was published once, by the first attempt.
      expect(audits("package:cargo:acme-alpha@1.1.0")).toBe(1);
      expect(audits("package:cargo:acme-beta@1.1.0")).toBe(1);
      expect(audits("package:npm:@ops/beta@1.1.0")).toBe(1);
      expect((await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/modules`, { token: readerToken }), 200)).version).toBe("1.1.0");
      // And a consumer sees the new crate.
      const app = await clients.cargoBuild(`acme-beta = { version = "1.1", registry = "ops" }\n`, 'fn main() { println!("{}", acme_beta::value()); }\n');
      expect(app.build.code).toBe(0);
      expect(app.stdout.trim()).toBe("52");
    } finally {
      flaky.stop();
    }
  }, 400_000);
});
