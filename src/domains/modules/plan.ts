/**
 * The plan of a publish: from a checked-out tree and its tag, what each `modules/<name>/` ships
 * and in which order (DESIGN §5; document 2, build kind `publish`).
 *
 * - The version is the tag's (`v1.2.3` → `1.2.3`). The halves' own version fields are rewritten
 *   to it — the tag is the release, so a repository may keep `0.0.0` placeholders — and every
 *   rewrite is noted in the plan's log.
 * - Names: the crate `<project>-<name>`, the layer `@<scope>/<name>` (OPS_NPM_SCOPE).
 * - `requires`: the sibling modules either half depends on; the order is topological (ties by
 *   name), so a crate's dependency is in the registry before cargo packages the crate.
 * - Refused, all problems at once: no `modules/` tree, a malformed manifest, locale file or module
 *   name, a symbolic link in a module (it could carry a host file into a package), a name the
 *   project has not claimed, a cycle, and a version already published — unless this tag's commit
 *   published it (the ledger says so): a retry then skips it.
 */
import { existsSync, lstatSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import type { Core, ProjectRef } from "../../core/core";
import { PathRefused, readInside } from "../../core/inside";
import { claimProblem, isPublished } from "../registries/service";
import { readCrateHalf, readLayerHalf, crateNameOf, layerNameOf, type HalfContext, type ReadHalf } from "./manifests";
import { isSemver, parseChangelog, type NotesSection } from "./changelog";
import { releasedBy } from "./store";
import type { ModulePlan, PlannedHalf, PlannedModule } from "./module-plan";

export type { ModulePlan, PlannedHalf, PlannedModule } from "./module-plan";

export const MODULES_DIR = "modules";
/** Largest manifest, changelog or locale file read. */
const MAX_FILE_BYTES = 1024 * 1024;
export const MAX_LOCALE_BYTES = 8 * 1024 * 1024;
const MAX_MODULES = 200;
const MODULE_NAME = /^[a-z][a-z0-9-]*$/;

/** A refused plan: every problem found. */
export class PlanRefused extends Error {
  constructor(readonly problems: string[]) {
    super(problems.length === 1 ? problems[0] : `${problems.length} problems: ${problems.join("; ")}`);
    this.name = "PlanRefused";
  }
}

/** The version a tag names (`v1.2.3`, `refs/tags/v1.2.3` → `1.2.3`), or null when it is not `v<semver>`. */
export function tagVersion(ref: string): string | null {
  const tag = ref.startsWith("refs/tags/") ? ref.slice("refs/tags/".length) : ref;
  if (!tag.startsWith("v")) return null;
  const v = tag.slice(1);
  return isSemver(v) ? v : null;
}

/** True when the checked-out tree has a `modules/` directory (the publish trigger's test). */
export function hasModulesTree(treeDir: string): boolean {
  const p = path.join(treeDir, MODULES_DIR);
  return existsSync(p) && lstatSync(p).isDirectory();
}

/**
 * A regular file's text, or a problem (missing → null text, no problem). Read inside the checkout
 * without following a link out of it, whatever checked the path before (src/core/inside.ts).
 */
function readRegular(treeDir: string, rel: string, max: number, problems: string[]): string | null {
  try {
    return readInside(treeDir, rel, { what: "the file", maxBytes: max })?.toString("utf8") ?? null;
  } catch (e) {
    if (!(e instanceof PathRefused)) throw e;
    problems.push(e.message);
    return null;
  }
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Symbolic links anywhere in a module (outside target/ and node_modules/), repository-relative. */
function linksIn(dir: string, rel: string, out: string[]): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const r = `${rel}/${e.name}`;
    if (e.isSymbolicLink()) out.push(r);
    else if (e.isDirectory() && !SKIPPED_DIRS.has(e.name)) linksIn(path.join(dir, e.name), r, out);
    if (out.length >= 20) return;
  }
}

/** Directories never copied into a package's staging copy (build output, installs, VCS, local cargo config). */
export const SKIPPED_DIRS = new Set(["target", "node_modules", ".git", ".cargo"]);

function canonicalLocale(tag: string): string | null {
  try {
    const [c] = Intl.getCanonicalLocales(tag);
    return c ?? null;
  } catch {
    return null;
  }
}

interface ReadModule {
  name: string;
  crate: ReadHalf | null;
  layer: ReadHalf | null;
  locales: Array<{ locale: string; file: string }>;
  notes: NotesSection[];
}

/** The order in which modules publish, or the cycle that prevents one. */
export function orderModules(requires: ReadonlyMap<string, readonly string[]>): { order: string[] } | { cycle: string[] } {
  const order: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const visit = (n: string): string[] | null => {
    if (state.get(n) === "done") return null;
    if (state.get(n) === "visiting") return [...stack.slice(stack.indexOf(n)), n];
    state.set(n, "visiting");
    stack.push(n);
    for (const d of [...(requires.get(n) ?? [])].sort()) {
      const c = visit(d);
      if (c) return c;
    }
    stack.pop();
    state.set(n, "done");
    order.push(n);
    return null;
  };
  for (const n of [...requires.keys()].sort()) {
    const c = visit(n);
    if (c) return { cycle: c };
  }
  return { order };
}

export interface PlanInput {
  project: ProjectRef;
  /** The checked-out commit. */
  treeDir: string;
  /** The pushed tag (`v1.2.3` or `refs/tags/v1.2.3`). */
  tag: string;
  commit: string;
}

/** Plan a publish (see the file comment); throws PlanRefused with every problem found. */
export function planModules(core: Core, input: PlanInput): ModulePlan {
  const version = tagVersion(input.tag);
  if (!version) throw new PlanRefused([`the tag "${input.tag}" is not v<semver> (like v1.2.0)`]);
  const root = path.join(input.treeDir, MODULES_DIR);
  if (!hasModulesTree(input.treeDir)) throw new PlanRefused([`the commit has no ${MODULES_DIR}/ directory`]);
  const problems: string[] = [];
  const log: string[] = [];
  const dirs = readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory() || e.isSymbolicLink())
    .map((e) => e.name)
    .sort();
  if (dirs.length === 0) throw new PlanRefused([`${MODULES_DIR}/ holds no module directory`]);
  if (dirs.length > MAX_MODULES) throw new PlanRefused([`${MODULES_DIR}/ holds ${dirs.length} directories; at most ${MAX_MODULES} modules publish from one tag`]);
  const slug = input.project.slug;
  const scope = core.config.npmScope;
  const valid: string[] = [];
  for (const name of dirs) {
    const rel = `${MODULES_DIR}/${name}`;
    if (isLink(path.join(root, name))) problems.push(`${rel} is a symbolic link, not a directory`);
    else if (!MODULE_NAME.test(name) || crateNameOf(slug, name).length > 64) {
      problems.push(`${rel}: a module name is lower-case letters, digits and '-', starting with a letter, and "${crateNameOf(slug, name)}" must fit in 64 characters`);
    } else valid.push(name);
  }
  const has = (name: string, file: string) => existsSync(path.join(root, name, file)) || isLink(path.join(root, name, file));
  const crates = new Set(valid.filter((n) => has(n, "Cargo.toml")));
  const layers = new Set(valid.filter((n) => has(n, "package.json")));

  const read: ReadModule[] = [];
  for (const name of valid) {
    const dir = path.join(root, name);
    const rel = `${MODULES_DIR}/${name}`;
    const links: string[] = [];
    linksIn(dir, rel, links);
    for (const l of links) problems.push(`${l} is a symbolic link; a module's files must be regular files`);
    const ctx: HalfContext = { module: name, crates, layers, project: slug, scope, version };
    const cargoText = readRegular(input.treeDir, `${rel}/Cargo.toml`, MAX_FILE_BYTES, problems);
    const npmText = readRegular(input.treeDir, `${rel}/package.json`, MAX_FILE_BYTES, problems);
    let crate = cargoText === null ? null : readCrateHalf(cargoText, ctx);
    let layer = npmText === null ? null : readLayerHalf(npmText, ctx);
    for (const [half, label] of [
      [crate, "Cargo.toml"],
      [layer, "package.json"],
    ] as const) {
      if (!half) continue;
      problems.push(...half.problems);
      log.push(...half.notes);
      if (half.leftOut) log.push(`${rel}: no ${label === "Cargo.toml" ? "crate" : "layer"} published: ${half.leftOut}`);
      else if (half.declaredVersion !== null && half.declaredVersion !== version) log.push(`${rel}/${label}: version ${half.declaredVersion} published as ${version} (the tag)`);
    }
    if (crate?.leftOut) crate = null;
    if (layer?.leftOut) layer = null;
    if (!crate && !layer) {
      if (cargoText === null && npmText === null) problems.push(`${rel} has neither a Cargo.toml nor a package.json`);
      continue;
    }
    const locales: Array<{ locale: string; file: string }> = [];
    const localeDir = path.join(dir, "locales");
    if (existsSync(localeDir) && lstatSync(localeDir).isDirectory()) {
      for (const f of readdirSync(localeDir).sort()) {
        if (!f.endsWith(".json")) continue;
        const tag = canonicalLocale(f.slice(0, -5));
        if (!tag) {
          problems.push(`${rel}/locales/${f}: "${f.slice(0, -5)}" is not a locale tag (like en or pt-BR)`);
          continue;
        }
        const text = readRegular(input.treeDir, `${rel}/locales/${f}`, MAX_LOCALE_BYTES, problems);
        if (text === null) continue;
        try {
          const tree = JSON.parse(text) as unknown;
          if (typeof tree !== "object" || tree === null || Array.isArray(tree)) throw new Error("not an object");
          if (locales.some((l) => l.locale === tag)) problems.push(`${rel}/locales/${f}: a second file for the locale ${tag}`);
          else locales.push({ locale: tag, file: `${rel}/locales/${f}` });
        } catch (e) {
          problems.push(`${rel}/locales/${f} is not a JSON object: ${(e as Error).message}`);
        }
      }
    }
    const changelog = readRegular(input.treeDir, `${rel}/CHANGELOG.md`, MAX_FILE_BYTES, problems);
    const notes = changelog === null ? [] : parseChangelog(changelog).filter((s) => Bun.semver.order(s.version, version) <= 0);
    if (changelog !== null && !notes.some((n) => n.version === version)) log.push(`${rel}/CHANGELOG.md has no "## ${version}" section`);
    read.push({ name, crate, layer, locales: sourceFirst(locales), notes });
  }

  const requires = new Map(read.map((m) => [m.name, [...new Set([...(m.crate?.requires ?? []), ...(m.layer?.requires ?? [])])].sort()]));
  // A dependency on a sibling whose half is left out cannot resolve.
  for (const m of read) {
    for (const r of m.crate?.requires ?? []) if (!read.find((x) => x.name === r)?.crate) problems.push(`${MODULES_DIR}/${m.name}'s crate depends on ${r}, which publishes no crate`);
    for (const r of m.layer?.requires ?? []) if (!read.find((x) => x.name === r)?.layer) problems.push(`${MODULES_DIR}/${m.name}'s layer depends on ${r}, which publishes no layer`);
  }
  const ordered = orderModules(requires);
  if ("cycle" in ordered) problems.push(`the modules depend on each other in a cycle: ${ordered.cycle.join(" → ")}`);
  const order = "order" in ordered ? ordered.order : read.map((m) => m.name);

  const modules: PlannedModule[] = [];
  for (const name of order) {
    const m = read.find((x) => x.name === name)!;
    const half = (h: ReadHalf | null, registry: "cargo" | "npm"): PlannedHalf | null => {
      if (!h) return null;
      const pkgName = registry === "cargo" ? crateNameOf(slug, name) : layerNameOf(scope, name);
      const part = registry === "cargo" ? "crate" : "layer";
      const claim = claimProblem(core, input.project, registry, pkgName);
      let skip = false;
      if (claim) problems.push(claim);
      else if (isPublished(core, registry, pkgName, version)) {
        const by = releasedBy(core, input.project.id, name, part, version);
        if (by === input.commit) {
          skip = true;
          log.push(`${pkgName}@${version} was published by this tag already: skipped`);
        } else problems.push(`${pkgName}@${version} is already published${by ? ` (from commit ${by.slice(0, 12)})` : ""}; a tag publishes a new version`);
      }
      return { name: pkgName, manifest: h.manifest, requires: h.requires, skip };
    };
    modules.push({
      name,
      dir: `${MODULES_DIR}/${name}`,
      description: m.crate?.description || m.layer?.description || "",
      crate: half(m.crate, "cargo"),
      layer: half(m.layer, "npm"),
      requires: requires.get(name) ?? [],
      locales: m.locales,
      notes: m.notes,
    });
  }
  if (problems.length > 0) throw new PlanRefused(problems);
  return { tag: input.tag.replace(/^refs\/tags\//, ""), version, commit: input.commit, modules, log };
}

/** `en` first when shipped (the usual source locale), then the others in order. */
function sourceFirst<T extends { locale: string }>(locales: T[]): T[] {
  return [...locales.filter((l) => l.locale === "en"), ...locales.filter((l) => l.locale !== "en")];
}
