/**
 * The rows the ingest side hands to the telemetry writer (writer-worker.ts), already scrubbed,
 * with the project as its ops id. Plain objects: they cross to the writer's thread by structured
 * clone.
 */

export interface LogRow {
  /** Epoch ms (fractional ms dropped by the key). */
  ms: number;
  /** The project's ops id (uuid). */
  project: string;
  environment: string;
  service: string;
  /** OTLP severity number (0 unspecified, 1–24). */
  severity: number;
  /** The sender's own level text, or null (then the level is named from `severity`). */
  level: string | null;
  host: string;
  target: string;
  message: string;
  traceId: string | null;
  spanId: string | null;
  client: string | null;
  method: string | null;
  route: string | null;
  status: string | null;
}

export interface SpanRow {
  /** Start, epoch ms. */
  ms: number;
  project: string;
  environment: string;
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: string | null;
  status: string;
  durationMs: number;
  method: string | null;
  route: string | null;
  httpStatus: string | null;
}

/** `gauge` (a level: gauges and non-monotonic sums), `counter` (monotonic sums), `histogram`. */
export type MetricKind = "gauge" | "counter" | "histogram";

export interface PointRow {
  ms: number;
  project: string;
  environment: string;
  service: string;
  name: string;
  kind: MetricKind;
  unit: string;
  /** The label set as canonical JSON (keys sorted). */
  attrs: string;
  /** Delta points are added to the series' running total by the writer. */
  delta: boolean;
  value: number | null;
  count: number | null;
  sum: number | null;
  min: number | null;
  max: number | null;
  /** `{"bounds":[…],"counts":[…]}` of an explicit-bucket histogram, else null. */
  buckets: string | null;
}

export interface WriteBatch {
  logs: LogRow[];
  spans: SpanRow[];
  points: PointRow[];
}

/** Severity families, lowest number of each (OTLP SeverityNumber ranges). */
export const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;
export type LevelName = (typeof LEVELS)[number];

/** The level family of a severity number: `trace` (1–4) … `fatal` (21–24); `unspecified` for 0. */
export function levelOf(severity: number): LevelName | "unspecified" {
  if (severity <= 0) return "unspecified";
  return LEVELS[Math.min(5, Math.floor((severity - 1) / 4))];
}

/** The severity number range [lo, hi] of a level name. */
export function severityRange(level: LevelName | "unspecified"): [number, number] {
  if (level === "unspecified") return [0, 0];
  const i = LEVELS.indexOf(level);
  return [i * 4 + 1, i * 4 + 4];
}

const TEXT_SEVERITY: Record<string, number> = {
  trace: 1,
  finest: 1,
  debug: 5,
  fine: 5,
  info: 9,
  information: 9,
  informational: 9,
  notice: 10,
  warn: 13,
  warning: 13,
  error: 17,
  err: 17,
  severe: 17,
  fatal: 21,
  critical: 21,
  crit: 21,
  alert: 22,
  emergency: 23,
  emerg: 23,
  panic: 24,
};

/** A severity number for a sender's level text (common loggers' names), or 0. */
export function severityOfText(text: string): number {
  return TEXT_SEVERITY[text.trim().toLowerCase()] ?? 0;
}
