/**
 * Reading request bodies under a limit: never more than the limit is held, and a body past it is
 * 413 whether or not it declared its length. The kernel's JSON parser and the routes that read
 * raw bodies (`raw` body limits) share this.
 */
import { OpsError } from "./errors";

/** The 413 every body limit answers with. */
export function bodyTooLarge(limit: number): OpsError {
  const mib = limit >= 1024 * 1024 ? `${(limit / (1024 * 1024)).toFixed(limit % (1024 * 1024) === 0 ? 0 : 1)} MiB` : `${limit} bytes`;
  return new OpsError("payload_too_large", `The request body is larger than the limit of ${mib} for this route.`, { limit_bytes: limit });
}

/** Read the whole body (at most `limit` bytes; 413 past it). An absent body is empty. */
export async function readBodyWithLimit(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw bodyTooLarge(limit);
  const body = request.body;
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw bodyTooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}


const parsedJson = new WeakMap<Request, unknown>();

/** Remember the JSON value the kernel's parser read from `request` (see `jsonBodyOf`). */
export function rememberJsonBody(request: Request, value: unknown): void {
  parsedJson.set(request, value);
}

/**
 * The JSON value the request's body held, exactly as sent. An optional body schema lets Elysia
 * hand a handler `undefined` for a body that is not an object (`"x"`, `123`), so a route whose
 * body is optional asks here to tell "no body" from "a body nobody meant".
 */
export function jsonBodyOf(request: Request): unknown {
  return parsedJson.get(request);
}
