/**
 * Protobuf wire format, just what the OTLP messages need: a bounds-checked reader (varints,
 * fixed-width numbers, length-delimited fields, skipping unknown fields by wire type, packed and
 * unpacked repeated scalars) and the two small answers ops encodes (partial success and
 * google.rpc.Status). Malformed input throws `OtlpDecodeError`.
 */
import { OtlpDecodeError } from "./otlp-model";

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const TWO32 = 4294967296;

export class Reader {
  pos = 0;
  private readonly view: DataView;

  constructor(readonly buf: Buffer) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  fail(what: string): never {
    throw new OtlpDecodeError(`malformed protobuf: ${what} at byte ${this.pos}`);
  }

  need(n: number, end: number): void {
    if (n < 0 || this.pos + n > end) this.fail("truncated field");
  }

  /** An unsigned varint as a number (exact below 2^53). */
  varint(end: number): number {
    const buf = this.buf;
    let result = 0;
    let shift = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= end) this.fail("truncated varint");
      const b = buf[this.pos++];
      result += shift < 28 ? (b & 0x7f) << shift : (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
    }
    this.fail("varint longer than 10 bytes");
  }

  /** A signed int64 varint (two's complement over 10 bytes for negatives). */
  int64(end: number): number {
    const start = this.pos;
    const v = this.varint(end);
    if (this.pos - start < 10) return v;
    let big = 0n;
    for (let i = this.pos - 1; i >= start; i--) big = (big << 7n) | BigInt(this.buf[i] & 0x7f);
    return Number(BigInt.asIntN(64, big));
  }

  tag(end: number): [field: number, wire: number] {
    const t = this.varint(end);
    return [Math.floor(t / 8), t & 7];
  }

  /** fixed64 nanoseconds as (fractional) milliseconds. */
  nanosAsMs(end: number): number {
    this.need(8, end);
    const lo = this.view.getUint32(this.pos, true);
    const hi = this.view.getUint32(this.pos + 4, true);
    this.pos += 8;
    // Whole microseconds, exactly: 2^32 = 4294967 × 1000 + 296, so ns / 1000 splits into two parts
    // that both stay below 2^53 (a double holds nanoseconds since 1970 only to ~256 ns).
    const micros = hi * 4294967 + Math.floor((hi * 296 + lo) / 1000);
    return micros / 1e3;
  }

  fixed64(end: number): number {
    this.need(8, end);
    const lo = this.view.getUint32(this.pos, true);
    const hi = this.view.getUint32(this.pos + 4, true);
    this.pos += 8;
    return hi * TWO32 + lo;
  }

  sfixed64(end: number): number {
    this.need(8, end);
    const lo = this.view.getUint32(this.pos, true);
    const hi = this.view.getInt32(this.pos + 4, true);
    this.pos += 8;
    return hi * TWO32 + lo;
  }

  fixed32(end: number): number {
    this.need(4, end);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }

  double(end: number): number {
    this.need(8, end);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }

  /** The end offset of a length-delimited field that starts here. */
  len(end: number): number {
    const n = this.varint(end);
    this.need(n, end);
    return this.pos + n;
  }

  string(end: number): string {
    const stop = this.len(end);
    const s = this.buf.toString("utf8", this.pos, stop);
    this.pos = stop;
    return s;
  }

  hex(end: number): string {
    const stop = this.len(end);
    let s = "";
    for (let i = this.pos; i < stop; i++) s += HEX[this.buf[i]];
    this.pos = stop;
    return s;
  }

  base64(end: number): string {
    const stop = this.len(end);
    const s = this.buf.toString("base64", this.pos, stop);
    this.pos = stop;
    return s;
  }

  skip(wire: number, end: number): void {
    switch (wire) {
      case 0:
        this.varint(end);
        return;
      case 1:
        this.need(8, end);
        this.pos += 8;
        return;
      case 2:
        this.pos = this.len(end);
        return;
      case 5:
        this.need(4, end);
        this.pos += 4;
        return;
      default:
        this.fail(`unsupported wire type ${wire}`);
    }
  }

  /** Packed or unpacked repeated fixed64 / double. */
  repeated64(wire: number, end: number, out: number[], asDouble: boolean): void {
    if (wire === 2) {
      const stop = this.len(end);
      if ((stop - this.pos) % 8 !== 0) this.fail("packed field length not a multiple of 8");
      while (this.pos < stop) out.push(asDouble ? this.double(stop) : this.fixed64(stop));
    } else if (wire === 1) {
      out.push(asDouble ? this.double(end) : this.fixed64(end));
    } else {
      this.fail("repeated 64-bit field with a wrong wire type");
    }
  }
}


function varintBytes(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

function lenField(field: number, payload: Uint8Array): number[] {
  return [(field << 3) | 2, ...varintBytes(payload.length), ...payload];
}

/**
 * An `Export*ServiceResponse` with `partial_success { rejected_* = 1, error_message = 2 }`, or the
 * empty message (0 bytes) when nothing was rejected and there is no warning.
 */
export function encodePartialSuccessProto(rejected: number, message: string): Uint8Array {
  if (rejected === 0 && message === "") return new Uint8Array(0);
  const inner: number[] = [];
  if (rejected > 0) inner.push(0x08, ...varintBytes(rejected));
  if (message !== "") inner.push(...lenField(2, new TextEncoder().encode(message)));
  return new Uint8Array(lenField(1, new Uint8Array(inner)));
}

/** A `google.rpc.Status { code = 1, message = 2 }`, the body of an OTLP failure. */
export function encodeStatusProto(code: number, message: string): Uint8Array {
  const out: number[] = [];
  if (code > 0) out.push(0x08, ...varintBytes(code));
  if (message !== "") out.push(...lenField(2, new TextEncoder().encode(message)));
  return new Uint8Array(out);
}
