/**
 * The modules domain without the real clients: tag versions, changelog sections, manifest
 * rewrites, the TOML writer, the plan (order, requires, every refusal), lockfile resolutions, and
 * the two read routes with each status the spec lists.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { symlinkSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../../../test/harness";
import { makePerson, makeProject, type Person } from "../../../test/fixtures";
import { writeTree } from "../../../test/support/registries";
import { SYSTEM_ACTOR } from "../../core/audit";
import type { ProjectRef } from "../../core/core";
import { tagVersion, planModules, PlanRefused, orderModules } from "./plan";
import { parseChangelog } from "./changelog";
import { readCrateHalf, readLayerHalf } from "./manifests";
import { stringifyToml } from "./toml";
import { normaliseReq } from "./metadata";
import { npmResolutions, cargoResolutions } from "./lockfiles";
import { recordConsumers, recordPart } from "./store";
import { modulesRepo, claimModuleNames, recordPlanForReads, ALPHA_CHANGELOG } from "../../../test/support/modules";

let t: TestApp;
let dev: Person;
let viewer: Person;
let outsider: Person;
let acme: ProjectRef;
const SLUG = "acme";

beforeAll(async () => {
  t = await createTestApp();
  makeProject(t, SLUG);
  makeProject(t, "elsewhere");
  acme = t.core.access.findProject(SLUG)!;
  dev = await makePerson(t, [{ role: "developer", project: SLUG }]);
  viewer = await makePerson(t, [{ role: "viewer", project: SLUG }]);
  outsider = await makePerson(t, [{ role: "developer", project: "elsewhere" }]);
  await claimModuleNames(t, SLUG, dev);
});
afterAll(() => t.close());

function repo(files: Record<string, string>): string {
  const dir = tempDir("ops-modules-tree-");
  writeTree(dir, files);
  return dir;
}

function refusal(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof PlanRefused) return e.problems;
    throw e;
  }
  throw new Error("the plan was not refused");
}

describe("pieces", () => {
  test("a tag names a version only as v<semver>", () => {
    expect(tagVersion("v1.2.3")).toBe("1.2.3");
    expect(tagVersion("refs/tags/v2.0.0-rc.1+build.5")).toBe("2.0.0-rc.1+build.5");
    expect(tagVersion("1.2.3")).toBeNull();
    expect(tagVersion("v1.2")).toBeNull();
    expect(tagVersion("refs/tags/release-1")).toBeNull();
  });

  test("changelog sections by version heading, in file order, Unreleased and fenced headings left out", () => {
    expect(parseChangelog(ALPHA_CHANGELOG)).toEqual([
      { version: "1.0.0", notes: '### Added\n- `value()` returns **41**.\n- <script>alert("x")</script> is text, not a script.' },
      { version: "0.9.0", notes: "- First cut." },
    ]);
    expect(parseChangelog("## v2.0.0 (2026-01-01)\n\n```md\n## 1.0.0\n```\n\n# Old\n## 1.5.0\nx\n")).toEqual([
      { version: "2.0.0", notes: "```md\n## 1.0.0\n```" },
      { version: "1.5.0", notes: "x" },
    ]);
  });

  test("the TOML writer gives back what Bun's parser read", () => {
    const doc = {
      package: { name: "x", version: "1.0.0", authors: ["A <a@b>"], metadata: { docs: { rs: { all: true } } } },
      dependencies: { a: { version: "1", features: ["x"] }, "b.c": "2" },
      features: { default: ["dep:a"] },
      bin: [{ name: "one", path: "src/one.rs" }, { name: "two" }],
      target: { "cfg(unix)": { dependencies: { libc: "0.2" } } },
      odd: "quote \" backslash \\ newline \n del \u007f",
    };
    expect(Bun.TOML.parse(stringifyToml(doc))).toEqual(doc);
  });

  test("cargo's version requirement display", () => {
    expect(normaliseReq("1.2.3")).toBe("^1.2.3");
    expect(normaliseReq(">=1, <2")).toBe(">=1, <2");
    expect(normaliseReq("1.2, <1.5")).toBe("^1.2, <1.5");
    expect(normaliseReq("*")).toBe("*");
  });

  test("a crate half is renamed, versioned, and its sibling path dependency becomes a registry dependency", () => {
    const ctx = { module: "beta", crates: new Set(["alpha", "beta"]), layers: new Set<string>(), project: "acme", scope: "@ops", version: "2.0.0" };
    const r = readCrateHalf(
      `[package]\nname = "beta"\nversion = "0.1.0"\npublish = ["somewhere"]\n\n[dependencies]\nalpha = { path = "../alpha", features = ["x"] }\nserde = "1"\n\n[dev-dependencies]\nalpha = { path = "../alpha" }\n\n[target.'cfg(unix)'.build-dependencies]\nmore = { package = "acme-alpha", version = "0.1" }\n`,
      ctx,
    );
    expect(r.problems).toEqual([]);
    expect(r.requires).toEqual(["alpha"]);
    expect(r.declaredVersion).toBe("0.1.0");
    const doc = Bun.TOML.parse(r.manifest) as any;
    expect(doc.package).toEqual({ name: "acme-beta", version: "2.0.0" });
    expect(doc.dependencies.alpha).toEqual({ features: ["x"], package: "acme-alpha", version: "2.0.0", registry: "ops" });
    expect(doc.dependencies.serde).toBe("1");
    expect(doc["dev-dependencies"]).toEqual({});
    expect(doc.target["cfg(unix)"]["build-dependencies"].more).toEqual({ package: "acme-alpha", version: "2.0.0", registry: "ops" });

    const bad = readCrateHalf(`[package]\nname = "beta"\nedition.workspace = true\n\n[dependencies]\nx = { path = "../../vendor/x" }\ny = { workspace = true }\n`, ctx);
    expect(bad.problems).toHaveLength(3);
    expect(bad.problems.join("\n")).toContain("inherits package.edition from a workspace");
    expect(bad.problems.join("\n")).toContain(`depends on the path "../../vendor/x"`);
    expect(readCrateHalf(`[package]\nname = "x"\npublish = false\n`, ctx).leftOut).toContain("publish = false");

    // Only crates.io and the siblings: another registry, an index or a git repository is refused; a sibling's git source is dropped.
    const elsewhere = readCrateHalf(
      `cargo-features = ["edition2024"]\n[package]\nname = "beta"\n\n[dependencies]\na = { version = "1", registry-index = "sparse+http://10.0.0.1/" }\nb = { version = "1", registry = "corp" }\nc = { version = "1", git = "https://example.com/c" }\nalpha = { package = "acme-alpha", git = "https://example.com/alpha" }\n`,
      ctx,
    );
    expect(elsewhere.problems).toEqual([
      "modules/beta/Cargo.toml names cargo-features, which only a nightly cargo accepts; a module's crate must build with a stable cargo",
      `modules/beta/Cargo.toml [dependencies] a names the registry index "sparse+http://10.0.0.1/"; a module's crate depends on crates.io and its sibling modules only`,
      `modules/beta/Cargo.toml [dependencies] b names the registry "corp"; a module's crate depends on crates.io and its sibling modules only`,
      `modules/beta/Cargo.toml [dependencies] c is a git dependency ("https://example.com/c"); a module's crate depends on crates.io and its sibling modules only`,
    ]);
    expect((Bun.TOML.parse(elsewhere.manifest) as any).dependencies.alpha).toEqual({ package: "acme-alpha", version: "2.0.0", registry: "ops" });
  });

  test("a crate's file keys must stay inside the module: readme, license-file, build, targets and include leaving it are refused", () => {
    const ctx = { module: "beta", crates: new Set(["beta"]), layers: new Set<string>(), project: "acme", scope: "@ops", version: "2.0.0" };
    const hostile = readCrateHalf(
      `[package]\nname = "beta"\nreadme = "../../../../etc/hostname"\nlicense-file = "/etc/shadow"\nbuild = "../alpha/build.rs"\ninclude = ["src/**", "../../keys/*"]\n\n[lib]\npath = "/root/lib.rs"\n\n[[bin]]\nname = "b"\npath = "..\\\\..\\\\x.rs"\n\n[patch.crates-io]\nserde = { path = "/root/serde" }\n`,
      ctx,
    );
    const said = hostile.problems.join("\n");
    for (const key of ["package.readme", "package.license-file", "package.build", "package.include[1]", "lib.path", "[[bin]] 1 path"]) expect(said).toContain(`${key} is "`);
    expect(hostile.problems).toHaveLength(6);
    expect(said).toContain("outside the module's folder");
    // A [patch] is not published and would send cargo to its source while it resolves: left out, and said.
    expect((Bun.TOML.parse(hostile.manifest) as Record<string, unknown>).patch).toBeUndefined();
    expect(hostile.notes).toEqual(["modules/beta/Cargo.toml: [patch] left out: a published crate is resolved without it, as cargo publishes it"]);
    const fine = readCrateHalf(`[package]\nname = "beta"\nreadme = "docs/../README.md"\nlicense-file = "LICENSE"\nbuild = "build.rs"\ninclude = ["src/**"]\n\n[lib]\npath = "src/lib.rs"\n`, ctx);
    expect(fine.problems).toEqual([]);
  });

  test("a layer is renamed, versioned, and its sibling dependencies point at the tag's version", () => {
    const ctx = { module: "beta", crates: new Set<string>(), layers: new Set(["alpha", "beta", "gamma"]), project: "acme", scope: "@ops", version: "2.0.0" };
    const r = readLayerHalf(
      JSON.stringify({ name: "beta", version: "1.0.0", dependencies: { "@ops/alpha": "workspace:*", gamma: "file:../gamma", left: "^1" }, devDependencies: { tool: "link:../../tool" } }),
      ctx,
    );
    expect(r.problems).toEqual([]);
    expect(r.requires).toEqual(["alpha", "gamma"]);
    const pj = JSON.parse(r.manifest);
    expect(pj).toEqual({ name: "@ops/beta", version: "2.0.0", dependencies: { "@ops/alpha": "^2.0.0", gamma: "npm:@ops/gamma@^2.0.0", left: "^1" }, devDependencies: {} });
    expect(readLayerHalf(JSON.stringify({ name: "beta", dependencies: { x: "file:../../x" } }), ctx).problems[0]).toContain("installers outside the repository cannot follow it");
    expect(readLayerHalf(JSON.stringify({ name: "beta", private: true }), ctx).leftOut).toContain('"private": true');
  });

  test("the order is topological and a cycle is named", () => {
    expect(orderModules(new Map([["c", ["b"]], ["b", ["a"]], ["a", []], ["d", []]]))).toEqual({ order: ["a", "b", "c", "d"] });
    expect(orderModules(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]]]))).toEqual({ cycle: ["a", "b", "c", "a"] });
  });

  test("lockfiles: what came from this ops's registries", () => {
    const base = "http://ops.test";
    const lock = JSON.stringify({
      lockfileVersion: 3,
      packages: {
        "": { name: "app" },
        "node_modules/@ops/beta": { version: "1.0.0", resolved: `${base}/npm/@ops%2fbeta/-/beta-1.0.0.tgz` },
        "node_modules/@ops/beta/node_modules/@ops/alpha": { version: "0.9.0", resolved: `${base}/npm/@ops%2falpha/-/alpha-0.9.0.tgz` },
        "node_modules/left-pad": { version: "1.3.0", resolved: "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz" },
        "node_modules/aliased": { name: "@ops/alpha", version: "1.0.0", resolved: `${base}/npm/@ops%2falpha/-/alpha-1.0.0.tgz` },
      },
    });
    expect(npmResolutions(lock, `${base}/npm/`)).toEqual([
      { registry: "npm", name: "@ops/beta", version: "1.0.0" },
      { registry: "npm", name: "@ops/alpha", version: "0.9.0" },
      { registry: "npm", name: "@ops/alpha", version: "1.0.0" },
    ]);
    const v1 = JSON.stringify({ lockfileVersion: 1, dependencies: { "@ops/beta": { version: "1.0.0", resolved: `${base}/npm/x.tgz`, dependencies: { "@ops/alpha": { version: "1.0.0", resolved: `${base}/npm/y.tgz` } } } } });
    expect(npmResolutions(v1, `${base}/npm/`).map((r) => r.name)).toEqual(["@ops/beta", "@ops/alpha"]);
    const cargo = `version = 4\n\n[[package]]\nname = "acme-alpha"\nversion = "1.0.0"\nsource = "sparse+${base}/cargo/"\n\n[[package]]\nname = "serde"\nversion = "1.0.0"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\n\n[[package]]\nname = "app"\nversion = "0.1.0"\n`;
    expect(cargoResolutions(cargo, `sparse+${base}/cargo/`)).toEqual([{ registry: "cargo", name: "acme-alpha", version: "1.0.0" }]);
    expect(npmResolutions("not json", base)).toEqual([]);
  });
});

describe("the plan", () => {
  test("two modules: order, names, requires, rewrites noted, locales and notes up to the tag", () => {
    const plan = planModules(t.core, { project: acme, treeDir: repo(modulesRepo()), tag: "refs/tags/v1.0.0", commit: "c1" });
    expect(plan.version).toBe("1.0.0");
    expect(plan.tag).toBe("v1.0.0");
    expect(plan.modules.map((m) => [m.name, m.crate?.name, m.layer?.name, m.requires])).toEqual([
      ["alpha", "acme-alpha", "@ops/alpha", []],
      ["beta", "acme-beta", "@ops/beta", ["alpha"]],
    ]);
    expect(plan.modules[0].locales).toEqual([
      { locale: "en", file: "modules/alpha/locales/en.json" },
      { locale: "fr", file: "modules/alpha/locales/fr.json" },
    ]);
    expect(plan.modules[0].notes.map((n) => n.version)).toEqual(["1.0.0", "0.9.0"]);
    expect(plan.modules[0].description).toBe("The alpha module");
    expect(plan.log).toContain("modules/alpha/Cargo.toml: version 0.0.0 published as 1.0.0 (the tag)");
    expect(plan.log).toContain("modules/alpha/package.json: version 0.0.0 published as 1.0.0 (the tag)");
    expect(JSON.parse(plan.modules[1].layer!.manifest).dependencies).toEqual({ "@ops/alpha": "^1.0.0" });
  });

  test("refusals come all at once: unclaimed names, a cycle, a symbolic link, a bad locale file", () => {
    const dir = repo(
      modulesRepo({
        extra: {
          "modules/alpha/Cargo.toml": `[package]\nname = "alpha"\nversion = "0.0.0"\n\n[dependencies]\nbeta = { path = "../beta" }\n`,
          "modules/gamma/package.json": JSON.stringify({ name: "gamma" }),
          "modules/alpha/locales/de.json": "[1, 2]",
          "modules/alpha/locales/not a locale!.json": "{}",
        },
      }),
    );
    symlinkSync("/etc/passwd", path.join(dir, "modules/beta/secret.txt"));
    const problems = refusal(() => planModules(t.core, { project: acme, treeDir: dir, tag: "v1.0.0", commit: "c1" }));
    expect(problems).toContain("modules/beta/secret.txt is a symbolic link; a module's files must be regular files");
    expect(problems).toContain("the modules depend on each other in a cycle: alpha → beta → alpha");
    expect(problems.some((p) => p.startsWith(`the npm name "@ops/gamma" is not claimed; claim it first (PUT /api/v1/projects/acme/packages/npm/`))).toBe(true);
    expect(problems.some((p) => p.startsWith("modules/alpha/locales/de.json is not a JSON object"))).toBe(true);
    expect(problems.some((p) => p.includes('"not a locale!" is not a locale tag'))).toBe(true);
  });

  test("no modules/ tree, a tag that is not v<semver>, a module name that cannot be a package", () => {
    expect(refusal(() => planModules(t.core, { project: acme, treeDir: repo({ "README.md": "x" }), tag: "v1.0.0", commit: "c" }))).toEqual(["the commit has no modules/ directory"]);
    expect(refusal(() => planModules(t.core, { project: acme, treeDir: repo(modulesRepo()), tag: "v1", commit: "c" }))[0]).toContain("is not v<semver>");
    expect(refusal(() => planModules(t.core, { project: acme, treeDir: repo({ "modules/Bad_Name/package.json": "{}" }), tag: "v1.0.0", commit: "c" }))[0]).toContain("modules/Bad_Name: a module name is lower-case");
  });

  test("a version already published is refused, unless this tag's commit published it (a retry skips it)", async () => {
    const project = makeProject(t, "dup");
    const ref = t.core.access.findProject("dup")!;
    const owner = await makePerson(t, [{ role: "developer", project: "dup" }]);
    await claimModuleNames(t, "dup", owner, ["delta"]);
    const { publishNpm } = await import("../../../test/support/translations");
    await publishNpm(t, owner, "@ops/delta", "1.0.0");
    const dir = repo({ "modules/delta/package.json": JSON.stringify({ name: "delta" }) });
    expect(refusal(() => planModules(t.core, { project: ref, treeDir: dir, tag: "v1.0.0", commit: "c1" }))).toEqual(["@ops/delta@1.0.0 is already published; a tag publishes a new version"]);
    recordPart(t.core, { projectId: project.id, module: "delta", part: "layer", version: "1.0.0", registry: "npm", packageName: "@ops/delta", commit: "c1", buildId: null });
    const plan = planModules(t.core, { project: ref, treeDir: dir, tag: "v1.0.0", commit: "c1" });
    expect(plan.modules[0].layer!.skip).toBe(true);
    expect(plan.log).toContain("@ops/delta@1.0.0 was published by this tag already: skipped");
    expect(refusal(() => planModules(t.core, { project: ref, treeDir: dir, tag: "v1.0.0", commit: "c2" }))).toEqual(["@ops/delta@1.0.0 is already published (from commit c1); a tag publishes a new version"]);
  });
});

describe("GET /modules and /modules/{name}/notes", () => {
  const M = (slug: string, rest = "") => `/api/v1/projects/${slug}/modules${rest}`;

  test("200 with version null before any publish", async () => {
    expect(await expectStatus(await t.request("GET", M(SLUG), { token: viewer.session }), 200)).toEqual({ modules: [], version: null });
  });

  test("200: the recorded list with halves, requires and consumers; notes newest first; a module without notes gives []", async () => {
    recordPlanForReads(t, acme, "1.0.0");
    const elsewhere = t.core.access.findProject("elsewhere")!;
    recordConsumers(t.core, elsewhere.id, 7, [
      { registry: "cargo", name: "acme-alpha", version: "1.0.0" },
      { registry: "npm", name: "@ops/alpha", version: "0.9.0" },
      { registry: "npm", name: "@ops/unrelated", version: "1.0.0" },
    ]);
    const body = await expectStatus(await t.request("GET", M(SLUG), { token: viewer.session }), 200);
    expect(body).toEqual({
      version: "1.0.0",
      modules: [
        {
          name: "alpha",
          description: "The alpha module",
          crate_name: "acme-alpha",
          layer_name: "@ops/alpha",
          requires: [],
          consumers: [
            { package: "@ops/alpha", project: "elsewhere", version: "0.9.0" },
            { package: "acme-alpha", project: "elsewhere", version: "1.0.0" },
          ],
        },
        { name: "beta", description: "The beta module", crate_name: "acme-beta", layer_name: null, requires: ["alpha"], consumers: [] },
      ],
    });
    const notes = await expectStatus(await t.request("GET", M(SLUG, "/alpha/notes"), { token: viewer.session }), 200);
    expect(notes.map((n: { version: string }) => n.version)).toEqual(["1.0.0", "0.9.0"]);
    expect(notes[0].notes).toContain("`value()` returns **41**.");
    expect(await expectStatus(await t.request("GET", M(SLUG, "/beta/notes"), { token: viewer.session }), 200)).toEqual([]);
  });

  test("a later tag that drops a module: the list follows the tree, the dropped module's notes stay readable", async () => {
    const project = makeProject(t, "shrinks");
    const ref = t.core.access.findProject("shrinks")!;
    const plan = recordPlanForReads(t, ref, "1.0.0");
    const { recordModuleSet } = await import("./store");
    recordModuleSet(t.core, ref, { ...plan, version: "2.0.0", modules: [plan.modules[1]] }, SYSTEM_ACTOR);
    const owner = await makePerson(t, [{ role: "viewer", project: project.slug }]);
    const body = await expectStatus(await t.request("GET", M("shrinks"), { token: owner.session }), 200);
    expect([body.version, body.modules.map((m: { name: string }) => m.name)]).toEqual(["2.0.0", ["beta"]]);
    expect((await expectStatus(await t.request("GET", M("shrinks", "/alpha/notes"), { token: owner.session }), 200)).length).toBe(2);
  });

  test("401 without a credential, 403 for a non-member, 404 for no such project or module", async () => {
    await expectStatus(await t.request("GET", M(SLUG)), 401);
    await expectStatus(await t.request("GET", M(SLUG, "/alpha/notes")), 401);
    await expectStatus(await t.request("GET", M(SLUG), { token: outsider.session }), 403);
    await expectStatus(await t.request("GET", M(SLUG, "/alpha/notes"), { token: outsider.session }), 403);
    await expectStatus(await t.request("GET", M("no-such-project"), { token: dev.session }), 404);
    await expectStatus(await t.request("GET", M("no-such-project", "/alpha/notes"), { token: dev.session }), 404);
    const missing = await expectStatus(await t.request("GET", M(SLUG, "/gamma/notes"), { token: dev.session }), 404);
    expect(missing.message).toBe('Project "acme" has no module "gamma".');
  });

  test("both routes are in OpenAPI with packages.read and the listed statuses", async () => {
    const doc = await expectStatus(await t.request("GET", "/api/docs/json"), 200);
    for (const p of ["/api/v1/projects/{slug}/modules", "/api/v1/projects/{slug}/modules/{name}/notes"]) {
      const op = doc.paths[p].get;
      expect(Object.keys(op.responses).sort()).toEqual(["200", "401", "403", "404"]);
      expect(JSON.stringify(op)).toContain("packages.read");
    }
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["ProjectModulesResponse", "ModuleSummary", "ModuleConsumer", "ModuleNotes"]));
  });
});
