/**
 * Databases on the PostgreSQL plane (`OPS_DB_PLANE_URL`). Creating one provisions a database and
 * a login role on the plane and writes the connection string into the env group of the service
 * the spec names (variable `DATABASE_URL` unless the spec says otherwise). The role's password is
 * kept sealed; `rotate-password` changes it on the plane and rewrites every connection string of
 * the project that contains it. An adopted database is recorded, never provisioned, dropped or
 * rotated. `restore-runbook` prints the pgBackRest steps for the plane's stanza.
 */
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed } from "../../core/audit";
import { tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { assertNotArchived } from "../access/service";
import { PostgresPlane, PlaneError, newPlanePassword, scramVerifier } from "../../adapters/dbplane/postgres";
import { resourceDatabases, resources } from "./tables";
import { extendKind, secretValues, type WriteContext } from "./kinds";
import { auditTarget, findResource, getResourceRow, resourceById, specOf, toResponse, type Place, type ResourceRow } from "./rows";
import type { DatabaseSpec, ServiceSpec } from "./specs";
import type { ResourceResponse, RestoreRunbookResponse } from "./model";

const CONNECTION_LIMITS = { small: 20, medium: 50, large: 100 } as const;
export const PITR_TEXT = "PITR via the plane stanza";

function field(p: string, message: string): OpsError {
  return new OpsError("validation_failed", `${p}: ${message}`, { fields: [{ path: p, message }] });
}

/** The plane, or null when `OPS_DB_PLANE_URL` is unset. */
export function planeOf(core: Core): PostgresPlane | null {
  return core.config.dbPlaneUrl ? new PostgresPlane(core.config.dbPlaneUrl) : null;
}

function requirePlane(core: Core, action: string): PostgresPlane {
  const plane = planeOf(core);
  if (!plane) throw new OpsError("refused", `No database plane is configured, so ops cannot ${action}: set OPS_DB_PLANE_URL to a PostgreSQL server ops administers.`);
  return plane;
}

/** The plane's name for a database resource: `ops_<project>_<env>_<name>`, at most 63 characters. */
export function planeName(projectSlug: string, environment: string, name: string): string {
  const raw = `ops_${projectSlug}_${environment}_${name}`.toLowerCase().replace(/[^a-z0-9_]/g, "_");
  if (raw.length <= 63) return raw;
  const hash = createHash("sha256").update(raw).digest("hex").slice(0, 8);
  return `${raw.slice(0, 54)}_${hash}`;
}

function limitOf(spec: DatabaseSpec): number {
  return CONNECTION_LIMITS[spec.size ?? "small"];
}

function groupOfService(core: Core, q: Parameters<NonNullable<import("./kinds").KindHooks["validate"]>>[1], ctx: Pick<WriteContext, "project" | "environment">, service: string): ResourceRow {
  const svc = findResource(q, { project: ctx.project, environment: ctx.environment }, "service", service);
  if (!svc) throw field("spec.service", `no service "${service}" in ${ctx.environment}`);
  const groupName = specOf<ServiceSpec>(svc).env_group;
  if (!groupName) throw field("spec.service", `service "${service}" has no env_group to receive the connection string`);
  const group = findResource(q, { project: ctx.project, environment: ctx.environment }, "secret-group", groupName);
  if (!group) throw field("spec.service", `env group "${groupName}" of service "${service}" does not exist`);
  return group;
}

export function installDatabaseKind(core: Core): void {
  extendKind(core, "database", {
    validate(c, q, ctx) {
      const spec = ctx.spec as DatabaseSpec;
      if (ctx.prev) {
        const before = specOf<DatabaseSpec>(ctx.prev);
        for (const k of ["engine", "adopted", "database", "service", "variable"] as const) {
          if ((before[k] ?? null) !== (spec[k] ?? null)) throw field(`spec.${k}`, "cannot change after creation; create another database");
        }
        return;
      }
      if (spec.adopted) {
        if (!spec.database) throw field("spec.database", "an adopted database needs the name it has on the plane");
        return;
      }
      if (spec.database) throw field("spec.database", "only an adopted database names its plane database; ops names the ones it creates");
      if (!spec.service) throw field("spec.service", "name the service whose env group receives the connection string");
      groupOfService(c, q, ctx, spec.service);
    },
    async prepare(c, ctx) {
      const spec = ctx.spec as DatabaseSpec;
      if (ctx.prev) {
        const before = specOf<DatabaseSpec>(ctx.prev);
        if (spec.adopted || limitOf(before) === limitOf(spec)) return null;
        const names = c.db.select().from(resourceDatabases).where(eq(resourceDatabases.resourceId, ctx.prev.id)).get();
        const plane = planeOf(c);
        if (!names || !plane) return null;
        await plane.setConnectionLimit(names.planeDatabase, names.planeRole, limitOf(spec)).catch((e: Error) => {
          throw new OpsError("conflict", `The database plane refused the new size: ${e.message}`);
        });
        return { apply() {}, undo: () => plane.setConnectionLimit(names.planeDatabase, names.planeRole, limitOf(before)) };
      }
      if (spec.adopted) {
        return {
          apply(t, row) {
            t.insert(resourceDatabases).values({ resourceId: row.id, planeDatabase: spec.database as string, planeRole: spec.database as string, passwordId: null, adopted: true, createdAt: c.clock.now() }).run();
          },
          undo: async () => {},
        };
      }
      const plane = requirePlane(c, "create a database");
      c.secrets.assertUnsealed();
      const name = planeName(ctx.project.slug, ctx.environment as string, ctx.name);
      const password = newPlanePassword();
      try {
        await plane.provision(name, name, scramVerifier(password), limitOf(spec));
      } catch (e) {
        const why = e instanceof PlaneError ? e.message : "unknown error";
        throw new OpsError("refused", `The database plane refused to create the database: ${why}`);
      }
      const url = plane.connectionString(name, name, password);
      return {
        apply(t, row) {
          const passwordId = c.secrets.put(t, `db-password:${row.id}`, password);
          t.insert(resourceDatabases).values({ resourceId: row.id, planeDatabase: name, planeRole: name, passwordId, adopted: false, createdAt: c.clock.now() }).run();
          const group = groupOfService(c, t, ctx, spec.service as string);
          secretValues(c).setGroupVariable(c, t, group, spec.variable ?? "DATABASE_URL", "secret", url, ctx.actor);
        },
        undo: () => plane.drop(name, name),
      };
    },
    refuseDelete(_c, _q, row, confirm) {
      if (confirm === row.name) return null;
      const adopted = specOf<DatabaseSpec>(row).adopted;
      return adopted
        ? `Deleting adopted database "${row.name}" forgets it (the plane keeps it); confirm with confirm=${row.name}.`
        : `Deleting database "${row.name}" drops it and its data on the plane; confirm with confirm=${row.name}.`;
    },
    async beforeDelete(c, row) {
      const names = c.db.select().from(resourceDatabases).where(eq(resourceDatabases.resourceId, row.id)).get();
      if (!names || names.adopted) return;
      const plane = planeOf(c);
      if (!plane) throw new OpsError("conflict", `No database plane is configured; deleting "${row.name}" now would leave its database running unmanaged.`);
      try {
        await plane.drop(names.planeDatabase, names.planeRole);
      } catch (e) {
        throw new OpsError("conflict", `The database plane did not drop "${row.name}" (${(e as Error).message}); deleting it now would leave it running unmanaged.`);
      }
    },
    onDelete(c, t, row) {
      const names = t.select().from(resourceDatabases).where(eq(resourceDatabases.resourceId, row.id)).get();
      if (names?.passwordId) c.secrets.delete(t, names.passwordId);
    },
    async observe(c, row) {
      const names = c.db.select().from(resourceDatabases).where(eq(resourceDatabases.resourceId, row.id)).get();
      const plane = planeOf(c);
      if (!plane || !names) throw new OpsError("unavailable", "No database plane is configured: the database cannot be observed now.");
      let stats;
      try {
        stats = await plane.stats(names.planeDatabase);
      } catch (e) {
        throw new OpsError("unavailable", `The database plane did not answer: the database cannot be observed now.`, undefined, { cause: e, headers: { "retry-after": "30" } });
      }
      if (!stats) return { state: "error", summary: `database ${names.planeDatabase} does not exist on the plane`, detail: { database: names.planeDatabase } };
      return {
        state: "ready",
        summary: `${stats.sizeBytes} bytes, ${stats.connections} connection${stats.connections === 1 ? "" : "s"}`,
        detail: { database: names.planeDatabase, size_bytes: stats.sizeBytes, connections: stats.connections, server_version: stats.serverVersion, adopted: names.adopted },
      };
    },
  });
}

/**
 * POST …/database/{name}/rotate-password: a new role password on the plane, then every
 * connection string containing the old one rewritten, in one transaction with the audit row.
 * 409 adopted or the plane refused; 503 sealed.
 */
export async function rotateDatabasePassword(core: Core, place: Place, name: string, auth: AuthContext): Promise<ResourceResponse> {
  const row = getResourceRow(core.db, place, "database", name);
  assertNotArchived(place.project);
  const names = core.db.select().from(resourceDatabases).where(eq(resourceDatabases.resourceId, row.id)).get();
  if (!names || names.adopted || !names.passwordId) throw new OpsError("conflict", `Database "${name}" is adopted: ops does not own its password.`);
  core.secrets.assertUnsealed();
  const plane = planeOf(core);
  if (!plane) throw new OpsError("conflict", "No database plane is configured: the password cannot be changed.");
  const oldPassword = core.secrets.get(core.db, names.passwordId);
  const password = newPlanePassword();
  try {
    await plane.setPassword(names.planeRole, scramVerifier(password));
  } catch (e) {
    throw new OpsError("conflict", `The database plane refused the new password: ${(e as Error).message}`);
  }
  const actor = actorOf(auth.principal, auth.meta);
  let updated: ResourceRow;
  try {
    updated = tx(core.db, (t) => {
      core.secrets.replace(t, names.passwordId as string, password);
      const rewritten = secretValues(core).rewriteValues(core, t, row.projectId, oldPassword, password);
      const now = core.clock.now();
      t.update(resourceDatabases).set({ passwordRotatedAt: now }).where(eq(resourceDatabases.resourceId, row.id)).run();
      t.update(resources).set({ version: row.version + 1, updatedAt: now, updatedBy: actor.actor }).where(eq(resources.id, row.id)).run();
      auditAllowed(core, t, actor, "databases.manage", auditTarget("database", name), { project: place.project.slug, environment: place.environment }, { op: "rotate-password", rewritten });
      return resourceById(t, row.id) as ResourceRow;
    });
  } catch (e) {
    // Put the old password back so the stored connection strings keep working.
    await plane.setPassword(names.planeRole, scramVerifier(oldPassword)).catch(() => core.log.error("could not restore a database password after a failed rotation", { database: name }));
    throw e;
  }
  return toResponse(updated, place.project.slug);
}

/** GET …/database/{name}/restore-runbook: pgBackRest steps to restore this database. */
export function restoreRunbook(core: Core, place: Place, name: string): RestoreRunbookResponse {
  const row = getResourceRow(core.db, place, "database", name);
  const names = core.db.select().from(resourceDatabases).where(eq(resourceDatabases.resourceId, row.id)).get();
  const database = names?.planeDatabase ?? specOf<DatabaseSpec>(row).database ?? planeName(place.project.slug, place.environment ?? "", name);
  const stanza = core.config.dbPlaneStanza;
  const plane = planeOf(core)?.address ?? { host: "<plane-host>", port: 5432 };
  const pitr = core.config.dbPlanePitr;
  const scratch = `/var/lib/postgresql/restore-${database}`;
  const target = pitr ? ` --type=time --target="<YYYY-MM-DD HH:MM:SS+00>" --target-action=promote` : "";
  const steps = [
    `pgbackrest --stanza=${stanza} info`,
    `install -d -o postgres -m 0700 ${scratch}`,
    `sudo -u postgres pgbackrest --stanza=${stanza} --pg1-path=${scratch} --db-include=${database}${target} restore`,
    `sudo -u postgres pg_ctl -D ${scratch} -o "-p 5499 -c archive_mode=off" -w start`,
    `sudo -u postgres pg_dump -p 5499 -Fc -d ${database} -f /tmp/${database}.dump`,
    `pg_restore -h ${plane.host} -p ${plane.port} -U postgres --clean --if-exists --no-owner --role=${database} -d ${database} /tmp/${database}.dump`,
    `sudo -u postgres pg_ctl -D ${scratch} -m fast stop && rm -rf ${scratch} /tmp/${database}.dump`,
  ];
  return { backup: pitr ? PITR_TEXT : "null", database, stanza, steps, text: steps.join("\n") };
}
