/**
 * The rules of the service, job and domain types: what their specs may name, when deleting
 * them is refused, and how they are observed. Databases and buckets have their own files.
 */
import { and, desc, eq, inArray, ne } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { iso } from "../../core/clock";
import { parseCron, nextCronRun } from "../../core/scheduler";
import { domainHosts, jobRuns, jobSchedules, resources } from "./tables";
import { extendKind, type WriteContext } from "./kinds";
import { findResource, listOfType, specOf, type ResourceRow } from "./rows";
import type { DomainSpec, JobSpec, ServiceSpec } from "./specs";
import { assertHostsClaimable, unroutedHosts } from "./domain-hosts";

function field(path: string, message: string): OpsError {
  return new OpsError("validation_failed", `${path}: ${message}`, { fields: [{ path, message }] });
}

/** 422 unless `group` names a secret-group of the same environment. */
/** What the certificates domain says of a domain's certificates. */
type DomainCertificates = (core: Core, row: ResourceRow) => { state: string; summary: string; detail: Record<string, unknown> } | null;

export function assertGroupExists(q: Queryable, ctx: WriteContext, group: string | null | undefined): void {
  if (!group) return;
  if (!findResource(q, { project: ctx.project, environment: ctx.environment }, "secret-group", group)) {
    throw field("spec.env_group", `no secret-group "${group}" in ${ctx.environment}`);
  }
}

/** Services and jobs of an environment that mount `group`. */
export function usersOfGroup(q: Queryable, projectId: string, environment: string | null, group: string): ResourceRow[] {
  const place = { project: { id: projectId } as never, environment };
  return [...listOfType(q, place, "service"), ...listOfType(q, place, "job")].filter((r) => specOf<{ env_group?: string | null }>(r).env_group === group);
}

/** A job run that is queued or running, or null. */
export function liveRun(q: Queryable, resourceId: string) {
  return q
    .select()
    .from(jobRuns)
    .where(and(eq(jobRuns.resourceId, resourceId), inArray(jobRuns.status, ["queued", "running"])))
    .get() ?? null;
}

export function installBuiltinKinds(core: Core): void {
  extendKind(core, "service", {
    validate(_core, q, ctx) {
      const spec = ctx.spec as ServiceSpec;
      if (!spec.source && !spec.image) throw field("spec", "a service needs a `source` or an `image`");
      if (spec.source && spec.image) throw field("spec", "give a service a `source` or an `image`, not both");
      assertGroupExists(q, ctx, spec.env_group);
    },
    refuseDelete(_core, q, row) {
      const routed = listOfType(q, { project: { id: row.projectId } as never, environment: row.environment }, "domain").filter((d) => specOf<DomainSpec>(d).service === row.name);
      if (routed.length > 0) return `Domain ${routed.map((d) => `"${d.name}"`).join(", ")} routes to service "${row.name}"; delete or repoint it first.`;
      if (row.statusState === "ready") return `Service "${row.name}" is running; scale it to 0 replicas (and observe it) before deleting, so nothing is left running unmanaged.`;
      return null;
    },
    async observe(c, row) {
      const spec = specOf<ServiceSpec>(row);
      const observer = c.locals.get("resources.service-observer") as ((core: Core, row: ResourceRow) => Promise<import("./rows").Observed>) | undefined;
      if (observer) return observer(c, row);
      return {
        state: "pending",
        summary: row.restartNote ?? "not deployed",
        detail: { replicas: spec.replicas ?? 1, restart_required: row.restartNote },
      };
    },
  });

  extendKind(core, "job", {
    validate(_core, q, ctx) {
      const spec = ctx.spec as JobSpec;
      assertGroupExists(q, ctx, spec.env_group);
      if (spec.schedule) {
        try {
          parseCron(spec.schedule);
        } catch {
          throw field("spec.schedule", "not a cron expression (5 fields, UTC)");
        }
      }
    },
    afterWrite(c, t, row, ctx) {
      const schedule = (ctx.spec as JobSpec).schedule ?? null;
      const prior = t.select().from(jobSchedules).where(eq(jobSchedules.resourceId, row.id)).get();
      if (schedule === null) {
        if (prior) t.delete(jobSchedules).where(eq(jobSchedules.resourceId, row.id)).run();
      } else if (!prior || prior.cron !== schedule) {
        const next = nextCronRun(schedule, c.clock.now());
        if (prior) t.update(jobSchedules).set({ cron: schedule, nextRunAt: next }).where(eq(jobSchedules.resourceId, row.id)).run();
        else t.insert(jobSchedules).values({ resourceId: row.id, cron: schedule, nextRunAt: next }).run();
      }
    },
    refuseDelete(_core, q, row) {
      const live = liveRun(q, row.id);
      return live ? `Job "${row.name}" has run ${live.id} ${live.status}; wait for it to finish before deleting.` : null;
    },
    async observe(c, row) {
      const last = c.db.select().from(jobRuns).where(eq(jobRuns.resourceId, row.id)).orderBy(desc(jobRuns.id)).limit(1).get();
      const sched = c.db.select().from(jobSchedules).where(eq(jobSchedules.resourceId, row.id)).get();
      const detail = {
        last_run: last ? { id: last.id, status: last.status, finished_at: last.finishedAt ? iso(last.finishedAt) : null } : null,
        next_run_at: sched ? iso(sched.nextRunAt) : null,
      };
      if (!last) return { state: "ready", summary: sched ? `never run; next ${iso(sched.nextRunAt)}` : "never run", detail };
      if (last.status === "failed") return { state: "error", summary: `last run ${last.id} failed${last.error ? `: ${last.error}` : ""}`, detail };
      return { state: "ready", summary: `last run ${last.id} ${last.status}`, detail };
    },
  });

  extendKind(core, "domain", {
    validate(core, q, ctx) {
      const spec = ctx.spec as DomainSpec;
      if (!findResource(q, { project: ctx.project, environment: ctx.environment }, "service", spec.service)) {
        throw field("spec.service", `no service "${spec.service}" in ${ctx.environment}`);
      }
      assertHostsClaimable(core, q, ctx.project, spec.hosts);
      if (spec.tls_secret_group && !findResource(q, { project: ctx.project, environment: ctx.environment }, "secret-group", spec.tls_secret_group)) {
        throw field("spec.tls_secret_group", `no secret-group "${spec.tls_secret_group}" in ${ctx.environment}`);
      }
      const own = ctx.prev?.id ?? "";
      const taken = q
        .select({ host: domainHosts.host, resourceId: domainHosts.resourceId })
        .from(domainHosts)
        .where(and(inArray(domainHosts.host, spec.hosts), ne(domainHosts.resourceId, own)))
        .get();
      if (taken) throw new OpsError("conflict", `Host "${taken.host}" is already routed by another domain.`, { host: taken.host });
    },
    afterWrite(_core, t, row, ctx) {
      t.delete(domainHosts).where(eq(domainHosts.resourceId, row.id)).run();
      for (const host of (ctx.spec as DomainSpec).hosts) t.insert(domainHosts).values({ host, resourceId: row.id }).run();
    },
    async observe(c, row) {
      const spec = specOf<DomainSpec>(row);
      const svc = c.db
        .select()
        .from(resources)
        .where(and(eq(resources.projectId, row.projectId), eq(resources.scope, row.scope), eq(resources.type, "service"), eq(resources.name, spec.service)))
        .get();
      if (!svc) return { state: "error", summary: `routes to service "${spec.service}", which does not exist`, detail: { hosts: spec.hosts } };
      // The certificates domain's view of the hosts' certificates (null: none asked for or served here).
      const certs = (c.locals.get("resources.domain-certificates") as DomainCertificates | undefined)?.(c, row) ?? null;
      const routed = svc.statusState === "ready" ? "ready" : "pending";
      // Hosts this server never routes (OPS_PUBLIC_URL moved onto one since the domain was written).
      const unrouted = unroutedHosts(c, spec.hosts);
      return {
        state: certs?.state === "failing" || unrouted.length > 0 ? "error" : certs?.state === "issuing" && routed === "ready" ? "pending" : routed,
        summary: `${unrouted.length > 0 ? `not routed: ${unrouted.join("; ")}; ` : ""}${spec.hosts.join(", ")} → ${spec.service} (${svc.statusState})${certs ? `; certificate ${certs.summary}` : ""}`,
        detail: { hosts: spec.hosts, service: spec.service, service_state: svc.statusState, tls: spec.tls ?? true, ...(unrouted.length > 0 ? { not_routed: unrouted } : {}), ...(certs ? { certificate: certs.detail } : {}) },
      };
    },
  });
}
