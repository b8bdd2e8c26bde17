/**
 * Test helpers of the modules domain: a repository with a `modules/` tree of two modules — `alpha`
 * (crate, layer, English and French locale files, changelog) and `beta` (crate and layer that
 * depend on alpha's, changelog) — the claims its project needs, and a plan recorded without the
 * registries for tests of the reads alone.
 */
import type { TestApp } from "../harness";
import type { Person } from "../fixtures";
import { SYSTEM_ACTOR } from "../../src/core/audit";
import type { ProjectRef } from "../../src/core/core";
import { recordModuleSet } from "../../src/domains/modules/store";
import type { ModulePlan } from "../../src/domains/modules/plan";

export const ALPHA_CHANGELOG = `# Changelog

## Unreleased

- Not yet.

## [1.0.0] - 2026-05-01

### Added
- \`value()\` returns **41**.
- <script>alert("x")</script> is text, not a script.

## 0.9.0

- First cut.
`;

/** The files of the two-module repository (path → text). `extra` adds or replaces files. */
export function modulesRepo(opts: { betaPrepack?: string; extra?: Record<string, string> } = {}): Record<string, string> {
  return {
    "README.md": "# a library family\n",
    "modules/alpha/Cargo.toml": `[package]\nname = "alpha"\nversion = "0.0.0"\nedition = "2021"\ndescription = "The alpha module"\nlicense = "MIT"\n\n[dependencies]\n`,
    "modules/alpha/src/lib.rs": "pub fn value() -> u32 { 41 }\n",
    "modules/alpha/package.json": JSON.stringify({ name: "alpha", version: "0.0.0", description: "The alpha layer", main: "index.js", license: "MIT" }, null, 2),
    "modules/alpha/index.js": "exports.value = () => 41;\n",
    "modules/alpha/locales/en.json": JSON.stringify({ alpha: { greeting: "Hello from alpha", farewell: "Bye, {name}" } }),
    "modules/alpha/locales/fr.json": JSON.stringify({ alpha: { greeting: "Bonjour d'alpha", farewell: "Au revoir, {name}" } }),
    "modules/alpha/CHANGELOG.md": ALPHA_CHANGELOG,
    "modules/beta/Cargo.toml": `[package]\nname = "beta"\nversion = "1.0.0"\nedition = "2021"\ndescription = "The beta module"\nlicense = "MIT"\n\n[dependencies]\nalpha = { path = "../alpha" }\n`,
    "modules/beta/src/lib.rs": "pub fn value() -> u32 { alpha::value() + 1 }\n",
    "modules/beta/package.json": JSON.stringify(
      { name: "beta", version: "1.0.0", main: "index.js", license: "MIT", dependencies: { "@ops/alpha": "workspace:*" }, ...(opts.betaPrepack ? { scripts: { prepack: opts.betaPrepack } } : {}) },
      null,
      2,
    ),
    "modules/beta/index.js": "const alpha = require('@ops/alpha');\nexports.value = () => alpha.value() + 1;\n",
    "modules/beta/CHANGELOG.md": "## 1.0.0\n\nBeta builds on alpha.\n",
    ...opts.extra,
  };
}

/** Claim the four names of the two-module repository for `slug` as `person`. */
export async function claimModuleNames(t: TestApp, slug: string, person: Person, modules = ["alpha", "beta"]): Promise<void> {
  for (const m of modules) {
    for (const [registry, name] of [
      ["cargo", `${slug}-${m}`],
      ["npm", `@ops/${m}`],
    ]) {
      const res = await t.request("PUT", `/api/v1/projects/${slug}/packages/${registry}/${encodeURIComponent(name)}`, { token: person.session });
      if (res.status !== 201 && res.status !== 200) throw new Error(`claim ${name}: ${res.status} ${await res.text()}`);
    }
  }
}

/** Record a module list as a complete publish would (no registry involved): for tests of the reads. */
export function recordPlanForReads(t: TestApp, project: ProjectRef, version = "1.0.0"): ModulePlan {
  const slug = project.slug;
  const plan: ModulePlan = {
    tag: `v${version}`,
    version,
    commit: "0".repeat(39) + "1",
    log: [],
    modules: [
      {
        name: "alpha",
        dir: "modules/alpha",
        description: "The alpha module",
        crate: { name: `${slug}-alpha`, manifest: "", requires: [], skip: false },
        layer: { name: "@ops/alpha", manifest: "", requires: [], skip: false },
        requires: [],
        locales: [],
        notes: [
          { version: "0.9.0", notes: "- First cut." },
          { version, notes: "### Added\n- `value()` returns **41**.\n- <script>alert(\"x\")</script> is text, not a script.\n- [a trap](javascript:alert(1)) and [the site](https://example.com/alpha)." },
        ],
      },
      {
        name: "beta",
        dir: "modules/beta",
        description: "The beta module",
        crate: { name: `${slug}-beta`, manifest: "", requires: ["alpha"], skip: false },
        layer: null,
        requires: ["alpha"],
        locales: [],
        notes: [],
      },
    ],
  };
  recordModuleSet(t.core, project, plan, SYSTEM_ACTOR);
  return plan;
}
