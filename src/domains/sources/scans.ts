/**
 * Scans: what a repository deploys. A repository without `ops.toml` is scanned inline (its
 * Dockerfiles / Containerfiles, 200 with the detected services). One with `ops.toml` declares
 * itself: the scan is recorded and queued (202), and the scheduler item `sources.scan` evaluates
 * the file and reconciles the project's resources as the person who asked (a merge in the studio
 * queues one too). A scan of the default branch of a connected source also refreshes the
 * source's `declared` names.
 */
import { and, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed, type AuditActor } from "../../core/audit";
import { evaluate } from "../../core/authz/effective";
import { tx, type Tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import type { CodeHost, RepoRef } from "../../adapters/codehost/types";
import { assertNotArchived } from "../access/service";
import { assertInstalled, assertRepoName, findSourceByRepo, repoRefOf, requireHost, type SourceRow } from "./connections";
import { detectFromBuildFile, isBuildFile } from "./dockerfile";
import { declaredNamesOf, OPS_TOML, OPS_TOML_MAX_BYTES, OpsTomlError, parseOpsToml, type OpsDeclaration } from "./ops-toml";
import { reconcile } from "./reconcile";
import { TREE_LIMIT } from "./studio";
import { sourceScans, sources } from "./tables";
import type { DetectedService, Reconciled, ScanResponse } from "./model";

export const SCAN_ITEM = "sources.scan";
/** Build files read by one inline scan. */
const MAX_BUILD_FILES = 50;
const BUILD_FILE_MAX_BYTES = 1024 * 1024;
const SKIPPED_DIRS = /(^|\/)(node_modules|vendor|\.git|target|dist|build)\//;

type ScanRow = typeof sourceScans.$inferSelect;

/** Environments of the project where the caller holds resources.write now (what a reconcile may write). */
export function writableEnvironments(core: Core, auth: AuthContext, project: ProjectRef): string[] {
  const grants = core.access.grants(auth.principal);
  return project.environments.filter((environment) => evaluate(auth.principal, grants, { kind: "project", projectId: project.id, environment }).permissions.has("resources.write"));
}

/** Record a queued scan and its scheduler item inside the caller's transaction; returns its id. */
export function insertQueuedScan(
  core: Core,
  t: Tx,
  a: { project: ProjectRef; source: SourceRow | null; repo?: RepoRef; gitRef: string; defaultBranch: boolean; actor: AuditActor; requestedBy: string; writable: string[] },
): number {
  const repo = a.source ? repoRefOf(a.source) : (a.repo as RepoRef);
  const row = t
    .insert(sourceScans)
    .values({
      projectId: a.project.id,
      sourceId: a.source?.id ?? null,
      repo: repo.repo,
      installationId: repo.installationId,
      gitRef: a.gitRef,
      defaultBranch: a.defaultBranch,
      status: "queued",
      requestedBy: a.requestedBy,
      actor: JSON.stringify(a.actor),
      writableEnvironments: JSON.stringify(a.writable),
      createdAt: core.clock.now(),
    })
    .returning({ id: sourceScans.id })
    .get();
  core.scheduler.enqueue(t, SCAN_ITEM, { scanId: row.id }, { maxAttempts: 1 });
  return row.id;
}

/** Every build file of a commit's tree, as detected services, in path order. */
export async function detectBuildFiles(host: CodeHost, repo: RepoRef, sha: string): Promise<DetectedService[]> {
  const listing = await host.readTree(repo, sha, { limit: TREE_LIMIT });
  const files = listing.entries.filter((e) => e.type === "blob" && e.mode !== "120000" && isBuildFile(e.path) && !SKIPPED_DIRS.test(e.path)).slice(0, MAX_BUILD_FILES);
  const repoName = repo.repo.split("/")[1] ?? "app";
  const out: DetectedService[] = [];
  for (const f of files) {
    const file = await host.readFile(repo, sha, f.path, { maxBytes: BUILD_FILE_MAX_BYTES });
    if (file.kind !== "file" || !file.content) continue;
    out.push(...detectFromBuildFile(repoName, f.path, Buffer.from(file.content).toString("utf8")));
  }
  return out;
}

/** The declaration at a commit: null when there is no ops.toml; throws OpsTomlError when it is wrong. */
export async function readDeclaration(host: CodeHost, repo: RepoRef, sha: string): Promise<OpsDeclaration | null> {
  const file = await host.readFile(repo, sha, OPS_TOML, { maxBytes: OPS_TOML_MAX_BYTES });
  if (file.kind === "missing") return null;
  if (file.kind === "directory") throw new OpsTomlError("", "is a directory, not a file");
  if (!file.content) throw new OpsTomlError("", `is ${file.size} bytes; at most ${OPS_TOML_MAX_BYTES} are read`);
  return parseOpsToml(Buffer.from(file.content).toString("utf8"));
}

/**
 * `POST …/sources/scan`: through the project's source of the repository when connected, else
 * through the installation on the owner. 200 inline, or 202 with a queued scan for ops.toml.
 */
export async function scanRepository(core: Core, project: ProjectRef, body: { repo: string; ref?: string | null }, auth: AuthContext): Promise<{ status: 200; services: DetectedService[] } | { status: 202; scan_id: number }> {
  const host = requireHost(core);
  assertRepoName(body.repo);
  const source = findSourceByRepo(core, project.id, body.repo);
  let repo: RepoRef;
  if (source) {
    await assertInstalled(core, host, project, source);
    repo = repoRefOf(source);
  } else {
    const owner = body.repo.split("/")[0]!;
    const inst = await host.installationFor(owner, project.slug);
    if (inst === null) throw new OpsError("conflict", `The code host App is not installed on ${owner} for project ${project.slug}.`);
    repo = { repo: body.repo, installationId: inst };
  }
  const info = await host.getRepo(repo);
  if (!info) throw new OpsError("not_found", `No repository ${body.repo} on the code host.`);
  const gitRef = body.ref || info.defaultBranch;
  const sha = await host.resolveRef(repo, gitRef);
  if (!sha) throw new OpsError("not_found", `No branch, tag or commit "${gitRef}" in ${body.repo}.`);
  const declares = (await host.readFile(repo, sha, OPS_TOML, { maxBytes: 0 })).kind !== "missing";
  if (!declares) return { status: 200, services: await detectBuildFiles(host, repo, sha) };

  assertNotArchived(project);
  const actor = actorOf(auth.principal, auth.meta);
  const writable = writableEnvironments(core, auth, project);
  const scanId = tx(core.db, (t) => {
    const id = insertQueuedScan(core, t, { project, source, repo, gitRef, defaultBranch: gitRef === info.defaultBranch, actor, requestedBy: auth.principal.name, writable });
    auditAllowed(core, t, actor, "sources.write", `source:${body.repo}`, { project: project.slug }, { op: "scan", scan: id, ref: gitRef });
    return id;
  });
  return { status: 202, scan_id: scanId };
}

function servicesOf(decl: OpsDeclaration): DetectedService[] {
  return decl.services.map((s) => ({
    name: s.name,
    context: s.context,
    dockerfile: s.dockerfile ?? "",
    kind: "service" as const,
    port: s.port,
    healthcheck: s.health,
    target: null,
  }));
}

/** The scheduler item: evaluate the repository at the ref and reconcile a declaration. */
export async function runScan(core: Core, scanId: number): Promise<void> {
  const row = core.db.select().from(sourceScans).where(eq(sourceScans.id, scanId)).get();
  if (!row || (row.status !== "queued" && row.status !== "running")) return;
  const lines: string[] = [];
  const say = (line: string) => lines.push(line);
  const save = (set: Partial<typeof sourceScans.$inferInsert>) => core.db.update(sourceScans).set({ ...set, log: lines.join("\n") }).where(eq(sourceScans.id, scanId)).run();
  save({ status: "running", startedAt: core.clock.now() });
  try {
    const project = core.access.findProjectById(row.projectId);
    if (!project) throw new OpsError("not_found", "The project is gone.");
    const host = requireHost(core);
    const repo: RepoRef = { repo: row.repo, installationId: row.installationId };
    const sha = await host.resolveRef(repo, row.gitRef);
    if (!sha) throw new OpsError("not_found", `No branch, tag or commit "${row.gitRef}" in ${row.repo}.`);
    say(`${row.gitRef} is at ${sha}`);
    save({ commitSha: sha });
    const decl = await readDeclaration(host, repo, sha);
    if (!decl) {
      say(`no ${OPS_TOML}: detecting build files`);
      const services = await detectBuildFiles(host, repo, sha);
      say(`found ${services.length} service${services.length === 1 ? "" : "s"}`);
      if (row.defaultBranch && row.sourceId) core.db.update(sources).set({ declared: null }).where(eq(sources.id, row.sourceId)).run();
      save({ status: "succeeded", services: JSON.stringify(services), finishedAt: core.clock.now() });
      return;
    }
    say(`${OPS_TOML}: ${decl.services.length} service(s), ${decl.steps.length} step(s)`);
    for (const [env, svcs] of Object.entries(decl.operational)) {
      for (const [svc, settings] of Object.entries(svcs)) {
        if (settings.address !== undefined) say(`note: operational.${env === "" ? '""' : env}.${svc}.address is recorded in the declaration; no resource setting takes it yet`);
      }
    }
    const actor = { ...(JSON.parse(row.actor) as AuditActor) };
    actor.context = { ...(actor.context ?? {}), scan: scanId };
    const reconciled: Reconciled = await reconcile(
      core,
      {
        project,
        repo: row.repo,
        decl,
        gitRef: row.gitRef,
        defaultBranch: row.defaultBranch,
        commitSha: sha,
        writable: new Set(JSON.parse(row.writableEnvironments) as string[]),
        actor,
        sourceId: row.defaultBranch ? row.sourceId : null,
      },
      say,
    );
    if (row.defaultBranch && row.sourceId) core.db.update(sources).set({ declared: JSON.stringify(declaredNamesOf(decl)) }).where(eq(sources.id, row.sourceId)).run();
    save({
      status: "succeeded",
      services: JSON.stringify(servicesOf(decl)),
      steps: JSON.stringify(decl.steps.map((s) => ({ name: s.name, spec: { service: s.service, command: s.command } }))),
      hooks: JSON.stringify(decl.hooks),
      reconciled: JSON.stringify(reconciled),
      finishedAt: core.clock.now(),
    });
  } catch (e) {
    const known = e instanceof OpsTomlError || (e instanceof OpsError && e.code !== "internal");
    if (!known) core.log.error("scan failed", { scan: scanId, err: e });
    const message = known ? (e as Error).message : "The scan could not read the repository.";
    say(`failed: ${message}`);
    save({ status: "failed", error: message, finishedAt: core.clock.now() });
  }
}

export function toScanResponse(row: ScanRow): ScanResponse {
  return {
    error: row.error,
    git_ref: row.gitRef,
    hooks: JSON.parse(row.hooks),
    id: row.id,
    log: row.log,
    reconciled: row.reconciled ? (JSON.parse(row.reconciled) as Reconciled) : null,
    repo: row.repo,
    services: JSON.parse(row.services) as DetectedService[],
    status: row.status,
    steps: JSON.parse(row.steps),
  };
}

/** `GET …/sources/scans/{id}`. */
export function getScan(core: Core, project: ProjectRef, id: number): ScanResponse {
  const row = core.db.select().from(sourceScans).where(and(eq(sourceScans.id, id), eq(sourceScans.projectId, project.id))).get();
  if (!row) throw new OpsError("not_found", `No scan ${id} in project ${project.slug}.`);
  return toScanResponse(row);
}
