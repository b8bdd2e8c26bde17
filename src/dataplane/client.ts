/**
 * The control plane's side of the data plane (decision 0600): find the data plane this data dir
 * already has, or start one in a session of its own, attach to it, and drive it through the same
 * runtime and ingress interfaces the rest of ops uses in one process (`RemoteRuntime`,
 * `RemoteIngress`). Only `ops serve` attaches; test apps and `OPS_DATA_PLANE=inline` keep both in
 * the one process.
 *
 * Attaching checks who answers: the pid file must name a live process with the start time it
 * wrote, and that process must speak this protocol for this data dir. Anything else is stopped
 * (SIGTERM: it stops its replicas, whose services the reconcile starts again) and a new data plane
 * is started; a stranger is never driven.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Config } from "../core/config";
import type { Logger } from "../core/log";
import { startTimeOf } from "../adapters/runtime/fds";
import { planeArgv } from "../reexec";
import { Channel } from "./channel";
import { CONFIG_ON_STDIN, DATA_PLANE_PROTOCOL, planeSettings, type DataPlaneHello, type Events, type IngressPart, type IngressStats, type SpooledLine } from "./protocol";
import { dataPlaneDir, runningDataPlane, SOCKET } from "./supervisor";

const ACKED_FILE = "acked";
const START_MS = 20_000;

export interface DataPlaneLink {
  readonly hello: DataPlaneHello;
  readonly channel: Channel;
  /** Whether this attach started the data plane (false: an existing one was attached again). */
  readonly started: boolean;
  /** What the control plane had stored when it attached: the replay starts after it. */
  readonly acked: number;
  /** Where events go; set by the runtime and ingress adapters. */
  onLine: ((l: SpooledLine) => void) | null;
  onReplay: ((l: SpooledLine) => void) | null;
  onReplayDone: ((last: number) => void) | null;
  onState: ((s: Events["state"]) => void) | null;
  onStats: ((s: IngressStats) => void) | null;
  onPart: ((p: IngressPart) => void) | null;
  /** Called once if the data plane goes away while attached (it crashed or was killed). */
  onLost: (() => void) | null;
  /** Everything up to `seq` is in the log store: the data plane may forget it. */
  ack(seq: number): void;
  /** A full stop of ops: the data plane stops every replica and the ingress, then exits. */
  shutdown(graceMs: number): Promise<void>;
  /** Let go without stopping anything (a restart or crash of the control plane does this implicitly). */
  detach(): void;
}

function readAcked(dir: string): number {
  try {
    const n = Number(readFileSync(path.join(dir, ACKED_FILE), "utf8").trim());
    return Number.isInteger(n) && n >= 0 ? n : 0;
  } catch {
    return 0;
  }
}

async function connect(config: Config, log: Logger): Promise<{ channel: Channel; hello: DataPlaneHello; link: Partial<DataPlaneLink> } | string> {
  const dir = dataPlaneDir(config.dataDir);
  const link: Partial<DataPlaneLink> = {};
  let channel: Channel | null = null;
  let closedEarly = false;
  try {
    await Bun.connect<unknown>({
      unix: path.join(dir, SOCKET),
      socket: {
        open(s) {
          channel = new Channel(s, {
            onEvent(ev, data) {
              if (ev === "line") link.onLine?.(data as SpooledLine);
              else if (ev === "replay") link.onReplay?.(data as SpooledLine);
              else if (ev === "replay.done") link.onReplayDone?.((data as Events["replay.done"]).last);
              else if (ev === "state") link.onState?.(data as Events["state"]);
              else if (ev === "ingress.stats") link.onStats?.(data as IngressStats);
              else if (ev === "ingress.part") link.onPart?.(data as IngressPart);
            },
            onBad: (why) => log.warn("closed the data plane's connection", { why }),
          });
        },
        data(_s, d) {
          channel?.read(d);
        },
        drain() {
          channel?.drain();
        },
        close() {
          closedEarly = true;
          const c = channel as Channel | null;
          c?.close();
          (link as { closed?: () => void }).closed?.();
        },
        error(_s, e) {
          log.warn("data plane connection error", { err: e });
        },
      },
    });
  } catch (e) {
    return `cannot connect to its socket: ${(e as Error).message}`;
  }
  if (!channel || closedEarly) return "the socket closed at once";
  const ch = channel as Channel;
  try {
    const hello = await ch.request("hello", { protocol: DATA_PLANE_PROTOCOL, dataDir: config.dataDir, settings: planeSettings(config) });
    return { channel: ch, hello, link };
  } catch (e) {
    ch.close();
    return (e as Error).message;
  }
}

/** SIGTERM `pid` (its own handler stops its replicas), SIGKILL if it has not ended after `ms`. */
async function stopProcess(pid: number, start: string, ms: number): Promise<void> {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (startTimeOf(pid) !== start) return;
    await Bun.sleep(50);
  }
  if (startTimeOf(pid) === start) process.kill(pid, "SIGKILL");
}

/** Start `ops data-plane` in a session of its own (it outlives this process), with ops's own output. */
function startDataPlane(config: Config): number {
  const argv = planeArgv("data-plane");
  // Its configuration is this process's, on stdin (the environment may not say it all: flags, tests).
  const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ["pipe", "inherit", "inherit"], env: { ...process.env, [CONFIG_ON_STDIN]: "1" } });
  child.stdin!.end(JSON.stringify(config));
  child.unref();
  if (!child.pid) throw new Error(`could not start ${argv.join(" ")}`);
  return child.pid;
}

/**
 * Attach to this data dir's data plane, starting one when there is none (or when the one there
 * cannot be driven: another protocol, or it does not answer).
 */
export async function attachDataPlane(config: Config, log: Logger): Promise<DataPlaneLink> {
  const dir = dataPlaneDir(config.dataDir);
  let started = false;
  const existing = runningDataPlane(config.dataDir);
  let attached = existing && existing.protocol === DATA_PLANE_PROTOCOL ? await connect(config, log) : null;
  if (existing && (attached === null || typeof attached === "string")) {
    log.warn("stopping a data plane this control plane cannot drive; its services start again", { pid: existing.pid, reason: attached ?? `it speaks protocol ${existing.protocol}, this ops ${DATA_PLANE_PROTOCOL}` });
    await stopProcess(existing.pid, existing.start, config.shutdownGraceMs + 5000);
    attached = null;
  }
  if (attached === null || typeof attached === "string") {
    const pid = startDataPlane(config);
    started = true;
    const until = Date.now() + START_MS;
    let last = "it did not answer";
    for (;;) {
      // Every 10 ms, not 50: the control plane waits here at every start (decision 0640).
      await Bun.sleep(10);
      const running = runningDataPlane(config.dataDir);
      if (running?.pid === pid) {
        const got = await connect(config, log);
        if (typeof got !== "string") {
          attached = got;
          break;
        }
        last = got;
      }
      if (startTimeOf(pid) === null) throw new Error("the data plane exited at start (see its output above)");
      if (Date.now() > until) throw new Error(`the data plane did not answer within ${START_MS / 1000} s: ${last}`);
    }
  }
  const { channel, hello, link } = attached;
  let detached = false;
  let lastAckWritten = readAcked(dir);
  const full: DataPlaneLink = Object.assign(link, {
    hello,
    channel,
    started,
    acked: readAcked(dir),
    onLine: null,
    onReplay: null,
    onReplayDone: null,
    onState: null,
    onStats: null,
    onPart: null,
    onLost: null,
    ack(seq: number) {
      if (seq <= lastAckWritten) return;
      lastAckWritten = seq;
      // The file is what the next control plane replays after; the data plane only frees its spool.
      writeFileSync(path.join(dir, ACKED_FILE), `${seq}\n`, { mode: 0o600 });
      if (!channel.isClosed) void channel.request("spool.ack", { seq }).catch(() => {});
    },
    async shutdown(graceMs: number) {
      detached = true;
      const pid = hello.pid;
      const start = startTimeOf(pid);
      await channel.request("shutdown", { graceMs }).catch(() => {});
      // It answers before it stops: wait for it to be gone.
      const until = Date.now() + graceMs + 10_000;
      while (start !== null && startTimeOf(pid) === start && Date.now() < until) await Bun.sleep(50);
      channel.close();
    },
    detach() {
      detached = true;
      channel.close();
    },
  } satisfies Omit<DataPlaneLink, "onLine" | "onReplay" | "onReplayDone" | "onState" | "onStats" | "onPart" | "onLost"> & Partial<DataPlaneLink>) as DataPlaneLink;
  (link as { closed?: () => void }).closed = () => {
    if (detached) return;
    if (full.onLost) full.onLost();
    else log.error("the data plane went away; apps are down until ops starts it again");
  };
  return full;
}
