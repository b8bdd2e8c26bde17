/** Builds as the Builds pages show them: the build's shape, its state badge and durations. */

export interface StepTiming {
  step: string;
  started_at: string;
  finished_at?: string | null;
  ok?: boolean | null;
  note?: string | null;
}

export interface Build {
  id: number;
  /** `image` (a service's image) or `publish` (a tag's modules; `branch` holds the tag). */
  kind: string;
  status: string;
  service: string;
  environment: string;
  project: string;
  repo: string;
  branch?: string | null;
  commit_sha: string;
  message: string;
  author: string;
  trigger: string;
  requested_by: string;
  queued_at: string;
  started_at?: string | null;
  finished_at?: string | null;
  failure_kind?: string | null;
  error?: string | null;
  cache_hit?: number | null;
  image_ref?: string | null;
  image_digest?: string | null;
  image_size_bytes?: number | null;
  host_check_run_id?: number | null;
  step_timings: StepTiming[];
}

/**
 * The build whose image this one took or waits for, read from its `build` step's note (the API
 * has no field for it: the server writes "reused image <digest> of build #N" or "waiting for the
 * image of build #N" there, decision 0435); null when it built its own.
 */
export function reusedFrom(b: Pick<Build, "step_timings">): { id: number; waiting: boolean } | null {
  const note = b.step_timings.findLast((s) => s.step === "build")?.note ?? "";
  const m = /^(?:reused image \S+|waiting for the image) of build #(\d+)$/.exec(note);
  return m ? { id: Number(m[1]), waiting: note.startsWith("waiting") } : null;
}

const FINAL = new Set(["healthy", "published", "failed", "rolled_back", "cancelled"]);

export function isFinal(status: string): boolean {
  return FINAL.has(status);
}

/** What a build made: the service's image, or the tag's modules. */
export function buildSubject(b: Pick<Build, "kind" | "service" | "branch">): string {
  return b.kind === "publish" ? `publish ${b.branch ?? ""}`.trim() : b.service;
}

/** The state as a badge: green healthy, red failed, amber while running, grey cancelled. */
export function BuildBadge(props: { status: string }) {
  const s = props.status;
  const kind = s === "healthy" || s === "published" ? "operational" : s === "failed" || s === "rolled_back" ? "down" : s === "cancelled" ? "cancelled" : "degraded";
  return <span class={`badge badge-${kind}`}>{s.replace("_", " ")}</span>;
}

/** "0.4 s", "1 min 4 s" between two times (to now while running); "—" before it started. */
export function duration(startedAt: string | null | undefined, finishedAt: string | null | undefined, now = Date.now()): string {
  if (!startedAt) return "—";
  const ms = (finishedAt ? new Date(finishedAt).getTime() : now) - new Date(startedAt).getTime();
  if (ms < 10_000) return `${Math.max(0, ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${s % 60} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

