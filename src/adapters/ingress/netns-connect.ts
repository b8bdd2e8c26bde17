/**
 * A connection to a replica made inside its sandbox's network namespace (decision 0601): the
 * socket is created while this thread is in the namespace (`setns`), so it connects to the
 * replica's own `127.0.0.1:$PORT` there, with no user-space hop (pasta's port forward) on the
 * request path. Only a root ops can enter a namespace it made; otherwise, and for a replica
 * without one, the ingress connects to the forwarded host port as before.
 *
 * The namespace is named by a path to a descriptor the runtime holds (`/proc/<pid>/fd/<n>`) and
 * that descriptor's identity (the namespace file's `dev:ino`): opened once and checked against the identity, so a
 * descriptor number that now names something else is never entered. The connect itself is
 * non-blocking; its outcome is read with `poll` and `SO_ERROR` on later turns of the event loop,
 * and only a connected socket is handed to Bun.
 */
import { closeSync, fstatSync, openSync } from "node:fs";
import { dlopen, FFIType, ptr, toArrayBuffer } from "bun:ffi";

const CLONE_NEWNET = 0x40000000;
const AF_INET = 2;
const SOCK_STREAM = 1;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_ERROR = 4;
const POLLOUT = 4;
const EINPROGRESS = 115;

let libc: ReturnType<typeof load> | null = null;
function load() {
  return dlopen("libc.so.6", {
    setns: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    connect: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
    getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  });
}

function errno(): number {
  return new Int32Array(toArrayBuffer(libc!.symbols.__errno_location()!, 0, 4))[0]!;
}

/** Where a replica listens inside its namespace: a path to the namespace's descriptor and its identity. */
export interface NetnsTarget {
  path: string;
  ident: string;
}

const opened = new Map<string, { fd: number; ident: string }>();
let own: number | null = null;

function identityOf(fd: number): string {
  const st = fstatSync(fd);
  return `${st.dev}:${st.ino}`;
}

/** The namespace's descriptor, opened once; null when the path no longer names that namespace. */
function namespaceFd(target: NetnsTarget): number | null {
  const known = opened.get(target.path);
  if (known && known.ident === target.ident) return known.fd;
  if (known) {
    closeSync(known.fd);
    opened.delete(target.path);
  }
  let fd: number;
  try {
    fd = openSync(target.path, "r");
  } catch {
    return null;
  }
  if (identityOf(fd) !== target.ident) {
    closeSync(fd);
    return null;
  }
  opened.set(target.path, { fd, ident: target.ident });
  return fd;
}

/** Forget a namespace's descriptor (its replica is gone). */
export function forgetNamespace(path: string): void {
  const known = opened.get(path);
  if (!known) return;
  closeSync(known.fd);
  opened.delete(path);
}

/** Whether this process may enter namespaces it did not create (root). */
export function canEnterNamespaces(): boolean {
  return process.getuid?.() === 0 && process.platform === "linux";
}

/** A TCP socket made in `target`'s namespace and connecting to 127.0.0.1:`port` there; resolves with its descriptor once connected. */
export function connectInside(target: NetnsTarget, port: number, timeoutMs: number): Promise<number> {
  libc ??= load();
  own ??= openSync("/proc/self/ns/net", "r");
  const ns = namespaceFd(target);
  if (ns === null) return Promise.reject(new Error("the replica's network namespace is gone"));
  if (libc.symbols.setns(ns, CLONE_NEWNET) !== 0) return Promise.reject(new Error(`could not enter the replica's network namespace (errno ${errno()})`));
  let fd: number;
  try {
    fd = libc.symbols.socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  } finally {
    // Back at once: nothing else this thread does may happen in the replica's namespace. A
    // thread that cannot come back must not go on (every later socket would be the replica's).
    if (libc.symbols.setns(own, CLONE_NEWNET) !== 0) {
      process.stderr.write(`ops: could not leave a replica's network namespace (errno ${errno()}); exiting\n`);
      process.exit(70);
    }
  }
  if (fd < 0) return Promise.reject(new Error(`socket failed (errno ${errno()})`));
  const addr = new Uint8Array(16);
  const view = new DataView(addr.buffer);
  view.setUint16(0, AF_INET, true);
  view.setUint16(2, port, false);
  addr.set([127, 0, 0, 1], 4);
  if (libc.symbols.connect(fd, ptr(addr), 16) !== 0 && errno() !== EINPROGRESS) {
    const e = errno();
    libc.symbols.close(fd);
    return Promise.reject(new Error(`connect failed (errno ${e})`));
  }
  const pfd = new Uint8Array(8);
  const pview = new DataView(pfd.buffer);
  pview.setInt32(0, fd, true);
  pview.setInt16(4, POLLOUT, true);
  const soErr = new Int32Array(1);
  const soLen = new Uint32Array([4]);
  const deadline = Date.now() + timeoutMs;
  return new Promise<number>((resolve, reject) => {
    const check = () => {
      pview.setInt16(6, 0, true);
      const n = libc!.symbols.poll(ptr(pfd), 1, 0);
      if (n > 0) {
        libc!.symbols.getsockopt(fd, SOL_SOCKET, SO_ERROR, ptr(soErr), ptr(soLen));
        if (soErr[0] === 0) return resolve(fd);
        libc!.symbols.close(fd);
        return reject(new Error(soErr[0] === 111 ? "connection refused" : `connect failed (errno ${soErr[0]})`));
      }
      if (Date.now() > deadline) {
        libc!.symbols.close(fd);
        return reject(new Error(`no connection within ${timeoutMs} ms`));
      }
      setImmediate(check);
    };
    check();
  });
}
