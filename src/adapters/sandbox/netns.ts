/**
 * One network namespace for one sandbox (a build, a job run, a replica), made by `pasta` around a
 * holder process and closed off by network.ts's routes (decision 0201).
 *
 * The holder is `cat` reading a pipe from ops, started by pasta inside the namespace: when ops
 * exits for any reason the pipe closes, the holder ends and pasta with it, so nothing is left
 * behind. ops keeps the namespace open as a file descriptor of its own (`/proc/<ops>/fd/<n>`), and
 * sandboxes enter it through that path with `nsenter`: a holder that died and whose pid was
 * reused can never send a sandbox into some other process's namespace.
 */
import { closeSync, openSync, readFileSync, readdirSync } from "node:fs";
import type { Subprocess } from "bun";
import { pastaArgv, routeScript, type NetworkPolicy } from "./network";
import { freeLoopbackPort } from "../runtime/process";

export interface Netns {
  /** Host port forwarded into the namespace (a replica's `$PORT` inside), or null. */
  readonly port: number | null;
  /** argv prefix that runs the rest inside the namespace. */
  enterArgv(): string[];
  /** Whether something inside listens on `port` (the replica's readiness). */
  listening(port: number): boolean;
  /** Whether pasta and the holder are still there. */
  alive(): boolean;
  close(): Promise<void>;
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

const LISTEN = "0A";
const ANY = new Set(["00000000", "0100007F", "00000000000000000000000000000000", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"]);

/** Listening sockets on `port` at an address the forwarded port reaches, from /proc/<pid>/net/tcp{,6}. */
function listensOn(pid: number, port: number): boolean {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  for (const file of ["tcp", "tcp6"]) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4 || f[3] !== LISTEN) continue;
      const [addr, p] = f[1]!.split(":");
      if (p === hex && ANY.has(addr!)) return true;
    }
  }
  return false;
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

/** Make a namespace; throws NetnsError when pasta cannot. */
export async function openNetns(opts: OpenNetnsOptions): Promise<Netns> {
  const port = opts.forward ? freeLoopbackPort() : null;
  const proc: Subprocess<"pipe", "ignore", "pipe"> = Bun.spawn(pastaArgv(opts.pasta, opts.policy, port, ["/bin/cat"]), {
    stdin: "pipe",
    stdout: "ignore",
    stderr: "pipe",
  });
  proc.unref();
  const root = process.getuid?.() === 0;
  const fds: number[] = [];
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const fd of fds) closeSync(fd);
    try {
      proc.stdin.end();
    } catch {
      // already closed
    }
    const ended = await Promise.race([proc.exited.then(() => true), Bun.sleep(1000).then(() => false)]);
    if (!ended) {
      proc.kill("SIGKILL");
      await proc.exited;
    }
  };
  try {
    const deadline = Date.now() + READY_MS;
    let holder: number | null = null;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) {
        const err = (await new Response(proc.stderr).text()).split("\n").filter((l) => l && !/syslog|uid_map|user mappings|ping_group_range|ICMP/.test(l));
        throw new NetnsError(`pasta could not make the sandbox's network: ${err.join("; ") || `exit ${proc.exitCode}`}`);
      }
      holder ??= childOf(proc.pid, "cat");
      if (holder !== null && configured(holder)) break;
      await Bun.sleep(holder === null ? 2 : 5);
    }
    if (holder === null || !configured(holder)) throw new NetnsError("pasta did not set up the sandbox's network within 10 s");
    const net = openSync(`/proc/${holder}/ns/net`, "r");
    fds.push(net);
    const user = root ? null : openSync(`/proc/${holder}/ns/user`, "r");
    if (user !== null) fds.push(user);
    const self = `/proc/${process.pid}/fd`;
    const enter = user === null ? [opts.nsenter, `--net=${self}/${net}`, "--"] : [opts.nsenter, `--user=${self}/${user}`, `--net=${self}/${net}`, "--preserve-credentials", "--"];
    await run([...enter, opts.ip, "-batch", "-"], routeScript(opts.policy));
    const held = holder;
    return {
      port,
      enterArgv: () => {
        if (closed) throw new NetnsError("the sandbox's network namespace is closed");
        return [...enter];
      },
      listening: (p) => listensOn(held, p),
      alive: () => !closed && proc.exitCode === null,
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
