/**
 * cargo's publish metadata, built from the Cargo.toml `cargo package` normalised into the crate,
 * as cargo itself builds it for `cargo publish` (the registry web API's "new crate" JSON): the
 * in-process publish sends the same framing cargo sends, so the registry checks it the same way.
 */
import { tarMember } from "./tar";

/** How cargo names crates.io in the metadata of a crate published to another registry. */
const CRATES_IO_INDEX = "https://github.com/rust-lang/crates.io-index";

type Table = Record<string, unknown>;

function isTable(v: unknown): v is Table {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const strOrNull = (v: unknown) => (typeof v === "string" ? v : null);
const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/** cargo's display of a version requirement: a bare version means a caret requirement. */
export function normaliseReq(req: string): string {
  return req
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "")
    .map((c) => (/^[0-9]/.test(c) ? `^${c}` : c))
    .join(", ");
}

interface DepOut {
  name: string;
  version_req: string;
  features: string[];
  optional: boolean;
  default_features: boolean;
  target: string | null;
  kind: "normal" | "dev" | "build";
  registry: string | null;
  explicit_name_in_toml: string | null;
}

function depsOf(table: unknown, kind: DepOut["kind"], target: string | null, ownIndex: string): DepOut[] {
  if (!isTable(table)) return [];
  const out: DepOut[] = [];
  for (const [key, raw] of Object.entries(table)) {
    const d: Table = isTable(raw) ? raw : { version: raw };
    const version = typeof d.version === "string" ? d.version : "*";
    const index = strOrNull(d["registry-index"]);
    const pkg = strOrNull(d.package);
    out.push({
      name: pkg ?? key,
      version_req: normaliseReq(version),
      features: strings(d.features),
      optional: d.optional === true,
      default_features: d["default-features"] !== false && d.default_features !== false,
      target,
      kind,
      registry: index === null ? CRATES_IO_INDEX : index === ownIndex ? null : index,
      explicit_name_in_toml: pkg ? key : null,
    });
  }
  return out;
}

/**
 * The metadata of a packaged crate. `ownIndex` is ops's sparse index URL (`sparse+<public>/cargo/`):
 * a dependency on it is `registry: null` (this registry), as cargo writes it.
 */
export function crateMetadata(manifestText: string, crate: Uint8Array, ownIndex: string): Record<string, unknown> {
  const doc = Bun.TOML.parse(manifestText) as Table;
  const pkg = (doc.package ?? {}) as Table;
  const name = String(pkg.name);
  const vers = String(pkg.version);
  const deps: DepOut[] = [
    ...depsOf(doc.dependencies, "normal", null, ownIndex),
    ...depsOf(doc["dev-dependencies"], "dev", null, ownIndex),
    ...depsOf(doc["build-dependencies"], "build", null, ownIndex),
  ];
  if (isTable(doc.target)) {
    for (const [cfg, t] of Object.entries(doc.target)) {
      if (!isTable(t)) continue;
      deps.push(...depsOf(t.dependencies, "normal", cfg, ownIndex), ...depsOf(t["dev-dependencies"], "dev", cfg, ownIndex), ...depsOf(t["build-dependencies"], "build", cfg, ownIndex));
    }
  }
  const features: Record<string, string[]> = {};
  if (isTable(doc.features)) for (const [k, v] of Object.entries(doc.features)) features[k] = strings(v);
  const readmeFile = strOrNull(pkg.readme);
  const readmeBytes = readmeFile ? tarMember(crate, `${name}-${vers}/${readmeFile}`) : null;
  return {
    name,
    vers,
    deps,
    features,
    authors: strings(pkg.authors),
    description: strOrNull(pkg.description),
    documentation: strOrNull(pkg.documentation),
    homepage: strOrNull(pkg.homepage),
    readme: readmeBytes ? new TextDecoder().decode(readmeBytes) : null,
    readme_file: readmeFile,
    keywords: strings(pkg.keywords),
    categories: strings(pkg.categories),
    license: strOrNull(pkg.license),
    license_file: strOrNull(pkg["license-file"]),
    repository: strOrNull(pkg.repository),
    badges: {},
    links: strOrNull(pkg.links),
    rust_version: strOrNull(pkg["rust-version"]),
  };
}
