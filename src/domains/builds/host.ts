/**
 * Host feedback: each build has one check run on its commit (created when the build is queued,
 * updated at every state, concluded when it ends) and a commit status per state under the context
 * `ops/<environment>/<service>`, or `ops/publish` for a publish build (what branch protection and
 * pull request pages read on hosts that show statuses rather than checks). Reports are best effort: a host that fails or is slow never
 * fails or stalls a build (each call is bounded; failures are logged), and reports of one build are
 * sent in order.
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { withDeadline } from "../../core/deadline";
import { codeHostFor } from "../../adapters/codehost";
import type { CheckRunInput, CommitStatusInput, RepoRef } from "../../adapters/codehost/types";
import { sourceById } from "../sources/service";
import { builds } from "./tables";
import { buildById, timingsOf, type BuildRow } from "./rows";

const CHAINS = "builds.host-chains";
/** Longest a build waits for one report. */
const REPORT_TIMEOUT_MS = 10_000;

/** The console page of a build (the check run's details URL). */
export function buildUrl(core: Core, row: Pick<BuildRow, "project" | "id">): string {
  return `${core.config.publicUrl}/projects/${encodeURIComponent(row.project)}/builds/${row.id}`;
}

function checkName(row: BuildRow): string {
  return row.kind === "publish" ? "ops/publish" : `ops/${row.environment}/${row.service}`;
}

const TITLES: Record<string, string> = {
  queued: "Queued",
  cloning: "Cloning the commit",
  checks: "Running the checks",
  building: "Building",
  scanning: "Scanning the image for secrets",
  pushing: "Pushing the image",
  signing: "Signing the image",
  deploying: "Deploying",
  publishing: "Publishing the modules",
  healthy: "Built, signed and healthy",
  published: "Published",
  failed: "Failed",
  rolled_back: "Rolled back",
  cancelled: "Cancelled",
};

function title(row: BuildRow): string {
  const base = TITLES[row.status] ?? row.status;
  return row.failureKind ? `${base} (${row.failureKind})` : base;
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.round(ms / 100) / 10)}s`;
}

/** The check run's summary: the steps with their timings, the image and the error (Markdown). */
export function checkSummary(row: BuildRow): string {
  const what = row.kind === "publish" ? `Publish build #${row.id} of the tag \`${row.branch}\`` : `Build #${row.id} of \`${row.service}\` in ${row.environment}`;
  const lines = [`${what} (${row.trigger}, requested by ${row.requestedBy}).`, ""];
  for (const s of timingsOf(row)) {
    const mark = s.ok === undefined ? "–" : s.ok ? "✓" : "✗";
    const took = s.finishedAt !== undefined ? ` ${seconds(s.finishedAt - s.startedAt)}` : " (running)";
    lines.push(`- ${mark} ${s.step}${took}${s.note ? `: ${s.note}` : ""}`);
  }
  if (row.imageRef) lines.push("", `Image: \`${row.imageRef}\`${row.imageDigest ? ` (\`${row.imageDigest}\`)` : ""}`);
  if (row.error) lines.push("", `Error: ${row.error}`);
  return lines.join("\n");
}

function checkInput(core: Core, row: BuildRow): Omit<CheckRunInput, "headSha"> {
  const base = { name: checkName(row), title: title(row), summary: checkSummary(row), detailsUrl: buildUrl(core, row) };
  switch (row.status) {
    case "queued":
      return { ...base, status: "queued" };
    case "healthy":
    case "published":
      return { ...base, status: "completed", conclusion: "success" };
    case "cancelled":
      return { ...base, status: "completed", conclusion: "cancelled" };
    case "failed":
    case "rolled_back":
      return { ...base, status: "completed", conclusion: row.error?.includes("timed out") ? "timed_out" : "failure" };
    default:
      return { ...base, status: "in_progress" };
  }
}

function statusInput(core: Core, row: BuildRow): CommitStatusInput {
  const state: CommitStatusInput["state"] =
    row.status === "healthy" || row.status === "published" ? "success" : row.status === "failed" || row.status === "rolled_back" ? "failure" : row.status === "cancelled" ? "error" : "pending";
  return { state, context: checkName(row), description: title(row).slice(0, 140), targetUrl: buildUrl(core, row) };
}

function repoOf(core: Core, row: BuildRow): RepoRef | null {
  if (!row.sourceId) return null;
  const source = sourceById(core, row.sourceId);
  return source ? { repo: source.repo, installationId: source.installationId } : null;
}

function bounded<T>(work: Promise<T>): Promise<T> {
  return withDeadline(work, REPORT_TIMEOUT_MS);
}

async function send(core: Core, buildId: number): Promise<void> {
  const row = buildById(core.db, buildId);
  if (!row) return;
  const host = codeHostFor(core);
  if (!host.configured()) return;
  const ref = repoOf(core, row);
  if (!ref) return;
  const input = checkInput(core, row);
  if (host.recordReportIn) {
    // The built-in host: the check run, the status and their ids on the build in one commit.
    try {
      tx(core.db, (t) => {
        const r = host.recordReportIn!(t, ref, { checkRunId: row.hostCheckRunId, check: { ...input, headSha: row.commitSha }, sha: row.commitSha, status: statusInput(core, row) });
        if (r.checkRunError) core.log.warn("build check run not reported to the code host", { build: row.id, status: row.status, err: r.checkRunError });
        t.update(builds)
          .set(r.checkRunId !== null && row.hostCheckRunId === null ? { hostCheckRunId: r.checkRunId, hostStatusId: r.statusId } : { hostStatusId: r.statusId })
          .where(eq(builds.id, row.id))
          .run();
      });
    } catch (e) {
      core.log.warn("build not reported to the code host", { build: row.id, status: row.status, err: (e as Error).message });
    }
    return;
  }
  try {
    if (row.hostCheckRunId === null) {
      const id = await bounded(host.createCheckRun(ref, { ...input, headSha: row.commitSha }));
      core.db.update(builds).set({ hostCheckRunId: id }).where(eq(builds.id, row.id)).run();
    } else {
      await bounded(host.updateCheckRun(ref, row.hostCheckRunId, input));
    }
  } catch (e) {
    core.log.warn("build check run not reported to the code host", { build: row.id, status: row.status, err: (e as Error).message });
  }
  try {
    const id = await bounded(host.setCommitStatus(ref, row.commitSha, statusInput(core, row)));
    core.db.update(builds).set({ hostStatusId: id }).where(eq(builds.id, row.id)).run();
  } catch (e) {
    core.log.warn("build commit status not reported to the code host", { build: row.id, status: row.status, err: (e as Error).message });
  }
}

/**
 * Report the build's current state to the code host (check run and commit status). Resolves once
 * this report (and those before it for the build) is sent or given up; never throws.
 */
export function reportToHost(core: Core, buildId: number): Promise<void> {
  let chains = core.locals.get(CHAINS) as Map<number, Promise<void>> | undefined;
  if (!chains) core.locals.set(CHAINS, (chains = new Map()));
  const prev = chains.get(buildId) ?? Promise.resolve();
  const next = prev.then(() => send(core, buildId)).catch((e) => core.log.warn("build host report failed", { build: buildId, err: (e as Error).message }));
  chains.set(buildId, next);
  void next.finally(() => {
    if (chains!.get(buildId) === next) chains!.delete(buildId);
  });
  return next;
}
