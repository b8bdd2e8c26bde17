/**
 * What the sources domain tells a pusher (`HostPush.say`, docs/decisions/0430): a push to the
 * default branch whose `ops.toml` is not the one the last successful scan read builds with its
 * build keys, but the services, steps, domains and operational settings it declares follow only a
 * Scan — so the pusher is told to run one. The sources module subscribes it to the host after
 * `recordPush`.
 */
import { and, desc, eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { codeHostFor } from "../../adapters/codehost";
import type { HostPush } from "../../adapters/codehost/types";
import { sourceScans, sources } from "./tables";
import { OPS_TOML } from "./ops-toml";

const ZERO_SHA = /^0+$/;

/** The blob of ops.toml at a commit ("" when there is none). */
async function opsTomlBlob(core: Core, source: typeof sources.$inferSelect, sha: string): Promise<string> {
  const at = await codeHostFor(core).readFile({ repo: source.repo, installationId: source.installationId }, sha, OPS_TOML, { maxBytes: 0 });
  return at.kind === "file" ? at.sha : "";
}

/**
 * Say "run Scan" for each project the repository is connected to whose default branch the push
 * moved to a commit with another ops.toml than the last scan read.
 */
export async function tellScanDue(core: Core, push: HostPush): Promise<void> {
  if (!push.say || ZERO_SHA.test(push.after)) return;
  for (const source of core.db.select().from(sources).where(eq(sources.repo, push.repo)).all()) {
    const project = core.access.findProjectById(source.projectId);
    if (project && push.ref === `refs/heads/${source.defaultBranch}`) await tellSource(core, project.slug, source, push, push.say);
  }
}

async function tellSource(core: Core, project: string, source: typeof sources.$inferSelect, push: HostPush, say: (line: string) => void): Promise<void> {
  const last = core.db
    .select({ commitSha: sourceScans.commitSha })
    .from(sourceScans)
    .where(and(eq(sourceScans.sourceId, source.id), eq(sourceScans.defaultBranch, true), eq(sourceScans.status, "succeeded")))
    .orderBy(desc(sourceScans.id))
    .limit(1)
    .get();
  // Never scanned: the builds' line already says to run Scan when nothing follows the branch.
  if (!last?.commitSha || last.commitSha === push.after) return;
  try {
    const [scanned, pushed] = await Promise.all([opsTomlBlob(core, source, last.commitSha), opsTomlBlob(core, source, push.after)]);
    if (scanned === pushed) return;
    say(`${OPS_TOML} changed since the last scan: its services, steps and domains apply at the next Scan: ${core.config.publicUrl}/projects/${encodeURIComponent(project)}/sources`);
  } catch (e) {
    core.log.warn("ops.toml of a pushed commit could not be compared", { repo: source.repo, sha: push.after, err: (e as Error).message });
  }
}
