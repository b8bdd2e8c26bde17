/**
 * The sources domain's surface for other domains (builds, deployments): which source a project
 * builds a repository from, the Core's code host, a commit fetched into a directory, the push
 * event, and a repository's `ops.toml` declaration at a commit.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import { codeHostFor } from "../../adapters/codehost";
import type { CodeHost, CommitInfo, RepoRef } from "../../adapters/codehost/types";
import { findSourceByRepo, repoRefOf, requireHost, type SourceRow } from "./connections";
import { readDeclaration } from "./scans";
import { sources, sourceSteps } from "./tables";
import type { OpsDeclaration } from "./ops-toml";

export { PUSH, type PushEvent } from "./events";
export { parseOpsToml, OpsTomlError, OPS_TOML, type OpsDeclaration, type ServiceDeclaration, type StepDeclaration, type OperationalSettings } from "./ops-toml";
export { findSourceByRepo, repoRefOf, requireHost, type SourceRow } from "./connections";
export type { CodeHost, CommitInfo, DeploymentStatusInput, RepoRef } from "../../adapters/codehost/types";

/** The Core's code host (whichever it is); `requireHost` for the 503 when it is not configured. */
export function hostOf(core: Core): CodeHost {
  return codeHostFor(core);
}

/** The source row by id (any project), or null. */
export function sourceById(core: Core, id: string): SourceRow | null {
  return core.db.select().from(sources).where(eq(sources.id, id)).get() ?? null;
}

/** The project's source of `repo` (`owner/repo`), or null: what a service's `source.repo` names. */
export function findSourceOfRepo(core: Core, projectId: string, repo: string): SourceRow | null {
  return findSourceByRepo(core, projectId, repo);
}

/** Write commit `sha` of the source's repository into the empty directory `dir` (the builder's clone). */
export async function fetchCommit(core: Core, source: Pick<SourceRow, "repo" | "installationId">, sha: string, dir: string): Promise<void> {
  await requireHost(core).fetchCommit(repoRefOf(source), sha, dir);
}

/** Author and first message line of a commit of the source's repository; 404 when unknown. */
export async function commitOf(core: Core, source: Pick<SourceRow, "repo" | "installationId">, sha: string): Promise<CommitInfo> {
  const info = await requireHost(core).commitInfo(repoRefOf(source), sha);
  if (!info) throw new OpsError("not_found", `No commit ${sha} in ${source.repo}.`);
  return info;
}

/** The repository's ops.toml at a commit (null when it has none); throws OpsTomlError naming a bad key. */
export async function declarationAt(core: Core, source: Pick<SourceRow, "repo" | "installationId">, sha: string): Promise<OpsDeclaration | null> {
  return readDeclaration(requireHost(core), repoRefOf(source), sha);
}

/** The release steps the source's default branch declares (as of its last scan). */
export function declaredSteps(core: Core, sourceId: string): Array<{ name: string; service: string; command: string }> {
  return core.db
    .select()
    .from(sourceSteps)
    .where(eq(sourceSteps.sourceId, sourceId))
    .all()
    .filter((r) => r.declared)
    .map((r) => ({ name: r.name, ...(JSON.parse(r.spec) as { service: string; command: string }) }));
}
