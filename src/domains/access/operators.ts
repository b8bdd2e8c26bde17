/**
 * Operators: people (email, display name, argon2id password) and machines (a handle, no
 * password; they act only through tokens).
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Queryable, Tx } from "../../core/db/client";
import { tx } from "../../core/db/client";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { OpsError, invalid } from "../../core/errors";
import { uuidv7 } from "../../core/ids";
import { operators } from "./tables";
import type { OperatorRow } from "./rows";
import { checkPassword } from "./password-policy";

export const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+$/;
export const HANDLE_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export type CreateOperatorInput =
  | { kind: "person"; email: string; displayName: string; password?: string | null }
  | { kind: "machine"; handle: string; displayName: string };

/** argon2id via Bun.password. */
export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id" });
}


/**
 * Insert an operator inside `t` (the caller audits and may add memberships in the same tx).
 * `passwordHash` must already be computed (hashing is async; transactions are not).
 */
export function insertOperator(core: Core, t: Tx, input: CreateOperatorInput, passwordHash: string | null): OperatorRow {
  const now = core.clock.now();
  const displayName = input.displayName.trim();
  if (displayName === "" || displayName.length > 100) throw invalid("display_name", "must be 1 to 100 characters");
  if (input.kind === "person") {
    const email = input.email.trim().toLowerCase();
    if (!EMAIL_PATTERN.test(email) || email.length > 254) throw invalid("email", "is not an email address");
    if (t.select({ id: operators.id }).from(operators).where(eq(operators.email, email)).get()) {
      throw new OpsError("already_exists", "An operator with that email already exists.");
    }
    return t.insert(operators).values({ id: uuidv7(now), kind: "person", email, handle: null, displayName, passwordHash, createdAt: now, updatedAt: now }).returning().get();
  }
  const handle = input.handle.trim().toLowerCase();
  if (!HANDLE_PATTERN.test(handle)) throw invalid("handle", "must be lower-case letters, digits, '.', '_' or '-' (up to 63)");
  if (t.select({ id: operators.id }).from(operators).where(eq(operators.handle, handle)).get()) {
    throw new OpsError("already_exists", "An operator with that handle already exists.");
  }
  return t.insert(operators).values({ id: uuidv7(now), kind: "machine", email: null, handle, displayName, passwordHash: null, createdAt: now, updatedAt: now }).returning().get();
}

/** Create an operator (audited as `operators.manage`). People may get a password. */
export async function createOperator(core: Core, input: CreateOperatorInput, actor: AuditActor): Promise<OperatorRow> {
  let hash: string | null = null;
  if (input.kind === "person" && input.password) {
    await checkPassword(input.password, input.email);
    hash = await hashPassword(input.password);
  }
  return tx(core.db, (t) => {
    const row = insertOperator(core, t, input, hash);
    auditAllowed(core, t, actor, "operators.manage", `operator:${row.id}`, {}, { op: "operator.create", kind: row.kind });
    return row;
  });
}

export function findOperator(q: Queryable, id: string): OperatorRow | null {
  return q.select().from(operators).where(eq(operators.id, id)).get() ?? null;
}

export function findOperatorByEmail(q: Queryable, email: string): OperatorRow | null {
  return q.select().from(operators).where(eq(operators.email, email.trim().toLowerCase())).get() ?? null;
}
