/**
 * A module's two halves as the plan reads them and as ops rewrites them for publishing.
 *
 * Crate half (`modules/<name>/Cargo.toml`): the package is renamed `<project>-<name>` and gets
 * the tag's version. A dependency on a sibling module's crate — by path (`{ path = "../alpha" }`)
 * or by its published name (`<project>-alpha`) — becomes a registry dependency on ops's registry
 * at the tag's version (`{ package = "<project>-alpha", version = "<v>", registry = "ops" }`),
 * keeping its key, so the code that says `alpha::` compiles unchanged. A sibling dev-dependency
 * by path alone is dropped, as `cargo package` drops path dev-dependencies. Any other path
 * dependency, and values inherited from a workspace, are refused: a published crate must stand
 * alone. Every other dependency comes from crates.io: one that names a registry index, a registry
 * or a git repository is refused, so nothing the repository writes sends `cargo package` to a
 * host of its choosing (decision 0500). `[patch]` and `[replace]` are left out, each noted in the
 * plan's log: cargo publishes neither, and it would fetch a patch's source while it resolves.
 * `cargo-features` is refused: a published crate builds with a stable cargo.
 *
 * npm half (`modules/<name>/package.json`, the "layer"): renamed `@<scope>/<name>` with the tag's
 * version; a dependency on a sibling's layer — by its name, or `file:`/`link:`/`workspace:` to
 * `../<sibling>` — becomes `^<v>` of `@<scope>/<sibling>` (an `npm:` alias when its key differs).
 * Other `file:`/`link:` specs are refused: installers outside the repository cannot follow them.
 */
import path from "node:path";
import { stringifyToml } from "./toml";

/** The registry name sibling dependencies use at package time (ops's own cargo registry). */
export const CARGO_REGISTRY = "ops";

export interface HalfContext {
  /** The module's name (its directory). */
  module: string;
  /** Sibling modules with a crate half / a layer, by module name. */
  crates: ReadonlySet<string>;
  layers: ReadonlySet<string>;
  project: string;
  scope: string;
  version: string;
}

export interface ReadHalf {
  /** The rewritten manifest text. */
  manifest: string;
  /** The version the file declared (null when it declared none or inherited it). */
  declaredVersion: string | null;
  description: string;
  /** Sibling modules this half depends on (for the order and `requires`). */
  requires: string[];
  /** Left out on purpose (`publish = false`, `"private": true`): why. */
  leftOut: string | null;
  problems: string[];
  /** What the rewrite left out of the manifest, for the plan's log. */
  notes: string[];
}

type Table = Record<string, unknown>;

function isTable(v: unknown): v is Table {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

export const crateNameOf = (project: string, module: string) => `${project}-${module}`;
export const layerNameOf = (scope: string, module: string) => `${scope}/${module}`;

/** The sibling a relative path names (`../alpha` from `modules/beta`), or null. */
function siblingOfPath(module: string, rel: string): string | null {
  const resolved = path.posix.normalize(path.posix.join("modules", module, rel.replace(/\\/g, "/"))).replace(/\/+$/, "");
  const m = /^modules\/([^/]+)$/.exec(resolved);
  return m && m[1] !== module ? m[1] : null;
}

const DEP_TABLES = ["dependencies", "dev-dependencies", "build-dependencies"] as const;

/** Every dependency table of a Cargo.toml: top level and per target, with their kind. */
function depTables(doc: Table): Array<{ where: string; kind: (typeof DEP_TABLES)[number]; table: Table }> {
  const out: Array<{ where: string; kind: (typeof DEP_TABLES)[number]; table: Table }> = [];
  for (const kind of DEP_TABLES) if (isTable(doc[kind])) out.push({ where: `[${kind}]`, kind, table: doc[kind] as Table });
  if (isTable(doc.target)) {
    for (const [cfg, t] of Object.entries(doc.target)) {
      if (!isTable(t)) continue;
      for (const kind of DEP_TABLES) if (isTable(t[kind])) out.push({ where: `[target.${cfg}.${kind}]`, kind, table: t[kind] as Table });
    }
  }
  return out;
}

/** Read and rewrite a crate half's Cargo.toml (see the file comment). */
export function readCrateHalf(text: string, ctx: HalfContext): ReadHalf {
  const problems: string[] = [];
  const file = `modules/${ctx.module}/Cargo.toml`;
  let doc: Table;
  try {
    doc = Bun.TOML.parse(text) as Table;
  } catch (e) {
    return { manifest: "", declaredVersion: null, description: "", requires: [], leftOut: null, problems: [`${file} is not valid TOML: ${(e as Error).message}`], notes: [] };
  }
  const pkg = doc.package;
  if (!isTable(pkg)) return { manifest: "", declaredVersion: null, description: "", requires: [], leftOut: null, problems: [`${file} has no [package] table`], notes: [] };
  if (pkg.publish === false || (Array.isArray(pkg.publish) && pkg.publish.length === 0)) {
    return { manifest: "", declaredVersion: null, description: "", requires: [], leftOut: `${file} says publish = false`, problems: [], notes: [] };
  }
  if (isTable(doc.workspace)) problems.push(`${file} declares a [workspace]; a module's crate is packaged on its own`);
  const declaredVersion = typeof pkg.version === "string" ? pkg.version : null;
  for (const [k, v] of Object.entries(pkg)) {
    if (k !== "version" && isTable(v) && v.workspace === true) problems.push(`${file} inherits package.${k} from a workspace; a module's crate must stand alone (write the value)`);
  }
  problems.push(...pathsOutside(doc, file));
  if (doc["cargo-features"] !== undefined) problems.push(`${file} names cargo-features, which only a nightly cargo accepts; a module's crate must build with a stable cargo`);
  const notes: string[] = [];
  for (const k of ["patch", "replace"]) {
    if (doc[k] === undefined) continue;
    delete doc[k];
    notes.push(`${file}: [${k}] left out: a published crate is resolved without it, as cargo publishes it`);
  }
  pkg.name = crateNameOf(ctx.project, ctx.module);
  pkg.version = ctx.version;
  // The registry list names the client's registries, not ops's: packaging ignores it.
  delete pkg.publish;

  const requires = new Set<string>();
  for (const { where, kind, table } of depTables(doc)) {
    for (const [depKey, raw] of Object.entries(table)) {
      const spec: Table = isTable(raw) ? { ...raw } : { version: raw };
      if (spec.workspace === true) {
        problems.push(`${file} ${where} ${depKey} is inherited from a workspace; a module's crate must stand alone`);
        continue;
      }
      const realName = typeof spec.package === "string" ? spec.package : depKey;
      let sibling: string | null = null;
      if (typeof spec.path === "string") {
        sibling = siblingOfPath(ctx.module, spec.path);
        if (!sibling || !ctx.crates.has(sibling)) {
          if (kind === "dev-dependencies" && spec.version === undefined) {
            delete table[depKey];
            continue;
          }
          problems.push(`${file} ${where} ${depKey} depends on the path "${spec.path}", which is not a sibling module's crate; a published crate cannot depend on a path`);
          continue;
        }
      } else {
        for (const s of ctx.crates) if (s !== ctx.module && crateNameOf(ctx.project, s) === realName) sibling = s;
      }
      if (!sibling) {
        const elsewhere = elsewhereOf(spec);
        if (elsewhere) problems.push(`${file} ${where} ${depKey} ${elsewhere}; a module's crate depends on crates.io and its sibling modules only`);
        continue;
      }
      if (kind === "dev-dependencies" && typeof spec.path === "string" && spec.version === undefined) {
        delete table[depKey];
        continue;
      }
      for (const k of ["path", "registry-index", "git", "branch", "tag", "rev"]) delete spec[k];
      spec.package = crateNameOf(ctx.project, sibling);
      spec.version = ctx.version;
      spec.registry = CARGO_REGISTRY;
      table[depKey] = spec;
      if (kind !== "dev-dependencies") requires.add(sibling);
    }
  }
  return {
    manifest: stringifyToml(doc),
    declaredVersion,
    description: typeof pkg.description === "string" ? pkg.description : "",
    requires: [...requires].sort(),
    leftOut: null,
    problems,
    notes,
  };
}

/** Where a dependency that is not a sibling says it comes from, when that is not crates.io. */
function elsewhereOf(spec: Table): string | null {
  if (spec["registry-index"] !== undefined) return `names the registry index ${JSON.stringify(spec["registry-index"])}`;
  if (spec.registry !== undefined) return `names the registry ${JSON.stringify(spec.registry)}`;
  if (spec.git !== undefined) return `is a git dependency (${JSON.stringify(spec.git)})`;
  return null;
}

/**
 * Manifest keys that name files cargo reads into the crate (`readme`, `license-file`, a build
 * script, targets' paths, `include`): each must be a relative path inside the module's folder.
 * cargo copies a `readme` or `license-file` from anywhere (`/etc/shadow`, `../../../keys`) into
 * the package; the sandbox `cargo package` runs in (pack.ts) sees only the staged module and the
 * host's system trees, and a value leaving the folder is refused before it gets there.
 */
function pathsOutside(doc: Table, file: string): string[] {
  const out: string[] = [];
  const check = (where: string, v: unknown) => {
    if (typeof v !== "string") return;
    const p = v.replace(/\\/g, "/");
    const norm = path.posix.normalize(p);
    if (path.posix.isAbsolute(p) || /^[A-Za-z]:/.test(p) || norm === ".." || norm.startsWith("../")) out.push(`${file} ${where} is "${v}", outside the module's folder; a module's files must be inside modules/<name>`);
  };
  const pkg = isTable(doc.package) ? doc.package : {};
  for (const k of ["readme", "license-file", "build", "workspace"]) check(`package.${k}`, pkg[k]);
  for (const k of ["include", "exclude"]) if (Array.isArray(pkg[k])) (pkg[k] as unknown[]).forEach((v, i) => check(`package.${k}[${i}]`, v));
  if (isTable(doc.lib)) check("lib.path", doc.lib.path);
  for (const k of ["bin", "example", "test", "bench"]) {
    const list = doc[k];
    if (Array.isArray(list)) list.forEach((t, i) => isTable(t) && check(`[[${k}]] ${i + 1} path`, t.path));
  }
  return out;
}

const NPM_DEP_FIELDS = ["dependencies", "peerDependencies", "optionalDependencies", "devDependencies"] as const;

/** The sibling an npm dependency names (by its layer name or a local spec), or null. */
function siblingOfNpm(depKey: string, spec: string, ctx: HalfContext): string | null {
  for (const s of ctx.layers) if (s !== ctx.module && layerNameOf(ctx.scope, s) === depKey) return s;
  const local = /^(?:file|link):(.+)$/.exec(spec);
  if (local) {
    const s = siblingOfPath(ctx.module, local[1]);
    return s && ctx.layers.has(s) ? s : null;
  }
  return null;
}

/** Read and rewrite a layer's package.json (see the file comment). */
export function readLayerHalf(text: string, ctx: HalfContext): ReadHalf {
  const problems: string[] = [];
  const file = `modules/${ctx.module}/package.json`;
  let pj: Table;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!isTable(parsed)) throw new Error("not an object");
    pj = parsed;
  } catch (e) {
    return { manifest: "", declaredVersion: null, description: "", requires: [], leftOut: null, problems: [`${file} is not a JSON object: ${(e as Error).message}`], notes: [] };
  }
  if (pj.private === true) return { manifest: "", declaredVersion: null, description: "", requires: [], leftOut: `${file} says "private": true`, problems: [], notes: [] };
  const declaredVersion = typeof pj.version === "string" ? pj.version : null;
  pj.name = layerNameOf(ctx.scope, ctx.module);
  pj.version = ctx.version;
  const requires = new Set<string>();
  for (const field of NPM_DEP_FIELDS) {
    const deps = pj[field];
    if (deps === undefined) continue;
    if (!isTable(deps)) {
      problems.push(`${file} ${field} must be an object`);
      continue;
    }
    for (const [depKey, raw] of Object.entries(deps)) {
      const spec = typeof raw === "string" ? raw : "";
      const sibling = siblingOfNpm(depKey, spec, ctx);
      if (!sibling) {
        if (/^(?:file|link|workspace):/.test(spec) && field !== "devDependencies") {
          problems.push(`${file} ${field}.${depKey} is "${spec}", which is not a sibling module's layer; installers outside the repository cannot follow it`);
        } else if (/^(?:file|link|workspace):/.test(spec)) {
          delete deps[depKey];
        }
        continue;
      }
      const target = layerNameOf(ctx.scope, sibling);
      deps[depKey] = depKey === target ? `^${ctx.version}` : `npm:${target}@^${ctx.version}`;
      if (field !== "devDependencies") requires.add(sibling);
    }
  }
  return {
    manifest: `${JSON.stringify(pj, null, 2)}\n`,
    declaredVersion,
    description: typeof pj.description === "string" ? pj.description : "",
    requires: [...requires].sort(),
    leftOut: null,
    problems,
    notes: [],
  };
}
