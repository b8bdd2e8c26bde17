/**
 * First start: an empty data dir gets its estate owner, a person with an estate-wide `owner`
 * membership. The password comes from OPS_BOOTSTRAP_PASSWORD or is generated and printed once
 * (to stderr, never to the structured log).
 */
import { count, eq } from "drizzle-orm";
import { randomBytes } from "node:crypto";
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { auditAllowed, SYSTEM_ACTOR } from "../../core/audit";
import { operators } from "./tables";
import { insertOperator, hashPassword } from "./operators";
import { upsertMembership } from "./memberships";
import { fixedRole } from "./roles";
import type { OperatorRow } from "./rows";

export const DEFAULT_OWNER_EMAIL = "admin@localhost";

/** Create the estate owner when no person exists yet. Returns the new owner, or null. */
export async function bootstrapOwner(core: Core, print: (text: string) => void = (t) => process.stderr.write(t)): Promise<OperatorRow | null> {
  const people = core.db.select({ n: count() }).from(operators).where(eq(operators.kind, "person")).get()?.n ?? 0;
  if (people > 0) return null;
  const email = core.config.bootstrapEmail ?? DEFAULT_OWNER_EMAIL;
  const generated = core.config.bootstrapPassword === null;
  const password = core.config.bootstrapPassword ?? randomBytes(18).toString("base64url");
  const hash = await hashPassword(password);
  const owner = tx(core.db, (t) => {
    const row = insertOperator(core, t, { kind: "person", email, displayName: "Estate owner" }, hash);
    upsertMembership(core, t, row.id, null, fixedRole(core, "owner").id);
    auditAllowed(core, t, SYSTEM_ACTOR, "operators.manage", `operator:${row.id}`, {}, { op: "bootstrap.owner" });
    return row;
  });
  core.log.info("estate owner created", { email, operator: owner.id, password: generated ? "generated (printed once on stderr)" : "from OPS_BOOTSTRAP_PASSWORD" });
  if (generated) {
    print(`\n  ops: created the estate owner ${email}\n  password: ${password}\n  (shown once; sign in at ${core.config.publicUrl} and change it under Account → Password)\n\n`);
  }
  return owner;
}
