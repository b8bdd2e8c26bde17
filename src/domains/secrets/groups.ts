/**
 * Secret groups: a `secret-group` resource declares variable names and kinds in its spec; the
 * values live here, sealed. Setting a variable the group does not declare appends it to the spec.
 * `rotate` renders every value into one dotenv document `<group>.env.v<n>` (sealed), makes it
 * current and restarts — or, with no runtime attached, marks for restart — the services of the
 * environment that mount the group. Values of `secret` variables are never read back; `text`
 * values are shown to callers holding `secrets.reveal`, and each such read is audited.
 */
import { and, desc, eq, max } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable, Tx } from "../../core/db/client";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { tx } from "../../core/db/client";
import { iso, isoOrNull } from "../../core/clock";
import { OpsError } from "../../core/errors";
import { assertNotArchived } from "../access/service";
import {
  getResourceRow,
  specOf,
  usersOfGroup,
  markRestartRequired,
  rewriteSpecIn,
  listOfTypeInProject,
  resourceById,
  type Place,
  type ResourceRow,
  type SecretGroupSpec,
  ENV_VAR_PATTERN,
} from "../resources/service";
import { secretGroupRenders, secretVariables } from "./tables";
import { renderDotenv } from "./dotenv";
import type { RenderedVersion, RotateGroupResponse, VariableResponse } from "./model";

const ENV_VAR_RE = new RegExp(ENV_VAR_PATTERN);
type VariableRow = typeof secretVariables.$inferSelect;
type Kind = "secret" | "text";

export function assertEnvVarName(name: string, field = "key"): void {
  if (!ENV_VAR_RE.test(name)) {
    throw new OpsError("validation_failed", `"${name}" is not shaped like an environment variable name (letters, digits and _, not starting with a digit).`, { fields: [{ path: field, message: "not an environment variable name" }] });
  }
}

function groupTarget(group: string, key?: string): string {
  return key ? `secret-group:${group}/${key}` : `secret-group:${group}`;
}

function storedVariables(q: Queryable, groupId: string): VariableRow[] {
  return q.select().from(secretVariables).where(eq(secretVariables.groupId, groupId)).all();
}

function findVariable(q: Queryable, groupId: string, name: string): VariableRow | null {
  return q.select().from(secretVariables).where(and(eq(secretVariables.groupId, groupId), eq(secretVariables.name, name))).get() ?? null;
}

function toVariable(core: Core, name: string, declaredKind: Kind | null, row: VariableRow | null, reveal: boolean): VariableResponse {
  const kind = (row?.kind ?? declaredKind ?? "secret") as Kind;
  return {
    has_value: row !== null,
    kind,
    name,
    pending: row !== null && row.renderedVersion !== row.version,
    updated_at: isoOrNull(row?.updatedAt),
    value: row && kind === "text" && reveal ? core.secrets.get(core.db, row.valueId) : null,
    version: row?.version ?? 0,
  };
}

function groupRow(core: Core, place: Place, name: string): ResourceRow {
  return getResourceRow(core.db, place, "secret-group", name);
}

/**
 * GET …/secret-group/{name}/variables: declared and stored variables. Text values are included
 * for callers holding `secrets.reveal` (an audited export); secret values never.
 */
export function listVariables(core: Core, place: Place, name: string, auth: AuthContext): VariableResponse[] {
  core.secrets.assertUnsealed();
  const group = groupRow(core, place, name);
  const reveal = auth.permissions.has("secrets.reveal");
  const stored = new Map(storedVariables(core.db, group.id).map((v) => [v.name, v]));
  const out: VariableResponse[] = [];
  for (const d of specOf<SecretGroupSpec>(group).variables) {
    out.push(toVariable(core, d.name, d.kind, stored.get(d.name) ?? null, reveal));
    stored.delete(d.name);
  }
  for (const v of stored.values()) out.push(toVariable(core, v.name, null, v, reveal));
  const revealed = out.filter((v) => v.value !== null).map((v) => v.name);
  if (revealed.length > 0) {
    tx(core.db, (t) => {
      auditAllowed(core, t, actorOf(auth.principal, auth.meta), "secrets.reveal", groupTarget(name), { project: place.project.slug, environment: place.environment }, { op: "variables.export", variables: revealed.join(",") });
    });
  }
  return out;
}

/** Store one value in a group (inside `t`): a new variable is appended to the group's spec. */
export function storeVariable(core: Core, t: Tx, group: ResourceRow, name: string, requestedKind: Kind | null, value: string, actor: AuditActor): VariableRow {
  const existing = findVariable(t, group.id, name);
  const now = core.clock.now();
  if (existing) {
    core.secrets.replace(t, existing.valueId, value);
    return t.update(secretVariables).set({ version: existing.version + 1, updatedAt: now }).where(and(eq(secretVariables.groupId, group.id), eq(secretVariables.name, name))).returning().get();
  }
  const spec = specOf<SecretGroupSpec>(group);
  const declared = spec.variables.find((v) => v.name === name);
  const kind: Kind = declared?.kind ?? requestedKind ?? "secret";
  const valueId = core.secrets.put(t, `secret-group:${group.id}:${name}`, value);
  const row = t.insert(secretVariables).values({ groupId: group.id, name, kind, valueId, version: 1, renderedVersion: null, updatedAt: now }).returning().get();
  if (!declared) rewriteSpecIn(core, t, resourceById(t, group.id) as ResourceRow, { ...spec, variables: [...spec.variables, { name, kind }] }, actor.actor);
  return row;
}

/** PUT …/secret-group/{name}/variables/{key}. 422 name or kind; 409 archived; 503 sealed. */
export function setVariable(core: Core, place: Place, name: string, key: string, body: { kind?: string | null; value: string }, auth: AuthContext): VariableResponse {
  core.secrets.assertUnsealed();
  const group = groupRow(core, place, name);
  assertEnvVarName(key);
  if (body.kind !== undefined && body.kind !== null && body.kind !== "secret" && body.kind !== "text") {
    throw new OpsError("validation_failed", `kind must be "secret" or "text", not "${body.kind}".`, { fields: [{ path: "kind", message: "must be secret or text" }] });
  }
  assertNotArchived(place.project);
  const actor = actorOf(auth.principal, auth.meta);
  const row = tx(core.db, (t) => {
    const g = resourceById(t, group.id) as ResourceRow;
    const r = storeVariable(core, t, g, key, (body.kind ?? null) as Kind | null, body.value, actor);
    auditAllowed(core, t, actor, "secrets.write", groupTarget(name, key), { project: place.project.slug, environment: place.environment }, { op: "variable.set", version: r.version });
    return r;
  });
  return toVariable(core, key, null, row, auth.permissions.has("secrets.reveal"));
}

/** DELETE …/secret-group/{name}/variables/{key}: the value and the declaration. 404 when neither exists. */
export function deleteVariable(core: Core, place: Place, name: string, key: string, auth: AuthContext): void {
  core.secrets.assertUnsealed();
  const group = groupRow(core, place, name);
  assertNotArchived(place.project);
  const actor = actorOf(auth.principal, auth.meta);
  tx(core.db, (t) => {
    const g = resourceById(t, group.id) as ResourceRow;
    const spec = specOf<SecretGroupSpec>(g);
    const stored = findVariable(t, g.id, key);
    const declared = spec.variables.some((v) => v.name === key);
    if (!stored && !declared) throw new OpsError("not_found", `Group "${name}" has no variable ${key}.`);
    if (stored) {
      core.secrets.delete(t, stored.valueId);
      t.delete(secretVariables).where(and(eq(secretVariables.groupId, g.id), eq(secretVariables.name, key))).run();
    }
    if (declared) rewriteSpecIn(core, t, g, { ...spec, variables: spec.variables.filter((v) => v.name !== key) }, actor.actor);
    auditAllowed(core, t, actor, "secrets.write", groupTarget(name, key), { project: place.project.slug, environment: place.environment }, { op: "variable.delete" });
  });
}

/** Every stored value of a group, in spec order (then the rest by name). */
function valuesInOrder(core: Core, q: Queryable, group: ResourceRow): Array<{ row: VariableRow; value: string }> {
  const order = new Map(specOf<SecretGroupSpec>(group).variables.map((v, i) => [v.name, i]));
  return storedVariables(q, group.id)
    .sort((a, b) => (order.get(a.name) ?? 1e9) - (order.get(b.name) ?? 1e9) || a.name.localeCompare(b.name))
    .map((row) => ({ row, value: core.secrets.get(q, row.valueId) }));
}

/**
 * POST …/secret-group/{name}/rotate: render `<name>.env.v<n>`, make it current, restart or mark
 * for restart each service of the environment that mounts the group. 409 with no values.
 */
export function rotateGroup(core: Core, place: Place, name: string, auth: AuthContext): RotateGroupResponse {
  core.secrets.assertUnsealed();
  const group = groupRow(core, place, name);
  assertNotArchived(place.project);
  const actor = actorOf(auth.principal, auth.meta);
  return tx(core.db, (t) => {
    const values = valuesInOrder(core, t, group);
    if (values.length === 0) throw new OpsError("conflict", `Group "${name}" has no variable with a value to render.`);
    const last = t.select({ v: max(secretGroupRenders.version) }).from(secretGroupRenders).where(eq(secretGroupRenders.groupId, group.id)).get()?.v ?? 0;
    const version = last + 1;
    const secret = `${name}.env.v${version}`;
    const valueId = core.secrets.put(t, `secret-group-render:${group.id}:${version}`, renderDotenv(values.map((v) => [v.row.name, v.value])));
    t.insert(secretGroupRenders).values({ groupId: group.id, version, secret, valueId, actor: actor.actor, renderedAt: core.clock.now() }).run();
    for (const v of values) t.update(secretVariables).set({ renderedVersion: v.row.version }).where(and(eq(secretVariables.groupId, group.id), eq(secretVariables.name, v.row.name))).run();
    const rolled: string[] = [];
    const skipped: Array<{ reason: string; service: string }> = [];
    for (const svc of usersOfGroup(t, group.projectId, group.environment, name).filter((r) => r.type === "service")) {
      const out = markRestartRequired(core, t, svc, name, version);
      if (out.rolled) rolled.push(svc.name);
      else skipped.push({ service: svc.name, reason: out.reason });
    }
    auditAllowed(core, t, actor, "secrets.rotate", groupTarget(name), { project: place.project.slug, environment: place.environment }, { op: "rotate", version, rolled: rolled.length, skipped: skipped.length });
    const marked = skipped.some((s) => s.reason.startsWith("no runtime"));
    return {
      reason: marked ? "No runtime is attached yet: services that mount the group are marked restart required and pick up this version when they start." : null,
      rolled,
      secret,
      skipped,
      state: "rendered",
      version,
    };
  });
}

/** GET …/secret-group/{name}/versions: rendered history, newest first; metadata, so answered while sealed (decision 0545). */
export function listVersions(core: Core, place: Place, name: string): RenderedVersion[] {
  const group = groupRow(core, place, name);
  const rows = core.db.select().from(secretGroupRenders).where(eq(secretGroupRenders.groupId, group.id)).orderBy(desc(secretGroupRenders.version)).all();
  return rows.map((r, i) => ({ actor: r.actor, current: i === 0, rendered_at: iso(r.renderedAt), secret: r.secret, version: r.version }));
}

/** Every value of a group as environment entries, and the secret ones (for masking). */
export function groupEnv(core: Core, q: Queryable, groupId: string): { env: Record<string, string>; secrets: string[] } {
  const group = resourceById(q, groupId);
  if (!group) return { env: {}, secrets: [] };
  const env: Record<string, string> = {};
  const secrets: string[] = [];
  for (const { row, value } of valuesInOrder(core, q, group)) {
    env[row.name] = value;
    if (row.kind === "secret") secrets.push(value);
  }
  return { env, secrets };
}

/** Resource hooks for the secret-group type. */
export const secretGroupHooks = {
  validate(_core: Core, q: Queryable, ctx: { spec: Record<string, unknown>; prev: ResourceRow | null }) {
    const seen = new Set<string>();
    for (const v of (ctx.spec as SecretGroupSpec).variables) {
      if (seen.has(v.name)) throw new OpsError("validation_failed", `spec.variables: ${v.name} is declared twice.`, { fields: [{ path: "spec.variables", message: `${v.name} declared twice` }] });
      seen.add(v.name);
    }
    // Replacing the spec needs only resources.write; destroying a stored value needs
    // secrets.write. So a spec that drops a name whose value is stored is refused: the value goes
    // through DELETE …/variables/{key} first.
    if (ctx.prev) {
      const dropped = storedVariables(q, ctx.prev.id).filter((v) => !seen.has(v.name)).map((v) => v.name);
      if (dropped.length > 0) {
        throw new OpsError("conflict", `The new spec drops ${dropped.join(", ")}, which still ${dropped.length === 1 ? "has a stored value" : "have stored values"}; delete ${dropped.length === 1 ? "it" : "them"} with DELETE …/variables/{key} first.`, { variables: dropped });
      }
    }
  },
  /** A replaced spec is the declaration (names with stored values cannot be dropped: see validate); kinds follow it. */
  afterWrite(core: Core, t: Tx, row: ResourceRow) {
    const declared = new Map(specOf<SecretGroupSpec>(row).variables.map((v) => [v.name, v.kind]));
    for (const v of storedVariables(t, row.id)) {
      const kind = declared.get(v.name);
      if (kind === undefined) {
        core.secrets.delete(t, v.valueId);
        t.delete(secretVariables).where(and(eq(secretVariables.groupId, row.id), eq(secretVariables.name, v.name))).run();
      } else if (kind !== v.kind) {
        t.update(secretVariables).set({ kind }).where(and(eq(secretVariables.groupId, row.id), eq(secretVariables.name, v.name))).run();
      }
    }
  },
  refuseDelete(_core: Core, q: Queryable, row: ResourceRow): string | null {
    const users = usersOfGroup(q, row.projectId, row.environment, row.name);
    return users.length > 0 ? `Secret group "${row.name}" is mounted by ${users.map((u) => `${u.type} "${u.name}"`).join(", ")}; point them elsewhere first.` : null;
  },
  onDelete(core: Core, t: Tx, row: ResourceRow) {
    for (const v of storedVariables(t, row.id)) core.secrets.delete(t, v.valueId);
    for (const r of t.select({ valueId: secretGroupRenders.valueId }).from(secretGroupRenders).where(eq(secretGroupRenders.groupId, row.id)).all()) core.secrets.delete(t, r.valueId);
  },
  async observe(core: Core, row: ResourceRow) {
    core.secrets.assertUnsealed();
    const declared = specOf<SecretGroupSpec>(row).variables;
    const stored = storedVariables(core.db, row.id);
    let unreadable = 0;
    for (const v of stored) {
      try {
        core.secrets.getBytes(core.db, v.valueId);
      } catch {
        unreadable++;
      }
    }
    const current = core.db.select({ v: max(secretGroupRenders.version) }).from(secretGroupRenders).where(eq(secretGroupRenders.groupId, row.id)).get()?.v ?? null;
    const pending = stored.filter((v) => v.renderedVersion !== v.version).length;
    const missing = declared.filter((d) => !stored.some((s) => s.name === d.name)).length;
    const detail = { variables: declared.length, with_value: stored.length, pending, current_version: current, unreadable };
    if (unreadable > 0) return { state: "error" as const, summary: `${unreadable} value${unreadable === 1 ? "" : "s"} cannot be opened with the current key`, detail };
    if (missing > 0 || pending > 0 || current === null) {
      const parts = [`${stored.length} of ${declared.length} variables set`];
      if (current === null) parts.push("never rendered");
      else if (pending > 0) parts.push(`${pending} changed since v${current}`);
      return { state: "pending" as const, summary: parts.join("; "), detail };
    }
    return { state: "ready" as const, summary: `${stored.length} variables, v${current} current`, detail };
  },
};

/** Groups of every environment of a project, for rewriting connection strings. */
export function groupsOfProject(q: Queryable, projectId: string): ResourceRow[] {
  return listOfTypeInProject(q, projectId, "secret-group");
}
