/**
 * What a build resolved from ops's registries, read from the lockfiles in its build context:
 * `package-lock.json` (lockfileVersion 1 to 3: packages whose `resolved` URL is under
 * `<public>/npm/`) and `Cargo.lock` (packages whose `source` is `sparse+<public>/cargo/`). These
 * are the `consumers` of the modules' halves. Unreadable or oversized lockfiles, and links, give nothing.
 */
import { PathRefused, readInside } from "../../core/inside";
import type { Resolution } from "./store";

const MAX_LOCKFILE_BYTES = 32 * 1024 * 1024;

/** A lockfile at the root of the context, read without following a link (the build may have made one). */
function readSmall(dir: string, name: string): string | null {
  try {
    return readInside(dir, name, { what: "the lockfile", tree: "the build context", maxBytes: MAX_LOCKFILE_BYTES })?.toString("utf8") ?? null;
  } catch (e) {
    if (e instanceof PathRefused) return null;
    throw e;
  }
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** npm packages of a package-lock.json resolved from `npmBase` (`<public>/npm/`). */
export function npmResolutions(text: string, npmBase: string): Resolution[] {
  let lock: unknown;
  try {
    lock = JSON.parse(text);
  } catch {
    return [];
  }
  if (!isObj(lock)) return [];
  const out: Resolution[] = [];
  const take = (name: string, entry: Json) => {
    if (typeof entry.resolved === "string" && entry.resolved.startsWith(npmBase) && typeof entry.version === "string") out.push({ registry: "npm", name, version: entry.version });
  };
  if (isObj(lock.packages)) {
    for (const [key, entry] of Object.entries(lock.packages)) {
      const i = key.lastIndexOf("node_modules/");
      if (i < 0 || !isObj(entry)) continue;
      take(typeof entry.name === "string" ? entry.name : key.slice(i + "node_modules/".length), entry);
    }
  } else if (isObj(lock.dependencies)) {
    const walk = (deps: Json) => {
      for (const [name, entry] of Object.entries(deps)) {
        if (!isObj(entry)) continue;
        take(name, entry);
        if (isObj(entry.dependencies)) walk(entry.dependencies);
      }
    };
    walk(lock.dependencies);
  }
  return out;
}

/** Crates of a Cargo.lock whose source is ops's sparse registry (`sparse+<public>/cargo/`). */
export function cargoResolutions(text: string, sparseIndex: string): Resolution[] {
  let lock: Json;
  try {
    lock = Bun.TOML.parse(text) as Json;
  } catch {
    return [];
  }
  const pkgs = Array.isArray(lock.package) ? lock.package : [];
  return pkgs
    .filter((p): p is Json => isObj(p) && p.source === sparseIndex && typeof p.name === "string" && typeof p.version === "string")
    .map((p) => ({ registry: "cargo" as const, name: p.name as string, version: p.version as string }));
}

/** Everything the lockfiles at the root of `dir` resolved from this ops (`publicUrl`). */
export function resolutionsIn(dir: string, publicUrl: string): Resolution[] {
  const npm = readSmall(dir, "package-lock.json");
  const cargo = readSmall(dir, "Cargo.lock");
  return [...(npm ? npmResolutions(npm, `${publicUrl}/npm/`) : []), ...(cargo ? cargoResolutions(cargo, `sparse+${publicUrl}/cargo/`) : [])];
}
