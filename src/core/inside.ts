/**
 * Paths that repository content controls, resolved inside the tree they belong to (DESIGN §6
 * "Files"): `context`, `output` and `dockerfile` of ops.toml, a module's directory and locale
 * files, a lockfile, a file a sandboxed tool wrote for ops to read. ops usually runs as root, so
 * a path like `lnk/x` must never be handed to `open`, `chown` or a bind mount as text: the kernel
 * would follow `lnk` wherever it points (the data dir, /etc, /proc).
 *
 * `resolveInside` walks the path one component at a time from the tree's root with `lstat`. A
 * symlink is followed only while where it leads stays inside the tree: its target is spliced into
 * the rest of the path and walked the same way, so a link to a link is checked at every hop. An
 * absolute target, a `..` that climbs above the root, or more than 40 links are refused with a
 * message naming the path and the link. The answer is the real path (no symlink left in it) and
 * its tree-relative form; everything after uses that path, never the text it came from.
 *
 * What this cannot do alone: a process that can write into the tree could swap a checked
 * directory for a link between the check and the use. ops resolves repository paths only while
 * no sandbox of that build runs (between steps), and `readInside` opens the last component with
 * O_NOFOLLOW and checks it is still the file it resolved, so a swapped last component is refused.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, realpathSync, type Stats } from "node:fs";
import path from "node:path";

/** A repository-controlled path ops will not use; the message names the path (and the link). */
export class PathRefused extends Error {
  constructor(
    message: string,
    /** The path as the repository gave it. */
    readonly path: string,
  ) {
    super(message);
    this.name = "PathRefused";
  }
}

export interface InsideOptions {
  /** What the path is, for messages: `the build context`, `the Dockerfile`. */
  what: string;
  /** What the tree is, for messages (default `the repository`). */
  tree?: string;
  /** What the path must be; a missing path is always refused (see `resolveInsideOrNull`). */
  want?: "directory" | "file" | "any";
}

export interface Inside {
  /** Absolute real path: the root's real path joined with `rel`, no symlink in it. */
  abs: string;
  /** The resolved path relative to the root, `/`-separated; "." for the root itself. */
  rel: string;
  /** lstat of the resolved path at the time it was resolved. */
  stat: Stats;
}

/** Links followed in one path before it is refused (Linux's own limit for one lookup). */
const MAX_LINKS = 40;

const shown = (p: string) => JSON.stringify(p);

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw e;
  }
}

/**
 * `rel` resolved inside `root` (see the file comment), or null when some component does not exist.
 * Throws PathRefused when the path, or a link on the way, leads outside the tree, or when the
 * path is not what `want` asks.
 */
export function resolveInsideOrNull(root: string, rel: string, opts: InsideOptions): Inside | null {
  const tree = opts.tree ?? "the repository";
  const named = `${opts.what} ${shown(rel)}`;
  if (rel.includes("\0")) throw new PathRefused(`${named} contains a NUL byte`, rel);
  if (path.isAbsolute(rel)) throw new PathRefused(`${named} must be a relative path inside ${tree}`, rel);
  const base = realpathSync(root);
  const done: string[] = [];
  const todo = rel.split("/").reverse();
  let links = 0;
  /** The last link followed, to name it when a ".." after it climbs out. */
  let via: { link: string; target: string } | null = null;
  let st = lstatSync(base);
  while (todo.length > 0) {
    const part = todo.pop()!;
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (!st.isDirectory()) throw new PathRefused(`${named} is not a path inside ${tree}: ${shown(done.join("/"))} is not a directory`, rel);
      if (done.length === 0) {
        const why = via ? `the symbolic link ${shown(via.link)} points to ${shown(via.target)}` : `through ".."`;
        throw new PathRefused(`${named} leads outside ${tree}: ${why}`, rel);
      }
      done.pop();
      st = lstatSync(path.join(base, ...done));
      continue;
    }
    if (!st.isDirectory()) throw new PathRefused(`${named} is not a path inside ${tree}: ${shown(done.join("/"))} is not a directory`, rel);
    const here = path.join(base, ...done, part);
    const next = lstatOrNull(here);
    if (!next) return null;
    if (next.isSymbolicLink()) {
      const link = [...done, part].join("/");
      if (++links > MAX_LINKS) throw new PathRefused(`${named} goes through more than ${MAX_LINKS} symbolic links (at ${shown(link)})`, rel);
      const target = readlinkSync(here);
      if (path.isAbsolute(target)) throw new PathRefused(`${named} leads outside ${tree}: the symbolic link ${shown(link)} points to the absolute path ${shown(target)}`, rel);
      // The target takes the link's place, relative to the link's directory; each hop is walked.
      via = { link, target };
      todo.push(...target.split("/").reverse());
      continue;
    }
    done.push(part);
    st = next;
  }
  const abs = path.join(base, ...done);
  const out: Inside = { abs, rel: done.length === 0 ? "." : done.join("/"), stat: st };
  const want = opts.want ?? "any";
  if (want === "directory" && !st.isDirectory()) throw new PathRefused(`${named} is not a directory`, rel);
  if (want === "file" && !st.isFile()) throw new PathRefused(`${named} is not a regular file`, rel);
  return out;
}

/** `rel` resolved inside `root`; a missing path is refused too (`does not exist in <tree>`). */
export function resolveInside(root: string, rel: string, opts: InsideOptions): Inside {
  const found = resolveInsideOrNull(root, rel, opts);
  if (!found) throw new PathRefused(`${opts.what} ${shown(rel)} does not exist in ${opts.tree ?? "the repository"}`, rel);
  return found;
}

/**
 * The bytes of the regular file `rel` inside `root`, at most `maxBytes` (a larger file is refused),
 * or null when it does not exist. The file is opened with O_NOFOLLOW (and O_NONBLOCK, so a FIFO
 * swapped in cannot hang ops) and must still be the file that was resolved.
 */
export function readInside(root: string, rel: string, opts: InsideOptions & { maxBytes: number }): Buffer | null {
  const found = resolveInsideOrNull(root, rel, { ...opts, want: "file" });
  if (!found) return null;
  const named = `${opts.what} ${shown(rel)}`;
  if (found.stat.size > opts.maxBytes) throw new PathRefused(`${named} is larger than ${opts.maxBytes} bytes`, rel);
  let fd: number;
  try {
    fd = openSync(found.abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ELOOP") throw new PathRefused(`${named} became a symbolic link while ops read it`, rel);
    throw e;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.ino !== found.stat.ino || st.dev !== found.stat.dev) throw new PathRefused(`${named} changed while ops read it`, rel);
    if (st.size > opts.maxBytes) throw new PathRefused(`${named} is larger than ${opts.maxBytes} bytes`, rel);
    const buf = Buffer.allocUnsafe(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}
