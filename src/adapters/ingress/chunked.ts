/**
 * Chunked bodies (RFC 9112 §7.1), read strictly and written anew: the decoder follows a chunked
 * message across reads and hands over only the data bytes; the relay writes them as chunks of
 * its own (`chunk()`), so chunk extensions, trailer fields and any oddity in the sender's size
 * lines stop at the ingress. Refused (HttpError 400, or 502 when `status` says so): a size that
 * is not plain hex digits (no `0x`, sign or whitespace), more than 13 significant digits, a bare
 * LF or CR, data longer than its size, control characters in an extension or trailer line, and
 * trailer sections over 16 KiB.
 */
import { HttpError } from "./http-error";

const enum C {
  Size,
  Ext,
  SizeLf,
  Data,
  DataCr,
  DataLf,
  TrailerStart,
  Trailer,
  TrailerLf,
  EndLf,
  Done,
}

const MAX_TRAILER = 16 * 1024;
const MAX_EXT = 4 * 1024;

export class ChunkedDecoder {
  private state = C.Size;
  private left = 0;
  private digits = 0;
  private significant = 0;
  private extra = 0;

  /** `status`: what a malformed body answers (400 for a request, 502 for a response). */
  constructor(private readonly status = 400) {}

  get done(): boolean {
    return this.state === C.Done;
  }

  private fail(message: string): never {
    throw new HttpError(this.status, message);
  }

  /**
   * Follow `bytes` from `from`; `data(start, end)` receives each run of data bytes in order.
   * Returns where the message ends in `bytes` (just past its last CRLF), or -1 when it goes on.
   */
  decode(bytes: Uint8Array, from: number, data: (start: number, end: number) => void): number {
    let i = from;
    const n = bytes.length;
    while (i < n) {
      switch (this.state) {
        case C.Data: {
          const take = Math.min(this.left, n - i);
          data(i, i + take);
          i += take;
          this.left -= take;
          if (this.left === 0) this.state = C.DataCr;
          continue;
        }
        case C.Size: {
          const b = bytes[i++];
          const d = b >= 48 && b <= 57 ? b - 48 : b >= 97 && b <= 102 ? b - 87 : b >= 65 && b <= 70 ? b - 55 : -1;
          if (d >= 0) {
            this.digits++;
            if (this.significant > 0 || d > 0) this.significant++;
            if (this.significant > 13 || this.digits > 64) this.fail("a chunk size is too large");
            this.left = this.left * 16 + d;
          } else if (this.digits > 0 && b === 59 /* ; */) this.state = C.Ext;
          else if (this.digits > 0 && b === 13) this.state = C.SizeLf;
          else this.fail("a chunk size line is malformed");
          continue;
        }
        case C.Ext: {
          const b = bytes[i++];
          if (b === 13) this.state = C.SizeLf;
          else if ((b < 32 && b !== 9) || b === 127 || ++this.extra > MAX_EXT) this.fail("a chunk extension is malformed");
          continue;
        }
        case C.SizeLf:
          if (bytes[i++] !== 10) this.fail("a chunk size line is malformed");
          this.digits = 0;
          this.significant = 0;
          this.state = this.left === 0 ? C.TrailerStart : C.Data;
          continue;
        case C.DataCr:
          if (bytes[i++] !== 13) this.fail("a chunk is longer than its size");
          this.state = C.DataLf;
          continue;
        case C.DataLf:
          if (bytes[i++] !== 10) this.fail("a chunk is longer than its size");
          this.state = C.Size;
          continue;
        case C.TrailerStart: {
          const b = bytes[i++];
          if (b === 13) this.state = C.EndLf;
          else if (b === 10 || b === 58 || TOKEN[b] !== 1) this.fail("a trailer field is malformed");
          else this.state = C.Trailer;
          continue;
        }
        case C.Trailer: {
          const b = bytes[i++];
          if (++this.extra > MAX_TRAILER) this.fail("the trailer fields are too large");
          if (b === 13) this.state = C.TrailerLf;
          else if ((b < 32 && b !== 9) || b === 127) this.fail("a trailer field is malformed");
          continue;
        }
        case C.TrailerLf:
          if (bytes[i++] !== 10) this.fail("a trailer field is malformed");
          this.state = C.TrailerStart;
          continue;
        case C.EndLf:
          if (bytes[i++] !== 10) this.fail("the chunked body ends malformed");
          this.state = C.Done;
          return i;
        case C.Done:
          return i;
      }
    }
    return this.state === C.Done ? i : -1;
  }
}

/** Token characters (a trailer line starts with a field name). */
const TOKEN = new Uint8Array(256);
for (const ch of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TOKEN[ch.charCodeAt(0)] = 1;

/** The size line of a chunk of `n` bytes (n > 0). */
export function chunkHead(n: number): string {
  return `${n.toString(16)}\r\n`;
}

/** The last chunk and the end of a chunked message (no trailer fields). */
export const LAST_CHUNK = "0\r\n\r\n";

/**
 * Decode `bytes` from `from` into what the relay writes: the data chunked anew (`again`), or the
 * data bytes alone (an HTTP/1.0 client, whose body ends with the connection). Returns null for
 * `out` when the slice held no data and did not end the body, and where the message ended (-1: it
 * goes on).
 */
export function reframe(dec: ChunkedDecoder, bytes: Buffer, from: number, again: boolean): { out: Buffer | null; end: number } {
  const parts: Buffer[] = [];
  const end = dec.decode(bytes, from, (s, e) => {
    if (again) parts.push(Buffer.from(chunkHead(e - s), "latin1"), bytes.subarray(s, e), CRLF);
    else parts.push(bytes.subarray(s, e));
  });
  if (end >= 0 && again) parts.push(LAST);
  return { out: parts.length === 0 ? null : parts.length === 1 ? parts[0] : Buffer.concat(parts), end };
}

const CRLF = Buffer.from("\r\n");
const LAST = Buffer.from(LAST_CHUNK);
