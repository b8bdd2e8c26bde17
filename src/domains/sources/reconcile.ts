/**
 * Reconciling an `ops.toml` into the project's resources, as the person who asked for the scan:
 * every declared service in every environment of the project (source with its context, Dockerfile
 * and base image, port and health from the file; replicas, limits and env group from its
 * operational block), one domain resource per environment with hosts (named after, and routed
 * to, the first declared service), and the release steps recorded on the source (a step is not a
 * resource type). Each write goes through the resources domain (its checks, its audit row) and is
 * reported as created, updated or refused with the reason; rows the file no longer declares are
 * reported as undeclared and left alone. A write is refused, never attempted, in an environment
 * where the caller lacked `resources.write` when asking.
 */
import { and, eq } from "drizzle-orm";
import { isDeepStrictEqual } from "node:util";
import type { Core, ProjectRef } from "../../core/core";
import type { AuditActor } from "../../core/audit";
import { tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { findResource, listOfTypeInProject, putResourceAs, specOf, type ResourceType } from "../resources/service";
import { operationalFor, type OpsDeclaration, type ServiceDeclaration } from "./ops-toml";
import { sourceSteps } from "./tables";
import type { Reconciled, ReconciledRow } from "./model";

export interface ReconcileInput {
  project: ProjectRef;
  repo: string;
  decl: OpsDeclaration;
  /** The scanned ref, and whether it is the default branch (else new services build from it). */
  gitRef: string;
  defaultBranch: boolean;
  commitSha: string;
  /** Environments where the caller held resources.write when asking. */
  writable: ReadonlySet<string>;
  actor: AuditActor;
  /** The connected source (steps are recorded on it); null for an unconnected repository. */
  sourceId: string | null;
}

type Spec = Record<string, unknown>;

function row(kind: ReconciledRow["kind"], name: string, environment: string | null, reason: string | null = null): ReconciledRow {
  return { kind, name, environment, reason };
}

function withoutUndefined(spec: Spec): Spec {
  return Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined));
}

/** The service spec the file asks for over `current` (null = new), or a reason it cannot. */
function desiredService(input: ReconcileInput, s: ServiceDeclaration, environment: string, current: Spec | null): Spec | string {
  if (current && typeof current.image === "string" && current.image !== "") return `runs the image ${current.image}; ops.toml does not turn it into a build from ${input.repo}`;
  const curSource = (current?.source ?? null) as Spec | null;
  if (curSource && curSource.repo !== input.repo) return `builds from ${String(curSource.repo)}, not ${input.repo}`;
  const source: Spec = { ...(curSource ?? {}), repo: input.repo };
  if (!curSource && !input.defaultBranch) source.branch = input.gitRef;
  if (s.context !== ".") source.context = s.context;
  else delete source.context;
  if (s.dockerfile) source.dockerfile = s.dockerfile;
  else delete source.dockerfile;
  if (s.base) source.base = s.base;
  else delete source.base;
  const op = operationalFor(input.decl, environment, s.name);
  return withoutUndefined({
    ...(current ?? {}),
    source,
    port: s.keys.includes("port") ? s.port : current?.port,
    health_check_path: s.keys.includes("health") ? s.health : current?.health_check_path,
    placement: s.placement ?? undefined,
    replicas: op.replicas ?? current?.replicas,
    limits: op.limits ?? current?.limits,
    env_group: op.env_group ?? current?.env_group,
  });
}

async function write(core: Core, input: ReconcileInput, out: Reconciled, kind: "service" | "domain", name: string, environment: string, desired: Spec | string, current: Spec | null): Promise<void> {
  if (typeof desired === "string") {
    out.refused.push(row(kind, name, environment, desired));
    return;
  }
  if (current && isDeepStrictEqual(current, desired)) return;
  if (!input.writable.has(environment)) {
    out.refused.push(row(kind, name, environment, `${input.actor.actor} lacked resources.write in ${environment} when the scan was asked for`));
    return;
  }
  try {
    const res = await putResourceAs(core, { project: input.project, type: kind, name, environment }, { spec: desired }, input.actor);
    (res.created ? out.created : out.updated).push(row(kind, name, environment));
  } catch (e) {
    if (!(e instanceof OpsError) || e.code === "internal") throw e;
    out.refused.push(row(kind, name, environment, e.message));
  }
}

/** Reconcile the declaration; returns what happened (also written to the log lines given). */
export async function reconcile(core: Core, input: ReconcileInput, say: (line: string) => void): Promise<Reconciled> {
  const out: Reconciled = { created: [], updated: [], refused: [], undeclared: [] };
  const { project, decl } = input;
  const placeOf = (environment: string) => ({ project, environment });
  const currentSpec = (type: ResourceType, name: string, environment: string): Spec | null => {
    const r = findResource(core.db, placeOf(environment), type, name);
    return r ? specOf<Spec>(r) : null;
  };

  for (const environment of project.environments) {
    for (const s of decl.services) {
      const current = currentSpec("service", s.name, environment);
      await write(core, input, out, "service", s.name, environment, desiredService(input, s, environment, current), current);
    }
  }
  const first = decl.services[0];
  for (const [environment, hosts] of Object.entries(decl.domains)) {
    if (!first) break;
    if (!project.environments.includes(environment)) {
      out.refused.push(row("domain", first.name, environment, `the project has no environment ${environment}`));
      continue;
    }
    const current = currentSpec("domain", first.name, environment);
    await write(core, input, out, "domain", first.name, environment, withoutUndefined({ ...(current ?? {}), hosts, service: first.name }), current);
  }

  // Rows from this repository the file no longer declares: reported, never touched.
  const declared = new Set(decl.services.map((s) => s.name));
  const repoServices = new Set<string>();
  for (const r of listOfTypeInProject(core.db, project.id, "service")) {
    if (specOf<Spec & { source?: { repo?: string } }>(r).source?.repo !== input.repo) continue;
    repoServices.add(r.name);
    if (!declared.has(r.name)) out.undeclared.push(row("service", r.name, r.environment));
  }
  for (const r of listOfTypeInProject(core.db, project.id, "domain")) {
    const spec = specOf<{ service?: string }>(r);
    if (!spec.service || !repoServices.has(spec.service)) continue;
    if (!(first && r.name === first.name && r.environment !== null && decl.domains[r.environment])) out.undeclared.push(row("domain", r.name, r.environment));
  }

  if (input.sourceId) reconcileSteps(core, input, out);
  for (const k of ["created", "updated", "refused", "undeclared"] as const) {
    for (const r of out[k]) say(`${k}: ${r.kind} ${r.name}${r.environment ? ` (${r.environment})` : ""}${r.reason ? `: ${r.reason}` : ""}`);
  }
  return out;
}

/** Record the declared steps on the source: new, changed, and no longer declared (kept, flagged). */
function reconcileSteps(core: Core, input: ReconcileInput, out: Reconciled): void {
  const sourceId = input.sourceId as string;
  tx(core.db, (t) => {
    const now = core.clock.now();
    const existing = new Map(t.select().from(sourceSteps).where(eq(sourceSteps.sourceId, sourceId)).all().map((r) => [r.name, r]));
    for (const step of input.decl.steps) {
      const spec = JSON.stringify({ service: step.service, command: step.command });
      const cur = existing.get(step.name);
      if (!cur) {
        t.insert(sourceSteps).values({ sourceId, name: step.name, spec, declared: true, commitSha: input.commitSha, updatedAt: now }).run();
        out.created.push(row("step", step.name, null));
      } else if (cur.spec !== spec || !cur.declared) {
        t.update(sourceSteps).set({ spec, declared: true, commitSha: input.commitSha, updatedAt: now }).where(and(eq(sourceSteps.sourceId, sourceId), eq(sourceSteps.name, step.name))).run();
        out.updated.push(row("step", step.name, null));
      }
      existing.delete(step.name);
    }
    for (const cur of existing.values()) {
      if (cur.declared) t.update(sourceSteps).set({ declared: false, updatedAt: now }).where(and(eq(sourceSteps.sourceId, sourceId), eq(sourceSteps.name, cur.name))).run();
      out.undeclared.push(row("step", cur.name, null));
    }
  });
}
