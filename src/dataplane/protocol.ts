/**
 * The one narrow protocol between ops's control plane (`ops serve`) and its data plane (`ops
 * data-plane`, decision 0600): JSON lines over a unix socket only ops's own user can open
 * (`run/data-plane/control.sock`, its folder 0700). A request names an operation and gets one
 * answer; the data plane also sends events (replica output and state changes, the ingress's
 * counters) to the control plane that is attached. The version is checked first thing: a control
 * plane never drives a data plane that speaks another version (it stops it and starts its own).
 */
import type { ServiceStat } from "../adapters/ingress/service-stats";
import type { ServiceEntry, ServiceRef } from "../adapters/ingress/table";
import type { IngressMetrics } from "../adapters/ingress/types";
import type { OutputStream, ReplicaSpec, ReplicaStatus } from "../adapters/runtime/types";
import type { Config } from "../core/config";

/** Set in the environment of a data plane process whose configuration arrives as JSON on its stdin. */
export const CONFIG_ON_STDIN = "OPS_PLANE_CONFIG_STDIN";

/** Bumped on any change of a message's shape. */
export const DATA_PLANE_PROTOCOL = 1;

/**
 * The settings a data plane runs by (its listeners, limits, sandbox network, spool), as one
 * string: a control plane whose settings differ does not drive it but starts one of its own
 * (the apps start again under the new settings).
 */
export function planeSettings(config: Config): string {
  const c = config;
  return JSON.stringify([
    c.dataDir,
    c.publicUrl,
    c.ingressListen,
    c.ingressTlsListen,
    c.ingressLimits,
    c.trustedProxies,
    c.sandboxNetwork,
    c.sandboxAllowCidrs,
    c.sandboxHostPorts,
    c.sandboxUidBase,
    c.replicaMemoryMb,
    c.sandboxPids,
    c.sandboxTmpMb,
    c.shutdownGraceMs,
    c.dataPlaneSpoolMb,
    c.ingressWorkers,
  ]);
}

/** A replica's output line with its place in the spool (acknowledged by `seq`). */
export interface SpooledLine {
  seq: number;
  replica: string;
  stream: OutputStream;
  line: string;
  at: number;
  labels: Record<string, string>;
}

/** What `hello` answers: who the data plane is, so the control plane can refuse a stranger. */
export interface DataPlaneHello {
  protocol: number;
  version: string;
  dataDir: string;
  pid: number;
  startedAt: number;
  /** The highest output sequence number the data plane has handed out. */
  seq: number;
  ingress: IngressPart | null;
}

/** The data plane's processes as `status` reports them. */
export interface DataPlaneStatus {
  pid: number;
  startedAt: number;
  version: string;
  replicas: number;
  /** Whether a control plane is attached now. */
  attached: boolean;
  ingress: IngressPart | null;
}

/** The ingress process as the data plane sees it. */
export interface IngressPart {
  pid: number | null;
  startedAt: number | null;
  restarts: number;
  listen: string | null;
  tlsListen: string | null;
  /** Why it is not serving, when it is not. */
  error: string | null;
  /** Every ingress process on the listeners (one per core by default), each with its pid (null while it starts again). */
  workers?: Array<{ pid: number | null; startedAt: number | null }>;
}

/** Every operation the control plane may ask for, with its arguments and its answer. */
export interface Operations {
  hello: { args: { protocol: number; dataDir: string; settings: string }; result: DataPlaneHello };
  "runtime.start": { args: { spec: ReplicaSpec }; result: ReplicaStatus };
  "runtime.stop": { args: { id: string; graceMs?: number }; result: ReplicaStatus | null };
  "runtime.list": { args: Record<string, never>; result: ReplicaStatus[] };
  "spool.ack": { args: { seq: number }; result: null };
  /** Send every spooled line after `after` as `replay` events, then answer (live lines follow the answer). */
  "spool.replay": { args: { after: number }; result: { last: number } };
  "ingress.setRoutes": { args: { entries: ServiceEntry[] }; result: null };
  "ingress.setService": { args: { entry: ServiceEntry }; result: null };
  "ingress.removeService": { args: { ref: ServiceRef }; result: null };
  "ingress.certificates": { args: { set: Array<{ name: string; cert: string; key: string }>; remove: string[] }; result: null };
  "ingress.challenges": { args: { tokens: Array<[string, string]> }; result: null };
  "ingress.drained": { args: { upstreams: Array<{ host: string; port: number }>; timeoutMs: number }; result: boolean };
  "ingress.stats": { args: Record<string, never>; result: IngressStats };
  /** Who runs, for `ops doctor` and the console: answered without attaching. */
  status: { args: Record<string, never>; result: DataPlaneStatus };
  /** Stop every replica and the ingress, then exit (a full stop of ops). */
  shutdown: { args: { graceMs: number }; result: null };
}

export type Op = keyof Operations;

/** The ingress's counters and in-flight figures, as the ingress process reports them. */
export interface IngressStats {
  metrics: IngressMetrics;
  exchanges: number;
  inflight: Array<{ host: string; port: number; requests: number; websockets: number }>;
  /** Per service, cumulative over the live ingress processes (absent from an older data plane). */
  services?: ServiceStat[];
}

export interface Events {
  line: SpooledLine;
  replay: SpooledLine;
  /** The replay asked for is over (an event, so it is seen in order with the lines around it). */
  "replay.done": { last: number };
  state: ReplicaStatus;
  "ingress.stats": IngressStats;
  "ingress.part": IngressPart;
}

export type Message =
  | { t: "req"; id: number; op: Op; args: unknown }
  | { t: "res"; id: number; ok: true; value: unknown }
  | { t: "res"; id: number; ok: false; error: string }
  | { t: "ev"; ev: keyof Events; data: unknown };

/** Longest line either side accepts (a replica spec with its environment is the largest). */
export const MAX_LINE = 4 * 1024 * 1024;

/**
 * Splits a byte stream into JSON messages. A line over `MAX_LINE` or one that is not JSON ends
 * the connection (`onBad`), as both sides are ops: garbage means something else is on the socket.
 */
export function lineReader(onMessage: (m: Message) => void, onBad: (why: string) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder();
  let buf = "";
  return (chunk) => {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.length === 0) continue;
      let m: Message;
      try {
        m = JSON.parse(line) as Message;
      } catch {
        onBad("a line that is not JSON");
        return;
      }
      onMessage(m);
    }
    if (buf.length > MAX_LINE) onBad("a line over the size limit");
  };
}

/** One message as a line. */
export function encode(m: Message): string {
  return `${JSON.stringify(m)}\n`;
}
