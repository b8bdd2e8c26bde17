/**
 * `ops data-plane`: the process that keeps apps up while the control plane is down (decision
 * 0600). It supervises every replica (the process runtime: start, stop, crash restarts with
 * backoff, limits, each sandbox's namespaces and output pipes), writes their output to the spool
 * before anything else sees it, and keeps the ingress process running with the last route table,
 * certificates and challenge answers the control plane gave. It is started by `ops serve` in a
 * session of its own, so a crash, `kill -9` or restart of the control plane does not reach it;
 * the next `ops serve` attaches to it again over `run/data-plane/control.sock`.
 *
 * It knows no database: whatever it needs about a replica arrives in the replica's spec and
 * labels (its project's sandbox uid included). It ends on `shutdown` (a full stop of ops, which
 * stops every replica) or SIGTERM/SIGINT, and on its own once it has had no replica and no
 * control plane for `IDLE_EXIT_MS` (nothing to keep up; the next `ops serve` starts another).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import path from "node:path";
import type { Socket } from "bun";
import type { Config } from "../core/config";
import type { Logger } from "../core/log";
import { createProcessRuntime } from "../adapters/runtime/process-runtime";
import { startTimeOf } from "../adapters/runtime/fds";
import { sandboxNetworkOf } from "../adapters/sandbox";
import { defaultIdentity } from "../adapters/sandbox/users";
import type { ReplicaStatus } from "../adapters/runtime/types";
import { planeArgv } from "../reexec";
import { VERSION } from "../version";
import { Channel } from "./channel";
import { openSpool } from "./spool";
import { ingressWorkers, startIngressProcess, type IngressHandle } from "./ingress-process";
import { DATA_PLANE_PROTOCOL, planeSettings, type DataPlaneHello, type DataPlaneStatus, type IngressPart, type Op, type Operations } from "./protocol";

/** Where a data dir's data plane keeps its socket, pid file and spool (0700). */
export function dataPlaneDir(dataDir: string): string {
  return path.join(dataDir, "run", "data-plane");
}

export const SOCKET = "control.sock";
export const PID_FILE = "pid";
const IDLE_EXIT_MS = 5 * 60_000;
/** Lines replayed per event burst when a control plane attaches. */
const REPLAY_BATCH = 2000;

/** The data plane a pid file names, when that process is still the one that wrote it. */
export function runningDataPlane(dataDir: string): { pid: number; start: string; protocol: number } | null {
  const file = path.join(dataPlaneDir(dataDir), PID_FILE);
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch {
    return null;
  }
  const [pid, start, protocol] = text.split(" ");
  const n = Number(pid);
  if (!Number.isInteger(n) || n <= 0) return null;
  return startTimeOf(n) === start ? { pid: n, start, protocol: Number(protocol) } : null;
}

/** The sandbox identity a replica's labels carry (set by the control plane, which owns the table of them). */
function identityOfLabels(labels: Record<string, string>) {
  const uid = Number(labels.sandbox_uid);
  const gid = Number(labels.sandbox_gid);
  return Number.isInteger(uid) && Number.isInteger(gid) && uid > 0 && gid > 0 ? { uid, gid } : defaultIdentity();
}

export async function runDataPlane(config: Config, log: Logger): Promise<number> {
  const dir = dataPlaneDir(config.dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const other = runningDataPlane(config.dataDir);
  if (other && other.pid !== process.pid) {
    log.error("a data plane already runs for this data dir", { pid: other.pid, data_dir: config.dataDir });
    return 1;
  }
  const started = Date.now();
  const myStart = startTimeOf(process.pid) ?? "";
  const socketPath = path.join(dir, SOCKET);
  rmSync(socketPath, { force: true });

  // The sandbox's network set-up wants a Core's config, scratch space and close hooks, no more.
  const plane = { config, locals: new Map<string, unknown>(), onClose: [] as Array<() => void | Promise<void>> };
  const network = sandboxNetworkOf(plane);
  const spool = openSpool(path.join(dir, "spool"), { maxBytes: config.dataPlaneSpoolMb * 1024 * 1024 });
  let attached: Channel | null = null;
  let lastAttached = Date.now();

  const runtime = createProcessRuntime({
    graceMs: config.shutdownGraceMs,
    limits: { memoryMb: config.replicaMemoryMb, pids: config.sandboxPids, tmpMb: config.sandboxTmpMb },
    identityOf: identityOfLabels,
    network,
    onLine(id, stream, line) {
      const labels = runtime.status(id)?.labels ?? {};
      const spooled = spool.append({ replica: id, stream, line, at: Date.now(), labels });
      attached?.event("line", spooled);
    },
    onState(status: ReplicaStatus) {
      attached?.event("state", status);
    },
  });

  let ingress: IngressHandle | null = null;
  let ingressPart: IngressPart | null = null;
  if (config.ingressListen || config.ingressTlsListen) {
    ingress = startIngressProcess(
      planeArgv("ingress"),
      config,
      log.child({ component: "data-plane" }),
      (p) => {
        ingressPart = p;
        attached?.event("ingress.part", p);
      },
      (s) => attached?.event("ingress.stats", s),
      ingressWorkers(config),
    );
  }

  let finish: (code: number) => void = () => {};
  const finished = new Promise<number>((resolve) => (finish = resolve));
  let stopping: Promise<void> | null = null;
  const stopAll = (graceMs: number, why: string): Promise<void> => {
    stopping ??= (async () => {
      log.info("the data plane is stopping", { reason: why, replicas: runtime.list().length });
      await Promise.all([runtime.stopAll(graceMs), ingress?.stop(graceMs)]);
      for (const f of plane.onClose) await f();
      spool.close();
      listener.stop(true);
      rmSync(socketPath, { force: true });
      if (runningDataPlane(config.dataDir)?.pid === process.pid) rmSync(path.join(dir, PID_FILE), { force: true });
      finish(0);
    })();
    return stopping;
  };

  const handle = async (channel: Channel, op: Op, args: unknown): Promise<unknown> => {
    if (op !== "hello" && op !== "status" && attached !== channel) throw new Error("say hello first");
    switch (op) {
      case "status":
        return { pid: process.pid, startedAt: started, version: VERSION, replicas: runtime.list().length, attached: attached !== null, ingress: ingressPart } satisfies DataPlaneStatus;
      case "hello": {
        const a = args as Operations["hello"]["args"];
        if (a.protocol !== DATA_PLANE_PROTOCOL) throw new Error(`this data plane speaks protocol ${DATA_PLANE_PROTOCOL}, not ${a.protocol}`);
        if (path.resolve(a.dataDir) !== path.resolve(config.dataDir)) throw new Error(`this data plane serves ${config.dataDir}, not ${a.dataDir}`);
        if (a.settings !== planeSettings(config)) throw new Error("this data plane runs by other settings (listeners, limits or the sandbox's network changed)");
        if (attached && attached !== channel) attached.close();
        attached = channel;
        const hello: DataPlaneHello = { protocol: DATA_PLANE_PROTOCOL, version: VERSION, dataDir: config.dataDir, pid: process.pid, startedAt: started, seq: spool.seq, ingress: ingressPart };
        const dropped = spool.takeDropped();
        if (dropped > 0) log.warn("replica output was dropped while no control plane was attached (the spool was full)", { lines: dropped, spool_mb: config.dataPlaneSpoolMb });
        return hello;
      }
      case "spool.replay": {
        // In one turn, so no live line comes between these and the answer.
        let last = (args as Operations["spool.replay"]["args"]).after;
        for (;;) {
          const batch = spool.after(last, REPLAY_BATCH);
          for (const l of batch) channel.event("replay", l);
          if (batch.length === 0) break;
          last = batch[batch.length - 1].seq;
          if (batch.length < REPLAY_BATCH) break;
        }
        channel.event("replay.done", { last });
        return { last };
      }
      case "runtime.start":
        return runtime.start((args as Operations["runtime.start"]["args"]).spec);
      case "runtime.stop": {
        const a = args as Operations["runtime.stop"]["args"];
        return runtime.status(a.id) ? runtime.stop(a.id, a.graceMs) : null;
      }
      case "runtime.list":
        return runtime.list();
      case "spool.ack":
        spool.ack((args as Operations["spool.ack"]["args"]).seq);
        return null;
      case "ingress.setRoutes":
        ingress?.setRoutes((args as Operations["ingress.setRoutes"]["args"]).entries);
        return null;
      case "ingress.setService":
        ingress?.setService((args as Operations["ingress.setService"]["args"]).entry);
        return null;
      case "ingress.removeService":
        ingress?.removeService((args as Operations["ingress.removeService"]["args"]).ref);
        return null;
      case "ingress.certificates": {
        const a = args as Operations["ingress.certificates"]["args"];
        ingress?.certificates(a.set, a.remove);
        return null;
      }
      case "ingress.challenges":
        ingress?.challenges((args as Operations["ingress.challenges"]["args"]).tokens);
        return null;
      case "ingress.drained": {
        const a = args as Operations["ingress.drained"]["args"];
        return ingress ? ingress.drained(a.upstreams, a.timeoutMs) : true;
      }
      case "ingress.stats":
        return ingress?.stats ?? null;
      case "shutdown":
        void stopAll((args as Operations["shutdown"]["args"]).graceMs, "the control plane stopped ops");
        return null;
    }
    throw new Error(`unknown operation ${String(op)}`);
  };

  const channels = new WeakMap<Socket<unknown>, Channel>();
  const listener = Bun.listen<unknown>({
    unix: socketPath,
    socket: {
      open(s) {
        const c: Channel = new Channel(s, { onRequest: (op: Op, args: unknown): Promise<unknown> => handle(c, op, args), onBad: (why) => log.warn("closed a control connection", { why }) });
        channels.set(s, c);
      },
      data(s, d) {
        channels.get(s)?.read(d);
      },
      drain(s) {
        channels.get(s)?.drain();
      },
      close(s) {
        const c = channels.get(s);
        c?.close();
        if (c && attached === c) {
          attached = null;
          lastAttached = Date.now();
          if (!stopping) log.info("the control plane went away; replicas and the ingress keep serving");
        }
      },
      error(s, e) {
        log.warn("control connection error", { err: e });
      },
    },
  });
  chmodSync(socketPath, 0o600);
  writeFileSync(path.join(dir, PID_FILE), `${process.pid} ${myStart} ${DATA_PLANE_PROTOCOL} ${VERSION}\n`, { mode: 0o600 });

  const idle = setInterval(() => {
    if (!attached && runtime.list().length === 0 && Date.now() - lastAttached > IDLE_EXIT_MS) void stopAll(config.shutdownGraceMs, "idle: no replica and no control plane");
  }, 10_000);
  process.once("SIGTERM", () => void stopAll(config.shutdownGraceMs, "SIGTERM"));
  process.once("SIGINT", () => void stopAll(config.shutdownGraceMs, "SIGINT"));
  // A hang-up from a terminal it was started from is no reason to stop serving.
  process.on("SIGHUP", () => {});
  log.info("the data plane is serving", { pid: process.pid, socket: socketPath, ingress: Boolean(ingress), protocol: DATA_PLANE_PROTOCOL });
  // What starting left behind, collected once: an idle data plane stays small.
  setTimeout(() => Bun.gc(true), 2000).unref();
  const code = await finished;
  clearInterval(idle);
  return existsSync(socketPath) ? 1 : code;
}
