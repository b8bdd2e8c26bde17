/**
 * The shape of an OTLP-JSON body, checked in one pass over its bytes as they arrive, before any
 * parser builds an object from them (decision 0535). `JSON.parse` of `[` × 8M `]` × 8M (15 MiB,
 * 16 KB gzipped) was measured at over 500 MiB and seconds of the writer thread; of 5.6M empty
 * objects at 456 MiB. An export request never looks like either:
 *
 * - it is one JSON object (`{` first; nothing but whitespace after its `}`);
 * - it nests at most `MAX_JSON_DEPTH` levels: what the decoders accept, and no more;
 * - it holds at most one object or array per 16 bytes of `OPS_OTLP_MAX_DECODED_BYTES` (a log
 *   record as SDKs send it is 100 bytes or more and three to five objects).
 *
 * Brackets inside strings (escapes included) do not count. Whether the JSON is otherwise valid is
 * still the parser's to say; this only bounds what parsing it can cost.
 */
import { OpsError } from "../../core/errors";
import { MAX_ANY_DEPTH } from "./otlp-model";

/** Levels above an OTLP document's deepest attribute value: a metric exemplar's filtered attribute value opens at level 15. */
const OUTER_LEVELS = 15;
/** Levels one more `AnyValue` nesting adds at most: `kvlistValue`, its `values`, a `KeyValue`, its `value`. */
const LEVELS_PER_VALUE = 4;
/** The deepest nesting a body may have: attribute values nested as deep as the decoders accept (147). */
export const MAX_JSON_DEPTH = OUTER_LEVELS + LEVELS_PER_VALUE * (MAX_ANY_DEPTH + 1);
/** Bytes of the decoded-size limit per object or array a body may hold. */
export const BYTES_PER_CONTAINER = 16;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const BEFORE = 0;
const INSIDE = 1;
const AFTER = 2;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The bounds above over a body fed chunk by chunk; `feed` throws at the first byte past one. */
export class JsonShapeGuard {
  private depth = 0;
  private containers = 0;
  private inString = false;
  private escaped = false;
  /** Before the first non-space byte (0), inside the document (1), or after it closed (2). */
  private state = BEFORE;
  private readonly maxContainers: number;

  constructor(decodedLimit: number) {
    this.maxContainers = Math.floor(decodedLimit / BYTES_PER_CONTAINER);
  }

  /** Check the next bytes of the body. */
  feed(bytes: Uint8Array): void {
    let depth = this.depth;
    let containers = this.containers;
    let inString = this.inString;
    let escaped = this.escaped;
    let state = this.state;
    try {
      for (let i = 0; i < bytes.length; i++) {
        const c = bytes[i];
        if (inString) {
          if (escaped) escaped = false;
          else if (c === BACKSLASH) escaped = true;
          else if (c === QUOTE) inString = false;
          continue;
        }
        if (state !== INSIDE) {
          if (isSpace(c)) continue;
          if (state === AFTER) throw new OpsError("bad_request", "The body continues after its JSON object ends; an OTLP export request is one JSON object.");
          if (c !== OPEN_BRACE) throw new OpsError("bad_request", `The body is not a JSON object (it starts with ${JSON.stringify(String.fromCharCode(c))}); an OTLP export request is one.`);
          state = INSIDE;
        }
        if (c === QUOTE) inString = true;
        else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
          if (++depth > MAX_JSON_DEPTH) throw new OpsError("bad_request", `The JSON is nested deeper than ${MAX_JSON_DEPTH} levels; no OTLP export request needs more.`, { max_depth: MAX_JSON_DEPTH });
          if (++containers > this.maxContainers) {
            throw new OpsError("payload_too_large", `The body holds more than ${this.maxContainers} JSON objects and arrays (one per ${BYTES_PER_CONTAINER} bytes of OPS_OTLP_MAX_DECODED_BYTES); send smaller batches.`, { max_containers: this.maxContainers });
          }
        } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
          // An unmatched close is the parser's to refuse; it cannot make parsing costly.
          if (--depth === 0) state = AFTER;
        }
      }
    } finally {
      this.depth = depth;
      this.containers = containers;
      this.inString = inString;
      this.escaped = escaped;
      this.state = state;
    }
  }
}
