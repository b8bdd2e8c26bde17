/**
 * What the secrets domain gives the resources domain (kinds.ts `SecretValues`): job
 * environments, connection strings written into a group, and the rewrite of every value holding
 * a rotated database password.
 */
import { and, eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";
import { provideSecretValues, extendKind } from "../resources/service";
import { secretVariables, unitSecrets } from "./tables";
import { groupEnv, storeVariable, secretGroupHooks, groupsOfProject } from "./groups";
import { unitSecret, unitSecretsOf } from "./unit-secrets";

/** Replace `from` with `to` in every group variable and unit secret of the project. */
export function rewriteValues(core: Core, t: Tx, projectId: string, from: string, to: string): number {
  let n = 0;
  const now = core.clock.now();
  for (const g of groupsOfProject(t, projectId)) {
    for (const v of t.select().from(secretVariables).where(eq(secretVariables.groupId, g.id)).all()) {
      const value = core.secrets.get(t, v.valueId);
      if (!value.includes(from)) continue;
      core.secrets.replace(t, v.valueId, value.split(from).join(to));
      t.update(secretVariables).set({ version: v.version + 1, updatedAt: now }).where(and(eq(secretVariables.groupId, g.id), eq(secretVariables.name, v.name))).run();
      n++;
    }
  }
  for (const s of unitSecretsOf(t, projectId)) {
    const value = core.secrets.get(t, s.valueId);
    if (!value.includes(from)) continue;
    core.secrets.replace(t, s.valueId, value.split(from).join(to));
    t.update(unitSecrets).set({ version: s.version + 1, updatedAt: now }).where(and(eq(unitSecrets.projectId, projectId), eq(unitSecrets.unit, s.unit), eq(unitSecrets.name, s.name))).run();
    n++;
  }
  return n;
}

export function installSecretValues(core: Core): void {
  extendKind(core, "secret-group", secretGroupHooks);
  provideSecretValues(core, {
    groupEnv,
    setGroupVariable: (c, t, group, name, kind, value, actor) => {
      storeVariable(c, t, group, name, kind, value, actor);
    },
    rewriteValues,
    unitSecret,
  });
}
