/**
 * Which processes serve a data dir, for `ops doctor` (offline: it asks the data plane's socket,
 * without attaching) and the console's estate status (through the control plane's link):
 * the control plane, the data plane's supervisor and its ingress, each with its pid and uptime.
 */
import path from "node:path";
import type { Core } from "../core/core";
import { RUNTIME_LOCAL } from "../adapters/runtime";
import { INGRESS_LOCAL } from "../adapters/ingress";
import { Channel } from "./channel";
import type { DataPlaneLink } from "./client";
import type { DataPlaneStatus, IngressPart } from "./protocol";
import { dataPlaneDir, runningDataPlane, SOCKET } from "./supervisor";

/** Where `ops serve` keeps its link to the data plane in `core.locals`. */
export const LINK_LOCAL = "data-plane.link";

export interface ProcessPart {
  part: "control plane" | "data plane" | "ingress";
  pid: number | null;
  startedAt: number | null;
  detail: string;
}

function ingressPart(p: IngressPart | null): ProcessPart {
  if (!p) return { part: "ingress", pid: null, startedAt: null, detail: "off (OPS_INGRESS_LISTEN and OPS_INGRESS_TLS_LISTEN are off)" };
  const where = [p.listen, p.tlsListen].filter(Boolean).join(", ");
  const detail = p.pid === null ? "starting again" : p.error ? `not listening: ${p.error}` : `serving ${where || "nothing yet"}`;
  const workers = p.workers && p.workers.length > 1 ? `; ${p.workers.length} processes on the listeners (pids ${p.workers.map((w) => w.pid ?? "starting").join(", ")})` : "";
  return { part: "ingress", pid: p.pid, startedAt: p.startedAt, detail: `${detail}${workers}${p.restarts > 0 ? `; started again ${p.restarts} time${p.restarts === 1 ? "" : "s"}` : ""}` };
}

/** The processes of a running `ops serve` (its own Core): one process when the data plane is inline. */
export function servingParts(core: Core): { mode: "process" | "inline"; parts: ProcessPart[] } {
  const link = core.locals.get(LINK_LOCAL) as DataPlaneLink | undefined;
  const control: ProcessPart = { part: "control plane", pid: process.pid, startedAt: Math.round(performance.timeOrigin), detail: "API, console, scheduler, builds, registries, telemetry" };
  if (!link) return { mode: "inline", parts: [{ ...control, detail: `${control.detail}; replicas and the ingress in the same process (OPS_DATA_PLANE=inline)` }] };
  const replicas = (core.locals.get(RUNTIME_LOCAL) as { list(): unknown[] } | undefined)?.list().length ?? 0;
  const ingress = (core.locals.get(INGRESS_LOCAL) as { part?: IngressPart | null } | undefined)?.part ?? link.hello.ingress;
  return {
    mode: "process",
    parts: [
      control,
      {
        part: "data plane",
        pid: link.hello.pid,
        startedAt: link.hello.startedAt,
        detail: core.config.runtime === "process" ? `${replicas} replica${replicas === 1 ? "" : "s"}, their output spool` : `the ingress only: replicas run on the engine (OPS_RUNTIME=${core.config.runtime})`,
      },
      ingressPart(ingress ?? null),
    ],
  };
}

/** What the data plane of `dataDir` says of itself, or why it cannot (not running, not answering). */
export async function askDataPlane(dataDir: string, timeoutMs = 2000): Promise<{ status: DataPlaneStatus; parts: ProcessPart[] } | string> {
  const running = runningDataPlane(dataDir);
  if (!running) return "not running (ops serve starts it)";
  let channel: Channel | null = null;
  try {
    await Bun.connect<unknown>({
      unix: path.join(dataPlaneDir(dataDir), SOCKET),
      socket: {
        open(s) {
          channel = new Channel(s, {});
        },
        data(_s, d) {
          channel?.read(d);
        },
        drain() {
          channel?.drain();
        },
        close() {
          (channel as Channel | null)?.close();
        },
      },
    });
  } catch (e) {
    return `pid ${running.pid} does not answer on its socket: ${(e as Error).message}`;
  }
  const ch = channel as Channel | null;
  if (!ch) return `pid ${running.pid} closed its socket`;
  try {
    const status = await Promise.race([ch.request("status", {}), Bun.sleep(timeoutMs).then(() => null)]);
    if (!status) return `pid ${running.pid} did not answer within ${timeoutMs} ms`;
    const supervisor: ProcessPart = { part: "data plane", pid: status.pid, startedAt: status.startedAt, detail: `${status.replicas} replica${status.replicas === 1 ? "" : "s"}; ${status.attached ? "ops serve is attached" : "no ops serve attached"}; version ${status.version}` };
    return { status, parts: [supervisor, ingressPart(status.ingress)] };
  } catch (e) {
    return `pid ${running.pid}: ${(e as Error).message}`;
  } finally {
    ch.close();
  }
}

/** "3 h 12 min" since `startedAt`. */
export function uptime(startedAt: number | null, now = Date.now()): string {
  if (startedAt === null) return "-";
  const s = Math.max(0, Math.round((now - startedAt) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}
