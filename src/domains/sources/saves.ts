/**
 * Studio saves: an edit becomes a commit on a new branch `ops/save-<id>` over the head of the
 * branch it was made on, and a pull request back into that branch. The request is checked and
 * queued (202); the scheduler item `sources.save` runs it (queued → running → open, or failed
 * with the reason). Merging an open save is a real merge on the host; a merge queues a scan of
 * the default branch, which reconciles a declaring repository as the person who merged.
 */
import { and, desc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { iso, isoOrNull } from "../../core/clock";
import { tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { assertNotArchived } from "../access/service";
import { assertInstalled, getSourceRow, repoRefOf, requireHost } from "./connections";
import { checkAgainstHead, checkSaveShape, type CheckedChange } from "./save-changes";
import { resolveStudioRef } from "./studio";
import { sourceSaves, sources } from "./tables";
import { insertQueuedScan, writableEnvironments } from "./scans";
import type { CreateSaveRequest, SaveFileResponse, SaveResponse } from "./model";

export const SAVE_ITEM = "sources.save";
export const SAVES_LISTED = 20;

type SaveRow = typeof sourceSaves.$inferSelect;

/** The requester as the save stores them: audit actor plus the commit author. */
export interface SaveActor extends AuditActor {
  name: string;
  email: string;
}

export function saveActorOf(auth: AuthContext): SaveActor {
  const p = auth.principal;
  return { ...actorOf(p, auth.meta), name: p.displayName || p.name, email: p.email ?? `${p.name}@ops.invalid` };
}

export function toSaveResponse(row: SaveRow): SaveResponse {
  return {
    branch: row.branch,
    commit_sha: row.commitSha,
    created_at: iso(row.createdAt),
    error: row.error,
    files: JSON.parse(row.files) as SaveFileResponse[],
    finished_at: isoOrNull(row.finishedAt),
    id: row.id,
    log: row.log,
    merge_sha: row.mergeSha,
    merged_at: isoOrNull(row.mergedAt),
    merged_by: row.mergedBy,
    message: row.message,
    pull_number: row.pullNumber,
    pull_url: row.pullUrl,
    ref: row.ref,
    repo: row.repo,
    requested_by: row.requestedBy,
    scan_id: row.scanId,
    source_id: row.sourceId,
    status: row.status,
  };
}

function getSaveRow(core: Core, project: ProjectRef, id: number): SaveRow {
  const row = core.db.select().from(sourceSaves).where(and(eq(sourceSaves.id, id), eq(sourceSaves.projectId, project.id))).get();
  if (!row) throw new OpsError("not_found", `No save ${id} in project ${project.slug}.`);
  return row;
}

/** `GET …/sources/saves/{id}`. */
export function getSave(core: Core, project: ProjectRef, id: number): SaveResponse {
  return toSaveResponse(getSaveRow(core, project, id));
}

/** `GET …/sources/{id}/saves`: the last 20, newest first. */
export function listSaves(core: Core, project: ProjectRef, sourceId: string): SaveResponse[] {
  const src = getSourceRow(core, project, sourceId);
  return core.db.select().from(sourceSaves).where(eq(sourceSaves.sourceId, src.id)).orderBy(desc(sourceSaves.id)).limit(SAVES_LISTED).all().map(toSaveResponse);
}

/** `POST …/sources/{id}/saves`: check, record and queue a save (202). */
export async function createSave(core: Core, project: ProjectRef, sourceId: string, body: CreateSaveRequest, auth: AuthContext): Promise<{ save_id: number; status: "queued" }> {
  const host = requireHost(core);
  const src = getSourceRow(core, project, sourceId);
  assertNotArchived(project);
  await assertInstalled(core, host, project, src);
  const changes = checkSaveShape(body);
  const at = await resolveStudioRef(core, src, body.ref);
  if (!at.sha) throw new OpsError("not_found", `${src.repo} has no commits on ${at.ref} yet: push a first commit, then edit it here.`);
  const files = await checkAgainstHead(host, repoRefOf(src), at.sha, changes);
  const actor = saveActorOf(auth);
  const row = tx(core.db, (t) => {
    const now = core.clock.now();
    const inserted = t
      .insert(sourceSaves)
      .values({
        projectId: project.id,
        sourceId: src.id,
        repo: src.repo,
        ref: body.ref ?? null,
        branch: null,
        message: body.message,
        files: JSON.stringify(files),
        payload: Buffer.from(JSON.stringify(changes)),
        status: "queued",
        log: "",
        requestedBy: auth.principal.name,
        actor: JSON.stringify(actor),
        createdAt: now,
      })
      .returning()
      .get();
    core.scheduler.enqueue(t, SAVE_ITEM, { saveId: inserted.id }, { maxAttempts: 1 });
    auditAllowed(core, t, actor, "sources.save", `source:${src.repo}`, { project: project.slug }, { op: "save", save: inserted.id, ref: at.ref, changes: changes.length });
    return inserted;
  });
  return { save_id: row.id, status: "queued" };
}

/** The scheduler item: commit the changes on `ops/save-<id>` and open the pull request. */
export async function runSave(core: Core, saveId: number): Promise<void> {
  const row = core.db.select().from(sourceSaves).where(eq(sourceSaves.id, saveId)).get();
  if (!row || (row.status !== "queued" && row.status !== "running")) return;
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    core.db.update(sourceSaves).set({ log: lines.join("\n") }).where(eq(sourceSaves.id, saveId)).run();
  };
  core.db.update(sourceSaves).set({ status: "running" }).where(eq(sourceSaves.id, saveId)).run();
  try {
    const src = row.sourceId ? core.db.select().from(sources).where(eq(sources.id, row.sourceId)).get() : undefined;
    if (!src) throw new OpsError("conflict", "The source was disconnected before the save ran.");
    const host = requireHost(core);
    const repo = repoRefOf(src);
    const changes = JSON.parse(Buffer.from(row.payload ?? Buffer.from("[]")).toString("utf8")) as CheckedChange[];
    const at = await resolveStudioRef(core, src, row.ref);
    if (!at.sha) throw new OpsError("not_found", `${src.repo} has no commits on ${at.ref}.`);
    say(`${at.ref} is at ${at.sha}`);
    await checkAgainstHead(host, repo, at.sha, changes);
    const actor = JSON.parse(row.actor) as SaveActor;
    const branch = `ops/save-${row.id}`;
    // A save interrupted after its commit (a restart of ops between the two host calls) finds its
    // branch: the commit is reused when it sits right on the head of `ref`, else the save fails
    // saying why. Only ops writes `ops/save-<id>`.
    const existing = await host.resolveRef(repo, `refs/heads/${branch}`);
    let commit: string;
    if (existing) {
      const info = await host.commitInfo(repo, existing);
      if (!info || info.parents.length !== 1 || info.parents[0] !== at.sha) {
        throw new OpsError("conflict", `The branch ${branch} already exists and its commit is not this save's over the head of ${at.ref}; save again.`);
      }
      commit = existing;
      say(`resumed: ${branch} already holds ${commit}`);
    } else {
      commit = await host.commitChanges(repo, {
        branch,
        parentSha: at.sha,
        message: row.message,
        author: { name: actor.name, email: actor.email },
        changes: changes.map((c) => ({ path: c.path, content: c.content === null ? null : Buffer.from(c.content, "base64"), ...(c.movedFrom ? { movedFrom: c.movedFrom } : {}) })),
      });
      say(`committed ${commit} on ${branch} (${changes.length} change${changes.length === 1 ? "" : "s"})`);
    }
    const [title, ...rest] = row.message.split("\n");
    const pull = await host.openPull(repo, { head: branch, base: at.ref, title: title!.trim() || `Save ${row.id}`, body: `${rest.join("\n").trim()}\n\nSaved in the ops studio by ${row.requestedBy}.`.trim() });
    say(`opened pull request #${pull.number} into ${at.ref}`);
    core.db
      .update(sourceSaves)
      .set({ status: "open", branch, commitSha: commit, pullNumber: pull.number, pullUrl: pull.htmlUrl, payload: null, finishedAt: core.clock.now(), log: lines.join("\n") })
      .where(eq(sourceSaves.id, saveId))
      .run();
  } catch (e) {
    const message = e instanceof OpsError && e.code !== "internal" ? e.message : "The code host could not complete the save.";
    if (!(e instanceof OpsError) || e.code === "internal") core.log.error("save failed", { save: saveId, err: e });
    say(`failed: ${message}`);
    core.db.update(sourceSaves).set({ status: "failed", error: message, payload: null, finishedAt: core.clock.now(), log: lines.join("\n") }).where(eq(sourceSaves.id, saveId)).run();
  }
}

/** `POST …/sources/saves/{id}/merge`: merge the open pull request; 409 when not open or refused. */
export async function mergeSave(core: Core, project: ProjectRef, id: number, auth: AuthContext): Promise<SaveResponse> {
  const host = requireHost(core);
  const row = getSaveRow(core, project, id);
  if (row.status !== "open" || row.pullNumber === null) throw new OpsError("conflict", `Save ${id} is ${row.status}: only an open pull request can be merged.`);
  assertNotArchived(project);
  const src = row.sourceId ? getSourceRow(core, project, row.sourceId) : null;
  if (!src) throw new OpsError("conflict", "The save's source was disconnected.");
  await assertInstalled(core, host, project, src);
  const actor = saveActorOf(auth);
  const [title] = row.message.split("\n");
  const result = await host.mergePull(repoRefOf(src), row.pullNumber, {
    message: `Merge pull request #${row.pullNumber} from ${row.branch}\n\n${title}`,
    committer: { name: actor.name, email: actor.email },
  });
  if (!result.merged) throw new OpsError("conflict", result.reason, { conflicts: result.conflicts });
  const writable = writableEnvironments(core, auth, project);
  const updated = tx(core.db, (t) => {
    const now = core.clock.now();
    const scanId = insertQueuedScan(core, t, { project, source: src, gitRef: src.defaultBranch, defaultBranch: true, actor, requestedBy: auth.principal.name, writable });
    auditAllowed(core, t, actor, "sources.save", `source:${src.repo}`, { project: project.slug }, { op: "merge", save: id, pull: row.pullNumber, sha: result.sha, scan: scanId });
    return t
      .update(sourceSaves)
      .set({ status: "merged", mergeSha: result.sha, mergedAt: now, mergedBy: auth.principal.name, scanId })
      .where(eq(sourceSaves.id, id))
      .returning()
      .get();
  });
  return toSaveResponse(updated);
}
