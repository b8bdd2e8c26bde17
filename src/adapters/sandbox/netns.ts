/**
 * One network namespace for one sandbox (a build, a job run, a replica), made by `pasta` around a
 * holder process and closed off by network.ts's routes (decision 0201).
 *
 * The holder is `cat` reading a pipe from ops, started by pasta inside the namespace: when ops
 * exits for any reason the pipe closes, the holder ends and pasta with it, so nothing is left
 * behind. ops keeps the namespace open as a file descriptor of its own (`/proc/<ops>/fd/<n>`), and
 * sandboxes enter it through that path with `nsenter`: a holder that died and whose pid was
 * reused can never send a sandbox into some other process's namespace.
 *
 * A replica's namespace outlives an exec of ops (`ops restart`, docs/decisions/0390): the holder's
 * stdin is a pipe ops made itself (runtime/fds.ts) and pasta's stderr an unlinked file, so
 * `handOver` can name every descriptor the namespace lives by; the next image (same pid, so the
 * `/proc/<ops>/fd/<n>` paths stay right) checks each is still the same and `adoptNetns` takes it on.
 */
import { closeSync, openSync, readFileSync, readSync, readdirSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pastaArgv, routeScript, type NetworkPolicy } from "./network";
import { listeningAddresses } from "./proc-net";
import { freeLoopbackPort } from "../runtime/process";
import { closeFd, fdIdentity, pipe, reapChild, startTimeOf } from "../runtime/fds";

export interface Netns {
  /** Host port forwarded into the namespace (a replica's `$PORT` inside), or null. */
  readonly port: number | null;
  /** argv prefix that runs the rest inside the namespace. */
  enterArgv(): string[];
  /** Whether something inside listens on `port` (the replica's readiness). */
  listening(port: number): boolean;
  /** Whether pasta and the holder are still there. */
  alive(): boolean;
  /**
   * Where the ingress can connect inside it (decision 0601): a path to the namespace's descriptor
   * this process holds and that descriptor's identity; null when ops is not root (a namespace
   * owned by a user namespace cannot be entered from outside it).
   */
  inside(): { path: string; ident: string } | null;
  close(): Promise<void>;
  /** Leave it open for the next image of ops (see `adoptNetns`); this handle is closed without closing. */
  handOver(): NetnsHandover;
}

/** What the next image needs to take a namespace on: the descriptors it lives by, and its processes. */
export interface NetnsHandover {
  port: number | null;
  pasta: { pid: number; start: string };
  holder: { pid: number; start: string };
  /** The holder's stdin (its end ends the namespace), the namespace itself, and its user namespace when ops is not root. */
  fds: Array<{ role: "hold" | "net" | "user"; fd: number; ident: string }>;
  enter: string[];
}

export class NetnsError extends Error {}

function childOf(parent: number, comm: string): number | null {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const fields = stat.slice(close + 2).split(" ");
      if (Number(fields[1]) === parent && stat.slice(stat.indexOf("(") + 1, close) === comm) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return null;
}

/** Whether the namespace seen through `/proc/<pid>/net/route` has its default route yet. */
function configured(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/net/route`, "utf8").split("\n").slice(1).some((l) => l.split("\t")[1] === "00000000");
  } catch {
    return false;
  }
}

const ANY = new Set(["00000000", "0100007F", "00000000000000000000000000000000", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"]);

/** Listening sockets on `port` at an address the forwarded port reaches, from /proc/<pid>/net/tcp{,6}. */
function listensOn(pid: number, port: number): boolean {
  return listeningAddresses(pid, port).some((addr) => ANY.has(addr));
}

/** Run `argv` with `input` on stdin; the error names what failed. */
async function run(argv: string[], input: string): Promise<void> {
  const p = Bun.spawn(argv, { stdin: new TextEncoder().encode(input), stdout: "ignore", stderr: "pipe" });
  const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  if (code !== 0) throw new NetnsError(`${argv.slice(0, 3).join(" ")} failed: ${err.trim() || `exit ${code}`}`);
}

export interface OpenNetnsOptions {
  pasta: string;
  nsenter: string;
  ip: string;
  policy: NetworkPolicy;
  /** Forward a host port on 127.0.0.1 into the namespace (replicas). */
  forward: boolean;
}

const READY_MS = 10_000;

/** A namespace's handle over its descriptors and pasta (`waitExit` resolves true once pasta ended). */
function handleOf(port: number | null, holder: { pid: number; start: string }, pasta: { pid: number; start: string }, fds: NetnsHandover["fds"], enter: string[], waitExit: (ms: number) => Promise<boolean>, kill: () => void): Netns {
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    // The holder's stdin closes last of ours: cat ends, pasta with it.
    for (const f of [...fds].sort((a, b) => Number(a.role === "hold") - Number(b.role === "hold"))) closeFd(f.fd);
    if (!(await waitExit(1000))) {
      kill();
      await waitExit(5000);
    }
  };
  return {
    port,
    enterArgv: () => {
      if (closed) throw new NetnsError("the sandbox's network namespace is closed");
      return [...enter];
    },
    listening: (p) => listensOn(holder.pid, p),
    inside: () => {
      const net = fds.find((f) => f.role === "net");
      if (closed || !net || fds.some((f) => f.role === "user")) return null;
      // The namespace file's device and inode: what names the namespace, whoever opens it.
      return { path: `/proc/${process.pid}/fd/${net.fd}`, ident: net.ident.split(":").slice(0, 2).join(":") };
    },
    alive: () => !closed && startTimeOf(pasta.pid) === pasta.start && startTimeOf(holder.pid) === holder.start,
    close,
    handOver() {
      closed = true;
      return { port, pasta, holder, fds: fds.map((f) => ({ ...f })), enter: [...enter] };
    },
  };
}

/** Make a namespace; throws NetnsError when pasta cannot. */
export async function openNetns(opts: OpenNetnsOptions): Promise<Netns> {
  const port = opts.forward ? freeLoopbackPort() : null;
  // pasta's stderr: an unlinked file, read only when set-up fails (a pipe would break at an exec).
  const errPath = path.join(tmpdir(), `ops-pasta-${process.pid}-${Math.random().toString(36).slice(2)}.err`);
  const errFd = openSync(errPath, "w+", 0o600);
  unlinkSync(errPath);
  const hold = pipe();
  let proc: ReturnType<typeof Bun.spawn>;
  try {
    proc = Bun.spawn(pastaArgv(opts.pasta, opts.policy, port, ["/bin/cat"]), { stdin: hold.read, stdout: "ignore", stderr: errFd });
  } catch (e) {
    for (const fd of [hold.read, hold.write]) closeFd(fd);
    closeSync(errFd);
    throw e;
  }
  closeFd(hold.read);
  proc.unref();
  const root = process.getuid?.() === 0;
  const fds: NetnsHandover["fds"] = [{ role: "hold", fd: hold.write, ident: fdIdentity(hold.write) ?? "" }];
  const pasta = { pid: proc.pid, start: startTimeOf(proc.pid) ?? "" };
  const waitExit = (ms: number) => Promise.race([proc.exited.then(() => true), Bun.sleep(ms).then(() => false)]);
  const kill = () => proc.kill("SIGKILL");
  const failed = async (): Promise<never> => {
    const buf = Buffer.alloc(65536);
    const n = readSync(errFd, buf, 0, buf.length, 0);
    const err = buf.subarray(0, n).toString().split("\n").filter((l) => l && !/syslog|uid_map|user mappings|ping_group_range|ICMP/.test(l));
    throw new NetnsError(`pasta could not make the sandbox's network: ${err.join("; ") || `exit ${proc.exitCode}`}`);
  };
  let made: Netns | null = null;
  try {
    const deadline = Date.now() + READY_MS;
    let holder: number | null = null;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) await failed();
      holder ??= childOf(proc.pid, "cat");
      if (holder !== null && configured(holder)) break;
      await Bun.sleep(holder === null ? 2 : 5);
    }
    if (holder === null || !configured(holder)) throw new NetnsError("pasta did not set up the sandbox's network within 10 s");
    const net = openSync(`/proc/${holder}/ns/net`, "r");
    fds.push({ role: "net", fd: net, ident: fdIdentity(net) ?? "" });
    const user = root ? null : openSync(`/proc/${holder}/ns/user`, "r");
    if (user !== null) fds.push({ role: "user", fd: user, ident: fdIdentity(user) ?? "" });
    const self = `/proc/${process.pid}/fd`;
    const enter = user === null ? [opts.nsenter, `--net=${self}/${net}`, "--"] : [opts.nsenter, `--user=${self}/${user}`, `--net=${self}/${net}`, "--preserve-credentials", "--"];
    made = handleOf(port, { pid: holder, start: startTimeOf(holder) ?? "" }, pasta, fds, enter, waitExit, kill);
    await run([...enter, opts.ip, "-batch", "-"], routeScript(opts.policy));
    return made;
  } catch (e) {
    if (made) await made.close();
    else {
      for (const f of fds) closeFd(f.fd);
      if (!(await waitExit(1000))) {
        kill();
        await proc.exited;
      }
    }
    throw e;
  } finally {
    closeSync(errFd);
  }
}

/** Why a handed-over namespace cannot be taken on, or null when it can. */
export function netnsNotAdoptable(h: NetnsHandover): string | null {
  for (const [what, p] of [["pasta", h.pasta], ["its holder", h.holder]] as const) {
    const now = startTimeOf(p.pid);
    if (now === null) return `${what} (pid ${p.pid}) is gone`;
    if (now !== p.start) return `${what}'s pid ${p.pid} is another process now`;
  }
  for (const f of h.fds) if (f.ident === "" || fdIdentity(f.fd) !== f.ident) return `its namespace's descriptor ${f.fd} (${f.role}) did not survive the restart`;
  return null;
}

/** Take on a namespace an earlier image of this process handed over (check `netnsNotAdoptable` first). */
export function adoptNetns(h: NetnsHandover): Netns {
  let reaped = false;
  const waitExit = async (ms: number) => {
    const deadline = Date.now() + ms;
    for (;;) {
      if (!reaped && reapChild(h.pasta.pid) !== null) reaped = true;
      if (reaped) return true;
      if (Date.now() >= deadline) return false;
      await Bun.sleep(20);
    }
  };
  const kill = () => {
    if (startTimeOf(h.pasta.pid) === h.pasta.start) process.kill(h.pasta.pid, "SIGKILL");
  };
  return handleOf(h.port, h.holder, h.pasta, h.fds, h.enter, waitExit, kill);
}
