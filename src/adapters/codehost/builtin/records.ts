/**
 * The built-in host's rows: installations (one per project owner), pull requests numbered per
 * repository, and the check runs, statuses and deployments builds report.
 */
import { and, desc, eq } from "drizzle-orm";
import type { Core } from "../../../core/core";
import { tx, type Queryable } from "../../../core/db/client";
import { OpsError } from "../../../core/errors";
import type { CheckRunInput, CommitStatusInput, DeploymentInput, DeploymentStatusInput } from "../types";
import { gitOwners, gitPulls, gitRecords } from "./tables";

export type PullRow = typeof gitPulls.$inferSelect;

/** The owner's installation number, created on first use. */
export function installationOf(core: Core, owner: string): number {
  const found = core.db.select({ id: gitOwners.id }).from(gitOwners).where(eq(gitOwners.owner, owner)).get();
  if (found) return found.id;
  return tx(core.db, (t) => {
    const again = t.select({ id: gitOwners.id }).from(gitOwners).where(eq(gitOwners.owner, owner)).get();
    if (again) return again.id;
    return t.insert(gitOwners).values({ owner, createdAt: core.clock.now() }).returning({ id: gitOwners.id }).get().id;
  });
}

/** The installation number an owner has, or 0 (read only). */
export function knownInstallation(core: Core, owner: string): number {
  return core.db.select({ id: gitOwners.id }).from(gitOwners).where(eq(gitOwners.owner, owner)).get()?.id ?? 0;
}

/** Insert an open pull request with the repository's next number (409 when one is already open for head → base). */
export function insertPull(core: Core, repo: string, p: { head: string; base: string; title: string; body: string; headSha: string }): PullRow {
  return tx(core.db, (t) => {
    const open = t
      .select({ number: gitPulls.number })
      .from(gitPulls)
      .where(and(eq(gitPulls.repo, repo), eq(gitPulls.head, p.head), eq(gitPulls.base, p.base), eq(gitPulls.state, "open")))
      .get();
    if (open) throw new OpsError("conflict", `Pull request #${open.number} from ${p.head} into ${p.base} is already open.`);
    const last = t.select({ number: gitPulls.number }).from(gitPulls).where(eq(gitPulls.repo, repo)).orderBy(desc(gitPulls.number)).limit(1).get();
    const now = core.clock.now();
    return t
      .insert(gitPulls)
      .values({ repo, number: (last?.number ?? 0) + 1, head: p.head, base: p.base, title: p.title, body: p.body, state: "open", headSha: p.headSha, mergeSha: null, createdAt: now, updatedAt: now })
      .returning()
      .get();
  });
}

export function findPull(core: Core, repo: string, number: number): PullRow | null {
  return core.db.select().from(gitPulls).where(and(eq(gitPulls.repo, repo), eq(gitPulls.number, number))).get() ?? null;
}

/** Move an open pull request to merged or closed; 409 when it is no longer open. */
export function finishPull(core: Core, repo: string, number: number, state: "merged" | "closed", mergeSha: string | null): void {
  const done = core.db
    .update(gitPulls)
    .set({ state, mergeSha, updatedAt: core.clock.now() })
    .where(and(eq(gitPulls.repo, repo), eq(gitPulls.number, number), eq(gitPulls.state, "open")))
    .returning({ id: gitPulls.id })
    .all();
  if (done.length === 0) throw new OpsError("conflict", `Pull request #${number} is not open.`);
}

type RecordKind = (typeof gitRecords.$inferInsert)["kind"];

function insertRecord(core: Core, repo: string, kind: RecordKind, v: { sha: string; parentId?: number; name: string; state: string; conclusion?: string | null; detail: Record<string, unknown> }, q: Queryable = core.db): number {
  const now = core.clock.now();
  return q
    .insert(gitRecords)
    .values({ repo, kind, sha: v.sha, parentId: v.parentId ?? null, name: v.name, state: v.state, conclusion: v.conclusion ?? null, detail: JSON.stringify(v.detail), createdAt: now, updatedAt: now })
    .returning({ id: gitRecords.id })
    .get().id;
}

function findRecord(core: Core, repo: string, kind: RecordKind, id: number, q: Queryable = core.db) {
  return q.select().from(gitRecords).where(and(eq(gitRecords.id, id), eq(gitRecords.repo, repo), eq(gitRecords.kind, kind))).get() ?? null;
}

/** Create a check run (in `q`'s transaction when given). */
export function createCheckRun(core: Core, repo: string, input: CheckRunInput, q: Queryable = core.db): number {
  return insertRecord(core, repo, "check_run", {
    sha: input.headSha,
    name: input.name,
    state: input.status,
    conclusion: input.conclusion ?? null,
    detail: { title: input.title ?? null, summary: input.summary ?? null, details_url: input.detailsUrl ?? null },
  }, q);
}

/** Update a check run (in `q`'s transaction when given); 404 when it is not there. */
export function updateCheckRun(core: Core, repo: string, id: number, input: Partial<Omit<CheckRunInput, "headSha">>, q: Queryable = core.db): void {
  const row = findRecord(core, repo, "check_run", id, q);
  if (!row) throw new OpsError("not_found", `No check run ${id} on ${repo}.`);
  const detail = JSON.parse(row.detail) as Record<string, unknown>;
  if (input.title !== undefined) detail.title = input.title;
  if (input.summary !== undefined) detail.summary = input.summary;
  if (input.detailsUrl !== undefined) detail.details_url = input.detailsUrl;
  q
    .update(gitRecords)
    .set({ name: input.name ?? row.name, state: input.status ?? row.state, conclusion: input.conclusion ?? row.conclusion, detail: JSON.stringify(detail), updatedAt: core.clock.now() })
    .where(eq(gitRecords.id, id))
    .run();
}

/** Add a commit status (in `q`'s transaction when given). */
export function setCommitStatus(core: Core, repo: string, sha: string, input: CommitStatusInput, q: Queryable = core.db): number {
  return insertRecord(core, repo, "status", { sha, name: input.context, state: input.state, detail: { description: input.description ?? null, target_url: input.targetUrl ?? null } }, q);
}

export function createDeployment(core: Core, repo: string, input: DeploymentInput): number {
  return insertRecord(core, repo, "deployment", { sha: input.sha, name: input.environment, state: "created", detail: { description: input.description ?? null } });
}

export function createDeploymentStatus(core: Core, repo: string, deploymentId: number, input: DeploymentStatusInput): number {
  const dep = findRecord(core, repo, "deployment", deploymentId);
  if (!dep) throw new OpsError("not_found", `No deployment ${deploymentId} on ${repo}.`);
  const id = insertRecord(core, repo, "deployment_status", {
    sha: dep.sha,
    parentId: deploymentId,
    name: dep.name,
    state: input.state,
    detail: { description: input.description ?? null, environment_url: input.environmentUrl ?? null, log_url: input.logUrl ?? null },
  });
  core.db.update(gitRecords).set({ state: input.state, updatedAt: core.clock.now() }).where(eq(gitRecords.id, deploymentId)).run();
  return id;
}
