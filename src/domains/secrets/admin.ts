/**
 * The secrets store's operator actions on a running server: status, seal, unseal (estate.manage).
 * `ops admin seal|unseal` call these routes; a seal lasts until an unseal or a restart (the key
 * file or variable is read again at start). Rotation of the master key is offline
 * (`ops admin rotate-secrets-key`), because the key's home is on disk or in the environment.
 */
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed, writeAudit } from "../../core/audit";
import { tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";

export function storeStatus(core: Core) {
  const s = core.secrets.status();
  return { sealed: s.sealed, key_id: s.keyId, reason: s.reason };
}

export function sealStore(core: Core, auth: AuthContext): void {
  tx(core.db, (t) => auditAllowed(core, t, actorOf(auth.principal, auth.meta), "estate.manage", "secrets-store", {}, { op: "seal" }));
  core.secrets.seal(`sealed by ${auth.principal.actor}`);
  core.log.warn("secrets store sealed by an operator", { actor: auth.principal.actor });
}

export function unsealStore(core: Core, key: string, auth: AuthContext): void {
  const actor = actorOf(auth.principal, auth.meta);
  try {
    core.secrets.unseal(key);
  } catch (e) {
    writeAudit(core, core.db, { ...actor, action: "estate.manage", target: "secrets-store", outcome: "denied", reason: "unseal with a key that is not the store's", context: { ...actor.context, op: "unseal" } });
    if (e instanceof OpsError) throw e;
    throw new OpsError("refused", "That is not the store's master key.");
  }
  tx(core.db, (t) => auditAllowed(core, t, actor, "estate.manage", "secrets-store", {}, { op: "unseal" }));
  core.log.info("secrets store unsealed by an operator", { actor: auth.principal.actor });
}
