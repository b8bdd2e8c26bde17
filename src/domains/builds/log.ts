/**
 * Build logs: lines with a per-build sequence number, the step that printed them and a level,
 * stored in ops.db (`build_log_lines`) in short batched transactions while the build runs, and
 * read back in pages (`after`/`limit`, `live`, `next`). Values of secret build variables are
 * masked before a line is stored, in their encoded forms too (the builders mask their own output;
 * this is the second net for ops's own lines), and so is anything shaped like a secret
 * (src/core/secret-shapes.ts), a private key printed line by line included. A build keeps at most
 * MAX_BUILD_LOG_LINES lines; the rest are counted.
 *
 * Each batch of an image build is also copied into the telemetry store (`appendPlatformLogs`) as
 * lines of the service in its environment with the target `ops.build/<id>`, so one log search
 * finds a build's output beside the service's own lines (a publish build has no service: its log
 * is in ops.db only). That copy is best effort (a full or closing telemetry
 * writer drops it, logged); the build's log route reads ops.db only.
 */
import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { Core } from "../../core/core";
import { tx, type Tx } from "../../core/db/client";
import { iso } from "../../core/clock";
import { secretMasker } from "../../core/secret-mask";
import { SecretLineFilter } from "../../core/secret-redact";
import { appendPlatformLogs, type PlatformLogEntry } from "../observability/service";
import { buildLogLines, builds } from "./tables";
import { buildById, isFinal, type BuildRow, type LogStep } from "./rows";
import type { LogResponse } from "./model";

/** Lines kept per build. */
export const MAX_BUILD_LOG_LINES = 20_000;
const FLUSH_MS = 250;
const FLUSH_LINES = 200;

export type LogLevel = "info" | "warn" | "error";

const OPEN = "builds.open-logs";

function openLogs(core: Core): Map<number, BuildLog> {
  let m = core.locals.get(OPEN) as Map<number, BuildLog> | undefined;
  if (!m) core.locals.set(OPEN, (m = new Map()));
  return m;
}

/**
 * Appends one build's lines (see the file comment); `close()` flushes what is buffered. One
 * writer per build at a time (`openBuildLog`), since sequence numbers are counted in memory.
 */
export class BuildLog {
  private seq: number;
  private dropped = 0;
  private buf: Array<typeof buildLogLines.$inferInsert> = [];
  /** Lines of `buf` written by `closeIn` in a transaction that has not reported its commit yet. */
  private written = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private mask: (line: string) => string = (l) => l;
  /** Secret shapes, followed across lines (one stream per build). */
  private readonly shapes = new SecretLineFilter();
  private readonly platform: Omit<PlatformLogEntry, "level" | "message" | "timestamp"> | null;

  constructor(
    private readonly core: Core,
    private readonly buildId: number,
    known?: Pick<BuildRow, "kind" | "projectId" | "environment" | "service">,
  ) {
    const last = core.db.select({ n: sql<number>`coalesce(max(${buildLogLines.seq}), 0)` }).from(buildLogLines).where(eq(buildLogLines.buildId, buildId)).get();
    this.seq = last?.n ?? 0;
    const row = known ?? buildById(core.db, buildId);
    // A publish build belongs to no service: its lines stay in ops.db only.
    this.platform = row && row.kind === "image" ? { project: row.projectId, environment: row.environment, service: row.service, target: `ops.build/${buildId}` } : null;
  }

  /** Mask these values (secret build variables) in every line from now on. */
  maskValues(values: readonly string[]): void {
    this.mask = secretMasker(values);
  }

  add(step: LogStep, level: LogLevel, text: string): void {
    if (this.seq >= MAX_BUILD_LOG_LINES) {
      this.dropped++;
      return;
    }
    this.buf.push({ buildId: this.buildId, seq: ++this.seq, at: this.core.clock.now(), level, step, line: this.shapes.filter(this.mask(text)) });
    if (this.buf.length >= FLUSH_LINES) this.flush();
    else if (!this.timer) this.timer = setInterval(() => this.flush(), FLUSH_MS);
  }

  flush(): void {
    if (this.buf.length === 0) return;
    const batch = this.buf;
    this.buf = [];
    this.written = 0;
    tx(this.core.db, (t) => this.write(t, batch));
    this.copy(batch);
  }

  private write(t: Tx, batch: Array<typeof buildLogLines.$inferInsert>): void {
    t.insert(buildLogLines).values(batch).run();
    t.update(builds).set({ logLines: this.seq }).where(eq(builds.id, this.buildId)).run();
  }

  /** The batch into the telemetry store as well (best effort). */
  private copy(batch: Array<typeof buildLogLines.$inferInsert>): void {
    if (this.platform) {
      const p = this.platform;
      appendPlatformLogs(this.core, batch.map((l) => ({ ...p, level: l.level as PlatformLogEntry["level"], message: l.line, timestamp: l.at }))).catch((e) =>
        this.core.log.warn("build log lines not copied to the log store", { build: this.buildId, err: (e as Error)?.message ?? String(e) }),
      );
    }
  }

  close(step: LogStep): void {
    this.detach(step);
    this.flush();
  }

  /**
   * Close the writer, writing what is buffered inside the caller's transaction `t` (a step's last
   * lines commit with its result). Call `committed()` once `t` committed; if it rolled back, a
   * later `close` writes the lines on their own.
   */
  closeIn(t: Tx, step: LogStep): void {
    this.detach(step);
    if (this.buf.length === 0) return;
    this.write(t, this.buf);
    this.written = this.buf.length;
  }

  /** The transaction of `closeIn` committed: its lines are stored (and copied to the log store). */
  committed(): void {
    const batch = this.buf.splice(0, this.written);
    this.written = 0;
    this.copy(batch);
  }

  private detach(step: LogStep): void {
    if (openLogs(this.core).get(this.buildId) === this) openLogs(this.core).delete(this.buildId);
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.dropped > 0) {
      this.buf.push({ buildId: this.buildId, seq: ++this.seq, at: this.core.clock.now(), level: "warn", step, line: `${this.dropped} more lines not kept (a build keeps ${MAX_BUILD_LOG_LINES})` });
      this.dropped = 0;
    }
  }
}

/**
 * The build's log writer: the open one (a step running), else a new one, open until closed.
 * `row` spares a read of the build when the caller has it.
 */
export function openBuildLog(core: Core, buildId: number, row?: BuildRow): BuildLog {
  const logs = openLogs(core);
  let log = logs.get(buildId);
  if (!log) logs.set(buildId, (log = new BuildLog(core, buildId, row)));
  return log;
}

/** Write a few lines now, through the open writer when a step is running. */
export function appendLines(core: Core, buildId: number, step: LogStep, lines: Array<[LogLevel, string]>): void {
  const open = openLogs(core).get(buildId);
  const log = open ?? new BuildLog(core, buildId);
  for (const [level, text] of lines) log.add(step, level, text);
  if (open) open.flush();
  else log.close(step);
}

/** One page of a build's log after sequence `after`. */
export function readLog(core: Core, row: BuildRow, after: number, limit: number): LogResponse {
  const rows = core.db
    .select()
    .from(buildLogLines)
    .where(and(eq(buildLogLines.buildId, row.id), gt(buildLogLines.seq, after)))
    .orderBy(asc(buildLogLines.seq))
    .limit(limit)
    .all();
  return {
    lines: rows.map((l) => ({ at: iso(l.at), level: l.level, line: l.line, seq: l.seq, step: l.step })),
    live: !isFinal(row.status),
    next: rows.length > 0 ? rows[rows.length - 1].seq : after,
  };
}
