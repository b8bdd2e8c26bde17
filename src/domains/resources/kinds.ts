/**
 * Per-type rules, as hooks the generic create/put/delete/observe flow calls. Built-in types
 * register theirs here; the secrets domain extends `secret-group` (its values live there) and
 * installs the `SecretValues` bridge the resources domain uses for job environments and
 * connection strings — so this domain never imports the secrets domain.
 */
import { coreLocal, type Core, type ProjectRef } from "../../core/core";
import type { Queryable, Tx } from "../../core/db/client";
import type { AuditActor } from "../../core/audit";
import { OpsError } from "../../core/errors";
import type { ResourceType } from "./specs";
import type { Observed, ResourceRow } from "./rows";

export interface WriteContext {
  project: ProjectRef;
  environment: string | null;
  type: ResourceType;
  name: string;
  spec: Record<string, unknown>;
  /** The row being replaced; null on create. */
  prev: ResourceRow | null;
  actor: AuditActor;
}

/** Async work done before the write transaction, with what to add inside it and how to undo it. */
export interface Prepared {
  apply(t: Tx, row: ResourceRow): void;
  undo(): Promise<void>;
}

export interface KindHooks {
  /** Cross-resource rules (422/409); runs before `prepare` and again inside the write tx. */
  validate?(core: Core, q: Queryable, ctx: WriteContext): void;
  /** Outside work before the write (provisioning). */
  prepare?(core: Core, ctx: WriteContext): Promise<Prepared | null>;
  /** Inside the write tx, after the row is stored. */
  afterWrite?(core: Core, t: Tx, row: ResourceRow, ctx: WriteContext): void;
  /** Why deleting is refused (409), or null. */
  refuseDelete?(core: Core, q: Queryable, row: ResourceRow, confirm: string | undefined): string | null;
  /** Outside work before the delete tx (drop on the plane, remove a directory). */
  beforeDelete?(core: Core, row: ResourceRow): Promise<void>;
  /** Inside the delete tx, before the row goes. */
  onDelete?(core: Core, t: Tx, row: ResourceRow): void;
  /** A fresh status; throws 503 `unavailable`/`sealed` when it cannot be had now. */
  observe?(core: Core, row: ResourceRow): Promise<Observed>;
}

/** What the resources domain needs from the secrets domain (installed by its module). */
export interface SecretValues {
  /** Every variable of the group with a value, as environment entries (throws 503 when sealed). */
  groupEnv(core: Core, q: Queryable, groupId: string): { env: Record<string, string>; secrets: string[] };
  /** Set one variable (appended to the group's spec when new), inside the caller's tx. */
  setGroupVariable(core: Core, t: Tx, group: ResourceRow, name: string, kind: "secret" | "text", value: string, actor: AuditActor): void;
  /** Replace `from` with `to` in every group variable and unit secret of the project; returns how many changed. */
  rewriteValues(core: Core, t: Tx, projectId: string, from: string, to: string): number;
  /** A unit secret's value (e.g. a bucket's S3 keys), or null (throws 503 when sealed). */
  unitSecret(core: Core, q: Queryable, projectId: string, unit: string, name: string): string | null;
}

const HOOKS_KEY = "resources.kind-hooks";
const BRIDGE_KEY = "resources.secret-values";

function registry(core: Core): Map<string, KindHooks[]> {
  return coreLocal<Map<string, KindHooks[]>>(core, HOOKS_KEY, () => new Map());
}

/** Add hooks for `type` (several sets run in registration order). */
export function extendKind(core: Core, type: ResourceType, hooks: KindHooks): void {
  const m = registry(core);
  m.set(type, [...(m.get(type) ?? []), hooks]);
}

export function hooksOf(core: Core, type: ResourceType): KindHooks[] {
  return registry(core).get(type) ?? [];
}

export function provideSecretValues(core: Core, impl: SecretValues): void {
  core.locals.set(BRIDGE_KEY, impl);
}

export function secretValues(core: Core): SecretValues {
  const impl = core.locals.get(BRIDGE_KEY) as SecretValues | undefined;
  if (!impl) throw new OpsError("unavailable", "Secret groups are not installed in this server.");
  return impl;
}
