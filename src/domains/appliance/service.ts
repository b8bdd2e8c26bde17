/**
 * The appliance domain's surface: self-update of the server binary, from the command line and
 * from the console (estate owners), with the restart that follows.
 */
import { accessSync, constants } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import type { AuditActor } from "../../core/audit";
import { auditAllowed } from "../../core/audit";
import { tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { compiledSelf } from "../../reexec";
import { hostTarget } from "../cli/service";
import { pinnedReleaseKeys, selfUpdate, type SelfUpdateResult } from "./self-update";

export { selfUpdate, pinnedReleaseKeys, signedText, ReleaseManifest, type SelfUpdateResult, type SelfUpdateOptions } from "./self-update";

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Update the running server's own binary from OPS_UPDATE_URL; on success (audited) it re-executes
 * itself shortly after the response went out (SIGHUP, as `ops restart`).
 */
export async function updateServer(core: Core, allowDowngrade: boolean, actor: AuditActor): Promise<SelfUpdateResult & { restarting: boolean }> {
  if (core.config.updateUrl === null) throw new OpsError("conflict", "Self-update is off: set OPS_UPDATE_URL to a release manifest.");
  const binary = compiledSelf();
  if (binary === null) throw new OpsError("conflict", "This ops runs from a checkout, not a compiled binary: update the checkout instead.");
  // Under the unit `ops install` writes, the service may not write /usr/local/bin (docs/decisions/0388).
  if (!writable(path.dirname(binary))) throw new OpsError("conflict", `This server may not write ${path.dirname(binary)} (the installed service runs as user ops with a read-only /usr): run 'sudo ops self-update' on the host.`);
  const r = await selfUpdate({ manifestUrl: core.config.updateUrl, keys: pinnedReleaseKeys(), currentVersion: core.version, target: hostTarget(), binaryPath: binary, allowDowngrade });
  if (!r.updated) return { ...r, restarting: false };
  tx(core.db, (t) => auditAllowed(core, t, actor, "estate.manage", `ops-binary:${r.version}`, {}, { op: "estate.self-update", from: r.from, sha256: r.sha256 }));
  const restarting = core.scheduler.started;
  if (restarting) setTimeout(() => process.kill(process.pid, "SIGHUP"), 250);
  return { ...r, restarting };
}
