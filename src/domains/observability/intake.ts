/**
 * Reading an OTLP export body under the intake's memory bounds (docs/decisions/0262): what a body
 * may cost is known before it is decoded, whatever its compression ratio.
 *
 * - A body is at most `OPS_OTLP_MAX_DECODED_BYTES` (16 MiB by default) once decompressed, and on
 *   the wire too; 413 past either. A gzip body is inflated as it streams in from the socket, the
 *   decompressed bytes counted as they come, so a bomb is refused after at most that many bytes,
 *   and the compressed body is never held whole.
 * - At most `MAX_INFLATING` gzip bodies inflate at once; one more is answered 429 with
 *   `Retry-After` at once, before anything is read, and exporters retry it.
 * - At most `MAX_READING` bodies are read at once (429 past that too).
 * - One credential holds at most half of either (decision 0535): a sender that fills its share is
 *   answered 429 while other projects' exports still find room.
 * - An OTLP-JSON body's shape (one object, nesting depth, how many objects and arrays) is checked
 *   on the decompressed bytes as they come (json-shape.ts), so a body that would cost the JSON
 *   parser hundreds of MiB is refused at its first bad byte, before it reaches the writer.
 * - The decompressed bytes end in one buffer of their exact size that the writer thread takes over
 *   (transferred, not copied), where they are decoded one request at a time.
 */
import { coreLocal, type Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import type { Principal } from "../../core/authz/principal";
import { createGunzip } from "node:zlib";
import { JsonShapeGuard } from "./json-shape";

/** Request bodies being read at once, at most. */
export const MAX_READING = 32;
/** Gzip bodies inflating at once, at most: with the default limit, 64 MiB of decompressed bytes. */
export const MAX_INFLATING = 4;
const COUNTS_KEY = "observability.intake";

interface Slots {
  reading: number;
  inflating: number;
}

interface Counts extends Slots {
  /** Per `callerKey`, while it has a body being read. */
  byCaller: Map<string, Slots>;
}

const countsOf = (core: Core): Counts => coreLocal(core, COUNTS_KEY, () => ({ reading: 0, inflating: 0, byCaller: new Map() }));

const busy = (what: string, seconds: number) => new OpsError("rate_limited", `ops is busy ${what}; retry shortly.`, undefined, { headers: { "retry-after": String(seconds) } });

const MiB = 1024 * 1024;
const size = (n: number) => (n % MiB === 0 ? `${n / MiB} MiB` : `${n} bytes`);

/** The 413 of a body that inflates past the limit. */
function inflatesTooFar(limit: number): OpsError {
  return new OpsError("payload_too_large", `The request body is larger than ${size(limit)} once decompressed (OPS_OTLP_MAX_DECODED_BYTES).`, { limit_bytes: limit });
}

/** The 413 of a body past the limit on the wire. */
function tooLargeOnTheWire(limit: number): OpsError {
  return new OpsError("payload_too_large", `The request body is larger than the limit of ${size(limit)} for this route.`, { limit_bytes: limit });
}

/** Whose share of the bounds a request takes: its token's, else its session's, else its operator's. */
export function callerKey(principal: Principal): string {
  return principal.tokenId ?? principal.sessionId ?? principal.operatorId;
}

export interface ExportRead {
  gzip: boolean;
  /** OTLP-JSON: its shape is checked as it arrives (json-shape.ts). */
  json: boolean;
  /** `callerKey` of the sender. */
  caller: string;
  /** Whether the writer's backlog is at its bound (then 429 before reading). */
  full(): boolean;
}

/**
 * Read `request`'s body, inflating it when gzip, under the bounds above: the decompressed bytes,
 * in a buffer of their own (never a view into a larger one, so the writer thread can take it over).
 */
export async function readExportBody(core: Core, request: Request, how: ExportRead): Promise<Uint8Array<ArrayBuffer>> {
  const limit = core.config.otlpMaxDecodedBytes;
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLargeOnTheWire(limit);
  const counts = countsOf(core);
  const mine = counts.byCaller.get(how.caller) ?? { reading: 0, inflating: 0 };
  if (counts.reading >= MAX_READING || how.full()) throw busy("writing telemetry", 2);
  if (mine.reading >= MAX_READING / 2) throw busy("reading this credential's other exports", 2);
  // An inflation takes tens of milliseconds: a second is plenty for a slot to free.
  if (how.gzip && counts.inflating >= MAX_INFLATING) throw busy("decompressing telemetry", 1);
  if (how.gzip && mine.inflating >= MAX_INFLATING / 2) throw busy("decompressing this credential's other exports", 1);
  const slot = how.gzip ? 1 : 0;
  counts.reading++;
  counts.inflating += slot;
  mine.reading++;
  mine.inflating += slot;
  counts.byCaller.set(how.caller, mine);
  try {
    return await collect(request, limit, how.gzip, how.json ? new JsonShapeGuard(limit) : null);
  } finally {
    counts.reading--;
    counts.inflating -= slot;
    mine.reading--;
    mine.inflating -= slot;
    if (mine.reading === 0) counts.byCaller.delete(how.caller);
  }
}

/** `bytes` in a buffer of exactly its size (a copy only when it is a view into a larger one). */
function owned(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes as Uint8Array<ArrayBuffer>;
  return new Uint8Array(bytes);
}

/** Decompressed bytes per step of the inflater: the unit in which the count is checked. */
const INFLATE_CHUNK = 64 * 1024;

/**
 * Read the body as it arrives, inflating it when `gzip`, counting wire and decompressed bytes
 * against `limit` and passing the decompressed bytes through `guard`; the first bound crossed
 * stops the read. node:zlib's stream inflates in steps of INFLATE_CHUNK and stops when destroyed,
 * so a bomb costs the limit and no more; the web DecompressionStream was measured inflating a
 * whole input chunk at once (all 58 MiB of a 0.4 MiB bomb) before the first read, and holding the
 * event loop meanwhile.
 */
async function collect(request: Request, limit: number, gzip: boolean, guard: JsonShapeGuard | null): Promise<Uint8Array<ArrayBuffer>> {
  if (!request.body) return new Uint8Array(0);
  const gunzip = gzip ? createGunzip({ chunkSize: INFLATE_CHUNK }) : null;
  const chunks: Uint8Array[] = [];
  let total = 0;
  let failure: OpsError | null = null;
  const stop = (e: OpsError) => {
    failure ??= e;
    gunzip?.destroy();
  };
  /** Decompressed bytes: counted, checked, kept. */
  const take = (c: Uint8Array) => {
    if (failure) return;
    total += c.byteLength;
    if (total > limit) return stop(gzip ? inflatesTooFar(limit) : tooLargeOnTheWire(limit));
    try {
      guard?.feed(c);
    } catch (e) {
      return stop(e as OpsError);
    }
    chunks.push(c);
  };
  const finished = new Promise<void>((resolve) => {
    if (!gunzip) return resolve();
    gunzip.on("data", take);
    gunzip.on("error", () => stop(new OpsError("bad_request", "The body is not valid gzip.")));
    gunzip.on("end", resolve);
    gunzip.on("close", resolve);
  });
  const reader = request.body.getReader();
  let wire = 0;
  try {
    for (;;) {
      if (failure) break;
      const { done, value } = await reader.read();
      if (done) break;
      wire += value.byteLength;
      if (wire > limit) {
        stop(tooLargeOnTheWire(limit));
        break;
      }
      if (!gunzip) take(value);
      else if (!gunzip.write(value)) await new Promise<void>((resolve) => (gunzip.once("drain", resolve), gunzip.once("close", resolve)));
    }
  } finally {
    if (failure) await reader.cancel().catch(() => {});
  }
  if (!failure) gunzip?.end();
  await finished;
  if (failure) throw failure;
  return owned(Buffer.concat(chunks, total));
}
