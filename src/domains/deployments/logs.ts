/**
 * Service output: every line a replica or a release step writes (stdout, stderr) and ops's own
 * notes about it (stream `ops`: crashed, restarting, not enforced …) go into the log store
 * (`appendPlatformLogs`, in batches: every 250 ms or 500 lines) with the service's project,
 * environment and name, the stream as `target` and the replica as `host`, so `ops logs` and the
 * console's log search find them beside the service's own OTLP lines. A bounded ring per replica
 * in memory keeps the newest lines too (`serviceLogLines`): the store may refuse a batch while
 * its writer is full or ops stops, and the ring still has them. The lines of one stack trace are
 * one record in the store, in order (log-records.ts); the ring keeps them line by line.
 */
import type { Core } from "../../core/core";
import type { OutputStream } from "../../adapters/runtime";
import { appendPlatformLogs, type PlatformLogEntry } from "../observability/service";
import { recordJoiner, type RecordJoiner } from "./log-records";

export interface ServiceLogLine {
  at: number;
  replica: string;
  stream: OutputStream;
  line: string;
}

/** Lines kept per replica. */
export const RING_LINES = 1000;
/** Replicas whose rings are kept after they stopped (the newest ones). */
const STOPPED_RINGS = 200;
const KEY = "deployments.log-rings";

interface Ring {
  projectId: string;
  project: string;
  environment: string;
  service: string;
  lines: ServiceLogLine[];
  stoppedAt: number | null;
}

function rings(core: Core): Map<string, Ring> {
  let m = core.locals.get(KEY) as Map<string, Ring> | undefined;
  if (!m) core.locals.set(KEY, (m = new Map()));
  return m;
}

/** Start keeping the lines of a one-off process (a release step) that no replica status names. */
export function openRing(core: Core, id: string, labels: Record<string, string>): void {
  rings(core).set(id, { projectId: labels.project_id ?? "", project: labels.project ?? "", environment: labels.environment ?? "", service: labels.service ?? "", lines: [], stoppedAt: null });
}

/** Keep one line of a replica (labels name its service). */
export function keepLine(core: Core, replica: string, labels: Record<string, string> | undefined, stream: OutputStream, line: string, writtenAt?: number): void {
  const all = rings(core);
  let ring = all.get(replica);
  if (!ring) {
    if (!labels?.service) return;
    ring = { projectId: labels.project_id ?? "", project: labels.project ?? "", environment: labels.environment ?? "", service: labels.service, lines: [], stoppedAt: null };
    all.set(replica, ring);
  }
  const at = writtenAt ?? core.clock.now();
  ring.lines.push({ at, replica, stream, line });
  if (ring.lines.length > RING_LINES) ring.lines.splice(0, ring.lines.length - RING_LINES);
  // On a Swarm the line's host says where it ran: `<node>/<replica>/<task>` (the task id's first 12, as docker shows it).
  const host = labels?.node && labels.task ? `${labels.node}/${replica}/${labels.task.slice(0, 12)}` : replica;
  if (!ring.projectId) return;
  // A stack trace's lines go to the store as one record (log-records.ts).
  const key = `${replica}\u0000${stream}`;
  const { joiner, streams } = recordsOf(core);
  streams.set(key, { project: ring.projectId, environment: ring.environment, service: ring.service, level: stream === "stderr" ? "warn" : "info", target: stream, host });
  joiner.push(key, line, at);
}

const RECORDS = "deployments.log-records";

function recordsOf(core: Core): { joiner: RecordJoiner; streams: Map<string, Omit<PlatformLogEntry, "message" | "timestamp">> } {
  let r = core.locals.get(RECORDS) as ReturnType<typeof recordsOf> | undefined;
  if (!r) {
    const streams = new Map<string, Omit<PlatformLogEntry, "message" | "timestamp">>();
    const joiner = recordJoiner((key, message, at) => {
      const where = streams.get(key);
      if (where) toStore(core, { ...where, message, timestamp: at });
    });
    core.locals.set(RECORDS, (r = { joiner, streams }));
  }
  return r;
}

/**
 * One line ops writes about a service itself (stream `ops`, no replica): e.g. an automatic
 * rollback's reason, at level error, so `ops logs` and the log search show it beside the output.
 */
export function serviceNote(core: Core, where: { projectId: string; environment: string; service: string }, level: "info" | "warn" | "error", message: string): void {
  toStore(core, { project: where.projectId, environment: where.environment, service: where.service, level, message, target: "ops", timestamp: core.clock.now(), host: "" });
}

const BATCH = "deployments.log-batch";
const BATCH_LINES = 500;
const BATCH_MS = 250;

interface Batch {
  entries: PlatformLogEntry[];
  timer: ReturnType<typeof setTimeout> | null;
}

function batchOf(core: Core): Batch {
  let b = core.locals.get(BATCH) as Batch | undefined;
  if (!b) core.locals.set(BATCH, (b = { entries: [], timer: null }));
  return b;
}

function toStore(core: Core, entry: PlatformLogEntry): void {
  const b = batchOf(core);
  b.entries.push(entry);
  if (b.entries.length >= BATCH_LINES) void flushBatch(core);
  else b.timer ??= setTimeout(() => void flushBatch(core), BATCH_MS);
}

/** End the open records (a stack trace still arriving) and hand every batched line to the log store (the Core closes, the data plane asks). */
export async function flushServiceLogs(core: Core): Promise<void> {
  (core.locals.get(RECORDS) as ReturnType<typeof recordsOf> | undefined)?.joiner.flushAll();
  await flushBatch(core);
}

async function flushBatch(core: Core): Promise<void> {
  const b = batchOf(core);
  if (b.timer) clearTimeout(b.timer);
  b.timer = null;
  if (b.entries.length === 0) return;
  const entries = b.entries;
  b.entries = [];
  await appendPlatformLogs(core, entries).catch((e) => core.log.warn("service output not copied to the log store (kept in memory)", { lines: entries.length, err: (e as Error).message }));
}

/** A replica stopped: keep its ring for reading, dropping the oldest stopped rings past the bound. */
export function ringStopped(core: Core, replica: string): void {
  const all = rings(core);
  const ring = all.get(replica);
  if (!ring || ring.stoppedAt !== null) return;
  ring.stoppedAt = Date.now();
  const records = core.locals.get(RECORDS) as ReturnType<typeof recordsOf> | undefined;
  for (const stream of ["stdout", "stderr", "ops"]) {
    records?.joiner.end(`${replica}\u0000${stream}`);
    records?.streams.delete(`${replica}\u0000${stream}`);
  }
  const stopped = [...all.entries()].filter(([, r]) => r.stoppedAt !== null).sort((a, b) => (a[1].stoppedAt as number) - (b[1].stoppedAt as number));
  for (const [id] of stopped.slice(0, Math.max(0, stopped.length - STOPPED_RINGS))) all.delete(id);
}

/** The kept lines of each process (replica or release step) whose id starts with `prefix`, by id. */
export function linesOfProcesses(core: Core, prefix: string): Array<{ id: string; lines: ServiceLogLine[] }> {
  return [...rings(core).entries()]
    .filter(([id]) => id.startsWith(prefix))
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([id, r]) => ({ id, lines: r.lines }));
}

/** The kept lines of a service's replicas (live and recently stopped), oldest first, at most `limit`. */
export function serviceLogLines(core: Core, ref: { project: string; environment: string; service: string }, limit = 500): ServiceLogLine[] {
  const out: ServiceLogLine[] = [];
  for (const r of rings(core).values()) if (r.project === ref.project && r.environment === ref.environment && r.service === ref.service) out.push(...r.lines);
  out.sort((a, b) => a.at - b.at);
  return out.slice(-limit);
}
