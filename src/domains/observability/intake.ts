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
 * - The decompressed bytes end in one buffer of their exact size that the writer thread takes over
 *   (transferred, not copied), where they are decoded one request at a time.
 */
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import { readBodyWithLimit } from "../../core/body";
import { createGunzip } from "node:zlib";

/** Request bodies being read at once, at most. */
export const MAX_READING = 32;
/** Gzip bodies inflating at once, at most: with the default limit, 64 MiB of decompressed bytes. */
export const MAX_INFLATING = 4;
const COUNTS_KEY = "observability.intake";

interface Counts {
  reading: number;
  inflating: number;
}

function countsOf(core: Core): Counts {
  let c = core.locals.get(COUNTS_KEY) as Counts | undefined;
  if (!c) core.locals.set(COUNTS_KEY, (c = { reading: 0, inflating: 0 }));
  return c;
}

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

/**
 * Read `request`'s body, inflating it when `gzip`, under the bounds above: the decompressed bytes,
 * in a buffer of their own (never a view into a larger one, so the writer thread can take it over).
 * `full()` says whether the writer's backlog is at its bound (then 429 before reading).
 */
export async function readExportBody(core: Core, request: Request, gzip: boolean, full: () => boolean): Promise<Uint8Array<ArrayBuffer>> {
  const limit = core.config.otlpMaxDecodedBytes;
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLargeOnTheWire(limit);
  const counts = countsOf(core);
  if (counts.reading >= MAX_READING || full()) throw busy("writing telemetry", 2);
  // An inflation takes tens of milliseconds: a second is plenty for a slot to free.
  if (gzip && counts.inflating >= MAX_INFLATING) throw busy("decompressing telemetry", 1);
  counts.reading++;
  if (gzip) counts.inflating++;
  try {
    if (!gzip) return owned(await readBodyWithLimit(request, limit));
    return await inflate(request, limit);
  } finally {
    counts.reading--;
    if (gzip) counts.inflating--;
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
 * Inflate the body as it arrives, counting wire and decompressed bytes against `limit`. node:zlib's
 * stream inflates in steps of INFLATE_CHUNK and stops when destroyed, so a bomb costs the limit and
 * no more; the web DecompressionStream was measured inflating a whole input chunk at once (all
 * 58 MiB of a 0.4 MiB bomb) before the first read, and holding the event loop meanwhile.
 */
async function inflate(request: Request, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  if (!request.body) return new Uint8Array(0);
  const gunzip = createGunzip({ chunkSize: INFLATE_CHUNK });
  const chunks: Buffer[] = [];
  let total = 0;
  let failure: OpsError | null = null;
  const stop = (e: OpsError) => {
    failure ??= e;
    gunzip.destroy();
  };
  const finished = new Promise<void>((resolve) => {
    gunzip.on("data", (c: Buffer) => {
      total += c.byteLength;
      if (total > limit) stop(inflatesTooFar(limit));
      else chunks.push(c);
    });
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
      if (!gunzip.write(value)) await new Promise<void>((resolve) => (gunzip.once("drain", resolve), gunzip.once("close", resolve)));
    }
  } finally {
    if (failure) await reader.cancel().catch(() => {});
  }
  if (!failure) gunzip.end();
  await finished;
  if (failure) throw failure;
  return owned(Buffer.concat(chunks, total));
}
