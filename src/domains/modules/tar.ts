/**
 * The gzip'd tarballs `cargo package` and `npm pack` write, read (ustar and GNU long names) and,
 * for one member, rewritten: a crate packaged by a cargo older than 1.68 spells its Cargo.lock's
 * sparse sources the way that cargo's unstable flag did, and ops writes them as every later cargo
 * reads them (pack.ts).
 */

interface RawEntry {
  name: string;
  type: string;
  data: Uint8Array;
  /** Where the entry's own header starts and where its padded data ends, in the tar. */
  header: number;
  end: number;
}

function* rawEntries(tar: Uint8Array): Generator<RawEntry> {
  const dec = new TextDecoder();
  const cstr = (b: Uint8Array) => dec.decode(b.subarray(0, b.indexOf(0) === -1 ? b.length : b.indexOf(0)));
  let off = 0;
  let longName: string | null = null;
  while (off + 512 <= tar.length) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) return;
    const size = parseInt(cstr(h.subarray(124, 136)).trim() || "0", 8);
    const type = String.fromCharCode(h[156] || 48);
    const prefix = cstr(h.subarray(345, 500));
    const name = longName ?? (prefix ? `${prefix}/${cstr(h.subarray(0, 100))}` : cstr(h.subarray(0, 100)));
    const data = tar.subarray(off + 512, off + 512 + size);
    const header = off;
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === "L") {
      longName = cstr(data);
      continue;
    }
    longName = null;
    yield { name, type: type === "\0" ? "0" : type, data, header, end: off };
  }
}

/** The entries of a gzip'd tar: name, type flag and bytes. */
export function* tarEntries(gz: Uint8Array): Generator<{ name: string; type: string; data: Uint8Array }> {
  for (const e of rawEntries(Bun.gunzipSync(gz as Uint8Array<ArrayBuffer>))) yield { name: e.name, type: e.type, data: e.data };
}

/** The bytes of regular file `member` in a gzip'd tar, or null. */
export function tarMember(gz: Uint8Array, member: string): Uint8Array | null {
  for (const e of tarEntries(gz)) if (e.type === "0" && e.name === member) return e.data;
  return null;
}

/** The gzip'd tar with regular file `member`'s bytes replaced by `data` (its header's size and checksum rewritten); every other byte kept. */
export function replaceTarMember(gz: Uint8Array, member: string, data: Uint8Array): Uint8Array {
  const tar = Bun.gunzipSync(gz as Uint8Array<ArrayBuffer>);
  const target = [...rawEntries(tar)].find((e) => e.type === "0" && e.name === member);
  if (!target) throw new Error(`the tarball has no ${member}`);
  const header = new Uint8Array(tar.subarray(target.header, target.header + 512));
  const enc = new TextEncoder();
  header.set(enc.encode(`${data.length.toString(8).padStart(11, "0")}\0`), 124);
  // The checksum counts its own field as eight spaces (POSIX ustar).
  header.fill(0x20, 148, 156);
  const sum = header.reduce((a, b) => a + b, 0);
  header.set(enc.encode(`${sum.toString(8).padStart(6, "0")}\0 `), 148);
  const padded = new Uint8Array(Math.ceil(data.length / 512) * 512);
  padded.set(data);
  const out = new Uint8Array(target.header + 512 + padded.length + (tar.length - target.end));
  out.set(tar.subarray(0, target.header), 0);
  out.set(header, target.header);
  out.set(padded, target.header + 512);
  out.set(tar.subarray(target.end), target.header + 512 + padded.length);
  return Bun.gzipSync(out);
}
