/**
 * Publishing a plan, one step at a time (document 2's publish steps `crates`, `layers`,
 * `locales`), in the plan's dependency order, through the registries' own publish code
 * in-process (`publishCargoInProcess`, `publishNpmInProcess`: the validation, audit row and
 * `package.published` event of a person's `cargo publish` / `npm publish`), then each module's
 * locale files as versions of its package bundle (translations' `ensurePackageBundle` and
 * `registerVersion`).
 *
 * Retry resumes: a half the ledger says this tag's commit already published is skipped and
 * reported, so a retry after a failure in `layers` publishes the layers without republishing the
 * crates. A locale file registers again harmlessly (values already there are not rewritten).
 * The module list, its `requires` and the notes are recorded when `locales` completes: a release
 * that did not go through every step does not change what `GET /modules` says.
 */
import path from "node:path";
import type { ProjectRef } from "../../core/core";
import { OpsError } from "../../core/errors";
import { PathRefused, readInside } from "../../core/inside";
import { cargoPublishBody, isPublished, publishCargoInProcess, publishNpmInProcess, type InProcessPublisher, type NpmPublishBody } from "../registries/service";
import { ensurePackageBundle, registerVersion } from "../translations/service";
import { packageCrate, packLayer, PackFailure, type PackContext } from "./pack";
import { tarMember } from "./tar";
import { crateMetadata } from "./metadata";
import { recordModuleSet, recordPart, releasedBy } from "./store";
import { MAX_LOCALE_BYTES, type ModulePlan, type PlannedModule } from "./plan";
import { createHash } from "node:crypto";

export interface PublishContext extends PackContext {
  project: ProjectRef;
  plan: ModulePlan;
  /** Publisher shown on the versions and the audit actor (the system, for a build). */
  by: Omit<InProcessPublisher, "project">;
  buildId: number | null;
}

export interface StepReport {
  published: string[];
  skipped: string[];
  /** One line for the step's timing note. */
  note: string;
}

export { PackFailure };

function note(r: Omit<StepReport, "note">, what: string): StepReport {
  const parts = [`${r.published.length} ${what} published`];
  if (r.skipped.length > 0) parts.push(`${r.skipped.length} already published by this tag (${r.skipped.join(", ")})`);
  return { ...r, note: parts.join("; ") };
}

/** True when this half is done for this tag: the plan marked it, or the ledger has it from this commit. */
function alreadyDone(ctx: PublishContext, m: PlannedModule, part: "crate" | "layer"): boolean {
  const half = part === "crate" ? m.crate : m.layer;
  if (half?.skip) return true;
  return releasedBy(ctx.core, ctx.project.id, m.name, part, ctx.plan.version) === ctx.plan.commit;
}

/** A registry refusal, as the step's failure. */
function refusal(name: string, e: unknown): never {
  if (e instanceof OpsError) throw new PackFailure(`the registry refused ${name}: ${e.message}`);
  throw e;
}

/** `crates`: package and publish every crate half in order. */
export async function publishCrates(ctx: PublishContext): Promise<StepReport> {
  const r = { published: [] as string[], skipped: [] as string[] };
  const { core, plan } = ctx;
  const ownIndex = `sparse+${core.config.publicUrl}/cargo/`;
  for (const m of plan.modules) {
    if (!m.crate) continue;
    const id = `${m.crate.name}@${plan.version}`;
    if (alreadyDone(ctx, m, "crate")) {
      ctx.log("info", `${id}: already published by this tag; skipped`);
      r.skipped.push(id);
      continue;
    }
    if (ctx.signal?.aborted) throw new PackFailure("cancelled", true);
    const { crate, manifest } = await packageCrate(ctx, plan, m);
    const metadata = crateMetadata(manifest, crate, ownIndex);
    try {
      await publishCargoInProcess(core, { project: ctx.project, ...ctx.by }, cargoPublishBody(metadata, crate));
    } catch (e) {
      refusal(id, e);
    }
    recordPart(core, { projectId: ctx.project.id, module: m.name, part: "crate", version: plan.version, registry: "cargo", packageName: m.crate.name, commit: plan.commit, buildId: ctx.buildId });
    ctx.log("info", `${id}: published to the cargo registry (${crate.byteLength} bytes)`);
    r.published.push(id);
  }
  return note(r, "crate(s)");
}

/** npm's publish document for a packed tarball (what libnpmpublish sends), from the tarball's own package.json. */
function npmBody(name: string, version: string, tarball: Uint8Array, base: string): NpmPublishBody {
  const pjBytes = tarMember(tarball, "package/package.json");
  if (!pjBytes) throw new PackFailure(`the packed ${name} has no package/package.json`);
  const pj = JSON.parse(new TextDecoder().decode(pjBytes)) as Record<string, unknown>;
  const shasum = createHash("sha1").update(tarball).digest("hex");
  const integrity = `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
  const file = `${name}-${version}.tgz`;
  // A prerelease does not become `latest` (npm asks for a tag for one); the registry gives the first version `latest` anyway.
  const tag = version.includes("-") ? "next" : "latest";
  return {
    _id: name,
    name,
    "dist-tags": { [tag]: version },
    versions: { [version]: { ...pj, _id: `${name}@${version}`, dist: { shasum, integrity, tarball: `${base}/npm/${encodeURIComponent(name)}/-/${path.basename(file)}` } } },
    _attachments: { [file]: { content_type: "application/octet-stream", data: Buffer.from(tarball).toString("base64"), length: tarball.byteLength } },
  };
}

/** `layers`: pack and publish every npm half in order. */
export async function publishLayers(ctx: PublishContext): Promise<StepReport> {
  const r = { published: [] as string[], skipped: [] as string[] };
  const { core, plan } = ctx;
  for (const m of plan.modules) {
    if (!m.layer) continue;
    const id = `${m.layer.name}@${plan.version}`;
    if (alreadyDone(ctx, m, "layer")) {
      ctx.log("info", `${id}: already published by this tag; skipped`);
      r.skipped.push(id);
      continue;
    }
    if (ctx.signal?.aborted) throw new PackFailure("cancelled", true);
    const tarball = await packLayer(ctx, plan, m);
    try {
      await publishNpmInProcess(core, { project: ctx.project, ...ctx.by }, m.layer.name, npmBody(m.layer.name, plan.version, tarball, core.config.publicUrl));
    } catch (e) {
      refusal(id, e);
    }
    recordPart(core, { projectId: ctx.project.id, module: m.name, part: "layer", version: plan.version, registry: "npm", packageName: m.layer.name, commit: plan.commit, buildId: ctx.buildId });
    ctx.log("info", `${id}: published to the npm registry (${tarball.byteLength} bytes)`);
    r.published.push(id);
  }
  return note(r, "layer(s)");
}

/** The package a module's locale files follow: its layer when it has one (the locale files' usual reader), else its crate. */
export function bundlePackageOf(m: PlannedModule): { registry: "npm" | "cargo"; name: string } {
  return m.layer ? { registry: "npm", name: m.layer.name } : { registry: "cargo", name: m.crate!.name };
}

/** `locales`: register each module's locale files as the version of its package bundle, then record the module list. */
export async function publishLocales(ctx: PublishContext): Promise<StepReport> {
  const { core, plan, project } = ctx;
  const registered: string[] = [];
  for (const m of plan.modules) {
    if (m.locales.length === 0) continue;
    const pkg = bundlePackageOf(m);
    if (!isPublished(core, pkg.registry, pkg.name, plan.version)) throw new PackFailure(`${pkg.name}@${plan.version} is not published; its locale files cannot be registered`);
    let bundle;
    try {
      bundle = ensurePackageBundle(core, project, pkg.registry, pkg.name, ctx.by.actor, m.locales[0].locale);
    } catch (e) {
      refusal(`the translations bundle of ${pkg.name}`, e);
    }
    // The bundle's source locale first: its tree defines the keys the version ships.
    const source = bundle.sourceLocale;
    const order = [...m.locales.filter((l) => l.locale === source), ...m.locales.filter((l) => l.locale !== source)];
    for (const { locale, file } of order) {
      let tree: unknown;
      try {
        // Read inside the checkout without following a link out of it (src/core/inside.ts).
        const bytes = readInside(ctx.treeDir, file, { what: "the locale file", maxBytes: MAX_LOCALE_BYTES });
        if (!bytes) throw new Error("it is not in the commit");
        tree = JSON.parse(bytes.toString("utf8"));
      } catch (e) {
        if (e instanceof PathRefused) throw new PackFailure(e.message);
        throw new PackFailure(`${file} could not be read: ${(e as Error).message}`);
      }
      try {
        const res = registerVersion(core, project, String(bundle.id), { locale, tree, version: plan.version }, ctx.by.actor);
        ctx.log("info", `${pkg.name}@${plan.version} ${locale}: ${res.keys} key(s), ${res.written} value(s) written${res.skipped ? `, ${res.skipped} leaf/leaves skipped` : ""}`);
      } catch (e) {
        refusal(file, e);
      }
      recordPart(core, { projectId: project.id, module: m.name, part: `locale:${locale}`, version: plan.version, registry: pkg.registry, packageName: pkg.name, commit: plan.commit, buildId: ctx.buildId });
      registered.push(`${m.name}:${locale}`);
    }
  }
  recordModuleSet(core, project, plan, ctx.by.actor);
  ctx.log("info", `recorded ${plan.modules.length} module(s) at ${plan.version}`);
  return { published: registered, skipped: [], note: `${registered.length} locale file(s) registered; ${plan.modules.length} module(s) recorded` };
}

/** Every step in order (what a publish build runs after its plan). */
export async function publishModules(ctx: PublishContext): Promise<{ crates: StepReport; layers: StepReport; locales: StepReport }> {
  const crates = await publishCrates(ctx);
  const layers = await publishLayers(ctx);
  const locales = await publishLocales(ctx);
  return { crates, layers, locales };
}
