/**
 * Shared by the observability benchmarks: an `ops serve` with a token that may send telemetry, OTLP
 * log requests encoded once by the OpenTelemetry JS SDK's own protobuf serializer (the bytes its
 * exporter sends) and re-stamped with fresh times before each send, and a sender that keeps a
 * number of requests in flight for a while, honouring 429 like an exporter does.
 */
import { SeverityNumber } from "@opentelemetry/api-logs";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { LoggerProvider, InMemoryLogRecordExporter, SimpleLogRecordProcessor } from "@opentelemetry/sdk-logs";
import { ProtobufLogsSerializer } from "@opentelemetry/otlp-transformer";
import type { BenchContext, ChildServer } from "./lib";

const OWNER = { email: "bench-owner@ops.test", password: "bench-owner-password" };

async function json(url: string, init: RequestInit = {}): Promise<any> {
  const res = await fetch(url, { ...init, headers: { "content-type": "application/json", ...(init.headers ?? {}) } });
  const body = await res.json();
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

export interface OpsWithToken {
  server: ChildServer;
  /** A developer token of the project `bench` (obs.ingest, obs.read), pinned to it. */
  token: string;
}

/** The compiled `ops serve` on a temp data dir, a project `bench` and a token for it. */
export async function opsWithToken(ctx: BenchContext, env: Record<string, string> = {}): Promise<OpsWithToken> {
  const server = await ctx.startOps({ OPS_BOOTSTRAP_EMAIL: OWNER.email, OPS_BOOTSTRAP_PASSWORD: OWNER.password, OPS_LOG_LEVEL: "warn", ...env });
  const login = await json(`${server.url}/api/v1/auth/login`, { method: "POST", body: JSON.stringify({ ...OWNER, client: "cli" }) });
  const auth = { authorization: `Bearer ${login.token}` };
  await json(`${server.url}/api/v1/projects`, { method: "POST", headers: auth, body: JSON.stringify({ slug: "bench", name: "Bench" }) });
  const roles = await json(`${server.url}/api/v1/projects/bench/roles`, { headers: auth });
  const developer = roles.find((r: { slug: string }) => r.slug === "developer");
  const minted = await json(`${server.url}/api/v1/tokens`, { method: "POST", headers: auth, body: JSON.stringify({ name: "bench", role_id: developer.id, project: "bench" }) });
  return { server, token: minted.secret };
}

const WORDS = "request handled user session cache miss hit database query returned rows payment order shipped invoice created updated deleted worker started stopped retry backoff connection pool upstream latency healthy degraded queue job scheduled completed failed token refreshed login logout checkout cart inventory warehouse email notification webhook delivered timeout redis postgres kafka consumer producer partition offset commit rollback".split(" ");

/** A log line like a service writes: words, a path, ids and durations. */
export function logLine(i: number, rnd: () => number): string {
  const w = () => WORDS[Math.floor(rnd() * WORDS.length)];
  const id = Math.floor(rnd() * 1e9).toString(36);
  switch (i % 4) {
    case 0:
      return `GET /api/v1/orders/${id} 200 in ${Math.floor(rnd() * 300)} ms ${w()} ${w()}`;
    case 1:
      return `${w()} ${w()} for user ${Math.floor(rnd() * 100000)} (${w()} ${w()} ${w()}) trace=${id}`;
    case 2:
      return `worker ${Math.floor(rnd() * 16)}: ${w()} ${w()} ${w()} ${w()} after ${Math.floor(rnd() * 5000)} ms; ${w()} ${w()} id=${id}`;
    default:
      return `${w()} ${w()} ${w()} ${w()} ${w()} ${w()} ${w()} ${w()} ${w()} ${w()} ${w()} ${w()} ${id}`;
  }
}

export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** A protobuf ExportLogsServiceRequest from the SDK's serializer, and where each record's time sits in it. */
export interface EncodedLogs {
  bytes: Uint8Array<ArrayBuffer>;
  records: number;
  /** Byte offsets of each record's `time_unix_nano` (fixed64). */
  timeOffsets: number[];
}

/** `records` log lines encoded by the SDK, with distinct marker times so their fields can be found and re-stamped. */
export function encodeLogs(records: number, seed: number): EncodedLogs {
  const memory = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({ resource: resourceFromAttributes({ "service.name": `bench-${seed % 4}`, "deployment.environment.name": "production", "host.name": "bench-host" }), processors: [new SimpleLogRecordProcessor({ exporter: memory })] });
  const logger = provider.getLogger("bench.app");
  const rnd = seeded(seed);
  const base = Date.UTC(2030, 0, 1) + seed * 1000;
  for (let i = 0; i < records; i++) {
    logger.emit({ body: logLine(i, rnd), severityNumber: i % 50 === 0 ? SeverityNumber.ERROR : i % 7 === 0 ? SeverityNumber.WARN : SeverityNumber.INFO, timestamp: new Date(base + i), attributes: { "http.route": "/api/v1/orders/:id" } });
  }
  const bytes = new Uint8Array(ProtobufLogsSerializer.serializeRequest(memory.getFinishedLogRecords())!);
  // Find each record's time: tag 0x09 followed by the marker nanoseconds (little-endian fixed64).
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const want = new Map<bigint, number>();
  for (let i = 0; i < records; i++) want.set(BigInt(base + i) * 1_000_000n, i);
  const timeOffsets: number[] = new Array(records);
  let found = 0;
  for (let p = 0; p + 9 <= bytes.length; p++) {
    if (bytes[p] !== 0x09) continue;
    const i = want.get(view.getBigUint64(p + 1, true));
    if (i !== undefined && timeOffsets[i] === undefined) {
      timeOffsets[i] = p + 1;
      found++;
    }
  }
  if (found !== records) throw new Error(`found ${found} of ${records} record times in the encoded request`);
  return { bytes, records, timeOffsets };
}

/** Stamp the records with times ending at `nowMs` (a microsecond apart, newest last), in place. */
export function restamp(e: EncodedLogs, nowMs: number): void {
  const view = new DataView(e.bytes.buffer, e.bytes.byteOffset, e.bytes.byteLength);
  const start = BigInt(Math.floor(nowMs)) * 1_000_000n - BigInt(e.records) * 1000n;
  for (let i = 0; i < e.records; i++) view.setBigUint64(e.timeOffsets[i], start + BigInt(i) * 1000n, true);
}

export interface FloodResult {
  records: number;
  requests: number;
  /** 429 answers (retried after their Retry-After, shortened to 100 ms). */
  throttled: number;
  seconds: number;
}

/**
 * Post the encoded requests (round robin, re-stamped each time) to `url` with `concurrency`
 * requests in flight until `seconds` pass or `stop()` is called. Counts acknowledged records.
 */
export function flood(url: string, token: string, bodies: EncodedLogs[], concurrency: number, seconds: number, headers: Record<string, string> = {}): { done: Promise<FloodResult>; stop(): void } {
  let stopped = false;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const result: FloodResult = { records: 0, requests: 0, throttled: 0, seconds: 0 };
  // Each sender re-stamps only its own requests: a body is never changed while another send reads it.
  const sender = async (_: unknown, s: number) => {
    const mine = bodies.filter((_, i) => i % concurrency === s);
    if (mine.length === 0) throw new Error("fewer encoded requests than senders");
    for (let k = 0; !stopped && performance.now() < deadline; k++) {
      const body = mine[k % mine.length];
      restamp(body, Date.now());
      const res = await fetch(url, { method: "POST", body: body.bytes, headers: { authorization: `Bearer ${token}`, "content-type": "application/x-protobuf", ...headers } });
      await res.arrayBuffer();
      if (res.status === 200) {
        result.records += body.records;
        result.requests++;
      } else if (res.status === 429) {
        result.throttled++;
        await Bun.sleep(100);
      } else {
        throw new Error(`ingest answered ${res.status}`);
      }
    }
  };
  const done = Promise.all(Array.from({ length: concurrency }, sender)).then(() => {
    result.seconds = (performance.now() - started) / 1000;
    return result;
  });
  return {
    done,
    stop() {
      stopped = true;
    },
  };
}

/** The pid of the process listening on `url`'s port (from `ss`), for reading its CPU time. */
export function listenerPid(url: string): number | null {
  const port = new URL(url).port;
  const r = Bun.spawnSync(["ss", "-Htlnp", `sport = :${port}`], { stdout: "pipe", stderr: "pipe" });
  const m = /pid=(\d+)/.exec(r.stdout.toString());
  return m ? Number(m[1]) : null;
}

/** CPU seconds (user + system, every thread) a process has used, from /proc. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the command name).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
