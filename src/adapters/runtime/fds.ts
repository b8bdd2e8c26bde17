/**
 * The few libc calls that let a replica outlive an exec of ops (docs/decisions/0390), through
 * bun:ffi as src/reexec.ts calls execve: pipes whose descriptors ops can name (Bun.spawn's own
 * pipes are sockets it keeps to itself), FD_CLOEXEC on and off, a non-blocking read that leaves
 * unread bytes in the pipe, a memfd for the hand-over, and `waitpid` for a child this image did
 * not start (Bun only reaps the children it spawned). Linux only.
 */
import { dlopen, FFIType, ptr, read as peek } from "bun:ffi";
import { fstatSync, readFileSync, writeSync } from "node:fs";

const O_CLOEXEC = 0o2000000;
const O_NONBLOCK = 0o4000;
const F_GETFD = 1;
const F_SETFD = 2;
const F_GETFL = 3;
const F_SETFL = 4;
const FD_CLOEXEC = 1;
const WNOHANG = 1;
const MFD_CLOEXEC = 1;

let lib: ReturnType<typeof open> | null = null;
function open() {
  return dlopen("libc.so.6", {
    pipe2: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    fcntl: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    read: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
    waitpid: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    memfd_create: { args: [FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  }).symbols;
}
const libc = () => (lib ??= open());

function errno(): number {
  return peek.i32(libc().__errno_location()!, 0);
}

/** A pipe, both ends close-on-exec: `[read, write]`. */
export function pipe(): { read: number; write: number } {
  const fds = new Int32Array(2);
  if (libc().pipe2(ptr(fds), O_CLOEXEC) !== 0) throw new Error(`pipe2 failed (errno ${errno()})`);
  return { read: fds[0]!, write: fds[1]! };
}

export function closeFd(fd: number): void {
  libc().close(fd);
}

/** Set or clear FD_CLOEXEC (cleared: the descriptor survives execve). */
export function setCloexec(fd: number, on: boolean): void {
  const flags = libc().fcntl(fd, F_GETFD, 0);
  if (flags < 0) throw new Error(`fd ${fd} is not open`);
  libc().fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC);
}

export function setNonBlocking(fd: number): void {
  const flags = libc().fcntl(fd, F_GETFL, 0);
  if (flags < 0) throw new Error(`fd ${fd} is not open`);
  libc().fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

const EAGAIN = 11;
const EINTR = 4;

/** Read what a non-blocking fd has: bytes, `"eof"`, or `"empty"` (nothing yet). */
export function readSome(fd: number, buf: Uint8Array): Uint8Array | "eof" | "empty" {
  for (;;) {
    const n = Number(libc().read(fd, ptr(buf), buf.length));
    if (n > 0) return buf.slice(0, n);
    if (n === 0) return "eof";
    const e = errno();
    if (e === EINTR) continue;
    if (e === EAGAIN) return "empty";
    return "eof";
  }
}

/**
 * What an open descriptor refers to (device, inode and access mode: a pipe's two ends share the
 * inode), to check it is still the same one after an exec.
 */
export function fdIdentity(fd: number): string | null {
  try {
    const st = fstatSync(fd);
    return `${st.dev}:${st.ino}:${libc().fcntl(fd, F_GETFL, 0) & 3}`;
  } catch {
    return null;
  }
}

/** A process's start time (clock ticks since boot, /proc/<pid>/stat field 22): a pid with another start time is another process. */
export function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z") return null;
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

export interface Reaped {
  code: number | null;
  signal: string | null;
}

const SIGNALS: Record<number, string> = { 1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM" };

/**
 * `waitpid(pid, WNOHANG)` for a child this image did not spawn: null while it runs, its exit once
 * it ended (reaped), or `{ code: null, signal: null }` when it is no child of ours any more.
 */
export function reapChild(pid: number): Reaped | null {
  const status = new Int32Array(1);
  const r = libc().waitpid(pid, ptr(status), WNOHANG);
  if (r === 0) return null;
  if (r < 0) return errno() === EINTR ? null : { code: null, signal: null };
  const s = status[0]!;
  if ((s & 0x7f) === 0) return { code: (s >> 8) & 0xff, signal: null };
  const sig = s & 0x7f;
  return { code: null, signal: SIGNALS[sig] ?? `signal ${sig}` };
}

/** An anonymous in-memory file (close-on-exec) holding `text`, for the hand-over to the next image. */
export function memfdWith(text: string): number {
  const fd = libc().memfd_create(ptr(Buffer.from("ops-handover\0")), MFD_CLOEXEC);
  if (fd < 0) throw new Error(`memfd_create failed (errno ${errno()})`);
  const bytes = Buffer.from(text, "utf8");
  for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off, off);
  return fd;
}
