/** The chunked decoder on its own: the end found across any split, data handed over, oddities refused, bodies chunked anew. */
import { describe, test, expect } from "bun:test";
import { ChunkedDecoder, reframe } from "./chunked";
import { HttpError } from "./http-error";

const body = Buffer.from("4;a=b\r\nwiki\r\n10\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\nNEXT");

describe("chunked bodies", () => {
  test("the end is found across any split, and only data bytes are handed over", () => {
    for (let cut = 0; cut <= body.length - 4; cut++) {
      const dec = new ChunkedDecoder();
      let data = "";
      const take = (b: Buffer) => (s: number, e: number) => (data += b.subarray(s, e).toString());
      const a = body.subarray(0, cut);
      const b = body.subarray(cut);
      const first = dec.decode(a, 0, take(a));
      const end = first >= 0 ? first : cut + dec.decode(b, 0, take(b));
      expect([cut, end, data]).toEqual([cut, body.length - 4, "wiki0123456789abcdef"]);
    }
  });

  test("chunked anew without extensions or trailers; or the data alone", () => {
    expect(reframe(new ChunkedDecoder(), body, 0, true)).toEqual({ out: Buffer.from("4\r\nwiki\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n"), end: body.length - 4 });
    expect(reframe(new ChunkedDecoder(), body, 0, false)).toEqual({ out: Buffer.from("wiki0123456789abcdef"), end: body.length - 4 });
    expect(reframe(new ChunkedDecoder(), Buffer.from("4\r\nwi"), 0, true)).toEqual({ out: Buffer.from("2\r\nwi\r\n"), end: -1 });
  });

  test("oddities are refused with the decoder's status", () => {
    const bad = ["x\r\n", "0x5\r\nhello\r\n", " 5\r\n", "5 \r\nhello\r\n", "-5\r\n", "+5\r\n", "4\r\nwikiXX", "\r\n", "12345678901234\r\n", "5\nhello\r\n", "5\r\nhello\n", "5;a\nb\r\n", "5;a\0\r\n", "0\r\nX: a\nb\r\n\r\n", "0\r\n: x\r\n\r\n", "0\r\n\n"];
    for (const b of bad) {
      let status = 0;
      try {
        new ChunkedDecoder(502).decode(Buffer.from(b), 0, () => undefined);
      } catch (e) {
        status = (e as HttpError).status;
      }
      expect([b, status]).toEqual([b, 502]);
    }
    // Leading zeros are not size: twenty digits of which one counts.
    expect(new ChunkedDecoder().decode(Buffer.from("00000000000000000005\r\nhello\r\n0\r\n\r\n"), 0, () => undefined)).toBe(34);
  });
});
