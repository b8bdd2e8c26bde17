/**
 * What a failed rollout printed (issue 36: the reason where the failure is shown): when a rollout
 * fails or rolls back, the last `FAILURE_LINES` lines each of its processes wrote — the new
 * replicas and its release steps, whose ids all start `<project>.<environment>.<service>.<deployment>-`
 * — are kept with the deployment (`deployments.failure_output`), so the build page, the service
 * page, the timeline, `ops deploy` and the MCP deploy tool show the `Error: …` that explains it
 * beside the failure, not only on the Logs page. The lines are the ring's: masked as the replica's
 * output is (decision 0516). ops's own notes (`limits:` …) are left out.
 */
import type { Core } from "../../core/core";
import { linesOfProcesses } from "./logs";

export const FAILURE_LINES = 50;
/** At most this many processes are kept (a rollout of 100 replicas that all crash alike). */
const MAX_PROCESSES = 5;

export interface FailedProcess {
  /** The replica's id, or the release step's (`…-<step>`). */
  process: string;
  lines: string[];
}

/** The deployment's processes' last lines, once their output stopped arriving (at most ~1 s). */
export async function collectFailureOutput(core: Core, addr: { project: { slug: string }; environment: string; service: string }, deploymentId: number): Promise<FailedProcess[]> {
  const prefix = `${addr.project.slug}.${addr.environment}.${addr.service}.${deploymentId}-`;
  // A process's last lines may still be on their way (a pipe, the data plane's channel).
  let seen = -1;
  for (let i = 0; i < 10; i++) {
    const count = linesOfProcesses(core, prefix).reduce((n, p) => n + p.lines.length, 0);
    if (count === seen) break;
    seen = count;
    await Bun.sleep(100);
  }
  return linesOfProcesses(core, prefix)
    .map((p) => ({ process: p.id, lines: p.lines.filter((l) => l.stream !== "ops").slice(-FAILURE_LINES).map((l) => l.line) }))
    .filter((p) => p.lines.length > 0)
    .slice(0, MAX_PROCESSES);
}

/** The column's JSON back as the API shows it (null: none kept). */
export function parseFailureOutput(text: string | null): FailedProcess[] | null {
  if (!text) return null;
  try {
    const v = JSON.parse(text) as FailedProcess[];
    return Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}
