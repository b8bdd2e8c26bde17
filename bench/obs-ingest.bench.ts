/**
 * OTLP log ingest into `ops serve` (the compiled binary) with the search index maintained:
 * protobuf requests of 2 000 records each (bytes from the OpenTelemetry SDK's own serializer,
 * re-stamped per send), four in flight, for the run's duration; the figure is records acknowledged
 * per second (an acknowledgement means committed to telemetry.db). Beside it in the same run: a
 * bare Bun.serve that only reads the same bodies (what the transport allows on this machine), and
 * in-process decoding of the same bytes by ops's decoder and by protobufjs (the generic decoder it
 * replaced), and ops's decoding followed by the mapping into rows with every stored text scrubbed
 * of secret shapes (what the writer thread does before it writes). Goal: ≥ 50 000 records/s.
 * `npm run bench -- obs-ingest`, or `bun bench/obs-ingest.bench.ts [--duration 10]`.
 */
import path from "node:path";
import protobuf from "protobufjs";
import { ROOT, type BenchContext, runAlone } from "./lib";
import { cpuSeconds, encodeLogs, flood, listenerPid, opsWithToken, type EncodedLogs } from "./obs-load";
import { decodeLogsProto } from "../src/domains/observability/otlp-proto";
import { logsToRows } from "../src/domains/observability/ingest";

export const name = "obs-ingest";
export const description = "OTLP logs into ops serve with the trigram index kept, vs a bare server reading the same bodies";

const RECORDS = 2000;
const IN_FLIGHT = 16;

/** The OTLP logs messages for protobufjs, from the field numbers of the official .proto files. */
const LOGS_PROTO = `
syntax = "proto3";
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7; } }
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message LogRecord { fixed64 time_unix_nano = 1; fixed64 observed_time_unix_nano = 11; int32 severity_number = 2; string severity_text = 3; AnyValue body = 5; repeated KeyValue attributes = 6; uint32 dropped_attributes_count = 7; fixed32 flags = 8; bytes trace_id = 9; bytes span_id = 10; string event_name = 12; }
message ScopeLogs { InstrumentationScope scope = 1; repeated LogRecord log_records = 2; string schema_url = 3; }
message ResourceLogs { Resource resource = 1; repeated ScopeLogs scope_logs = 2; string schema_url = 3; }
message ExportLogsServiceRequest { repeated ResourceLogs resource_logs = 1; }
`;

function decodeRate(bodies: EncodedLogs[], decode: (b: Uint8Array) => unknown): number {
  for (const b of bodies) decode(b.bytes);
  let n = 0;
  const started = performance.now();
  while (performance.now() - started < 2000) for (const b of bodies) (decode(b.bytes), (n += b.records));
  return Math.round(n / ((performance.now() - started) / 1000));
}

export async function run(ctx: BenchContext): Promise<string> {
  const bodies = Array.from({ length: IN_FLIGHT * 3 }, (_, i) => encodeLogs(RECORDS, i + 1));
  const { server, token } = await opsWithToken(ctx);
  const bare = await ctx.startServer([process.execPath, path.join(ROOT, "bench/hello-server.ts"), "{port}"], "/health");
  try {
    const pid = listenerPid(server.url);
    const cpu0 = pid ? await cpuSeconds(pid) : 0;
    const ops = await flood(`${server.url}/otlp/v1/logs`, token, bodies, IN_FLIGHT, ctx.load.duration).done;
    const cpu = pid ? (await cpuSeconds(pid)) - cpu0 : NaN;
    const base = await flood(`${bare.url}/health`, token, bodies, IN_FLIGHT, Math.max(2, Math.round(ctx.load.duration / 3))).done;
    const root = protobuf.parse(LOGS_PROTO).root.lookupType("ExportLogsServiceRequest");
    const generic = decodeRate(bodies, (b) => root.toObject(root.decode(b), { longs: String, enums: Number, bytes: String, defaults: false }));
    const own = decodeRate(bodies, decodeLogsProto);
    const mapping = { projectId: "bench", now: Date.UTC(2030, 0, 2), oldestMs: 0, retentionDays: 14, mayIngest: () => true };
    const mapped = decodeRate(bodies, (b) => logsToRows(decodeLogsProto(b), mapping));
    const rate = Math.round(ops.records / ops.seconds);
    return (
      `obs-ingest: ops ${rate} records/s acknowledged with the trigram index kept (goal 50000; ${ops.requests} requests of ${RECORDS} records, ${IN_FLIGHT} in flight, ${ops.throttled} answered 429 and were retried), ` +
      `ops used ${((cpu * 1e6) / ops.records).toFixed(1)} µs of CPU per record over both its threads (so ${Math.round(ops.records / cpu)} records per CPU-second; the sender shares this machine's 2 cores); ` +
      `bare Bun.serve reading the same bodies ${Math.round(base.records / base.seconds)} records/s; ` +
      `decoding in-process: ops ${own} records/s, protobufjs ${generic} records/s (${(own / generic).toFixed(1)}x); ` +
      `decoding and mapping into scrubbed rows in-process: ${mapped} records/s (${((1e6 / mapped - 1e6 / own)).toFixed(2)} µs a record over decoding alone)`
    );
  } finally {
    await server.stop();
    await bare.stop();
  }
}

if (import.meta.main) await runAlone(run);
