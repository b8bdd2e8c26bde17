/**
 * Re-executing ops in place (docs/decisions/0387): after `ops serve` has drained and closed on
 * SIGHUP, `execve(2)` replaces the process image with the binary at the same path — the new one
 * after `ops self-update` or a package upgrade — keeping the process id (so systemd sees the same
 * main process and no restart) and its arguments and environment; the new image binds the same
 * ports. Bun has no exec, so this calls libc's through bun:ffi.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";

/** The running binary when it is the compiled `ops`, else null (running from a checkout). */
export function compiledSelf(): string | null {
  if (!Bun.main.startsWith("/$bunfs/") && !Bun.main.startsWith("B:/~BUN/")) return null;
  // After the file was replaced, the kernel names the old image "<path> (deleted)": exec the path.
  return process.execPath.replace(/ \(deleted\)$/, "");
}

/** The argv that runs another `ops` command with this binary (or this checkout's entry point). */
export function opsArgv(...args: string[]): string[] {
  const self = compiledSelf();
  return self !== null ? [self, ...args] : [process.execPath.replace(/ \(deleted\)$/, ""), new URL("./main.ts", import.meta.url).pathname, ...args];
}

/** The argv of a data plane process (`data-plane`, `ingress`): its own lean entry when running from a checkout (decision 0600). */
export function planeArgv(name: "data-plane" | "ingress", ...args: string[]): string[] {
  const self = compiledSelf();
  return self !== null ? [self, name, ...args] : [process.execPath.replace(/ \(deleted\)$/, ""), new URL("./dataplane/main.ts", import.meta.url).pathname, name, ...args];
}

/** The argv that starts this process again: the compiled binary, or bun with the entry script. */
export function selfArgv(): string[] {
  const self = compiledSelf();
  if (self !== null) return [self, ...process.argv.slice(2)];
  return [process.execPath.replace(/ \(deleted\)$/, ""), process.argv[1], ...process.argv.slice(2)];
}

function cString(s: string): Buffer {
  return Buffer.from(`${s}\0`, "utf8");
}

/**
 * Replace this process with `argv` and `env`. Returns only when execve failed, with the errno's
 * message; on success nothing after it runs.
 */
export function execReplace(argv: string[], env: Record<string, string | undefined>): string {
  const libc = dlopen(process.platform === "darwin" ? "libc.dylib" : "libc.so.6", {
    execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  });
  // Keep every buffer referenced until execve returns (or never does).
  const argBufs = argv.map(cString);
  const envBufs = Object.entries(env)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => cString(`${k}=${v}`));
  const table = (bufs: Buffer[]) => {
    const t = new BigUint64Array(bufs.length + 1);
    bufs.forEach((b, i) => (t[i] = BigInt(ptr(b))));
    return t;
  };
  const argTable = table(argBufs);
  const envTable = table(envBufs);
  libc.symbols.execve(ptr(argBufs[0]), ptr(argTable), ptr(envTable));
  libc.close();
  return `execve ${argv[0]} failed (is it still there and executable?)`;
}
