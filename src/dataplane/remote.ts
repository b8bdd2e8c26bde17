/**
 * The runtime and the ingress as the control plane sees them when the data plane is a process of
 * its own (decision 0600): the same interfaces as in one process (runtime/types.ts,
 * ingress/ingress.ts), answered over the data plane's socket. Reads the domains make synchronously
 * (a replica's status, the route table, the ingress's counters) come from mirrors kept current by
 * the data plane's events; changes go over the socket. One-off runs (release steps) stay in the
 * control plane: they are part of a rollout, which ends with it anyway.
 */
import { CertStore, type PemPair } from "../adapters/ingress/tls";
import { compileTable, serviceKey, type RouteConflict, type ServiceEntry, type ServiceRef } from "../adapters/ingress/table";
import type { Ingress, IngressAddress } from "../adapters/ingress/ingress";
import type { IngressMetrics } from "../adapters/ingress/types";
import type { Logger } from "../core/log";
import type { OneOffSpec, ReplicaSpec, ReplicaStatus, Runtime, RuntimeHooks } from "../adapters/runtime/types";
import type { AttachableRuntime } from "../adapters/runtime";
import type { DataPlaneLink } from "./client";
import type { IngressPart, IngressStats, SpooledLine } from "./protocol";

export interface RemoteRuntimeOptions {
  log: Logger;
}

const ACK_MS = 500;

/**
 * The data plane's replicas behind the runtime interface; `replicas` is what it runs at attach.
 * The Core attaches the deployments domain's hooks (runtimeOf), with an in-process runtime for
 * one-off runs and the project's sandbox identity, which goes to the data plane in the labels.
 */
export function remoteRuntime(link: DataPlaneLink, replicas: readonly ReplicaStatus[], opts: RemoteRuntimeOptions): AttachableRuntime & { readonly delivered: number } {
  const mirror = new Map<string, ReplicaStatus>(replicas.map((r) => [r.id, r]));
  let hooks: RuntimeHooks = {};
  let oneOffs: (() => Runtime) | null = null;
  let identityOf: ((labels: Record<string, string>) => { uid: number; gid: number }) | null = null;
  let delivered = 0;
  let ackTimer: ReturnType<typeof setTimeout> | null = null;
  const ack = () => {
    ackTimer = null;
    const upTo = delivered;
    void (hooks.stored?.() ?? Promise.resolve()).then(() => link.ack(upTo));
  };
  // Lines reach the hooks in order, once: until the replay of what the spool kept has been
  // answered, live lines are ignored (the replay holds them too); after it, only newer ones pass.
  let replayed = false;
  const deliver = (l: SpooledLine) => {
    if (l.seq <= delivered) return;
    hooks.onLine?.(l.replica, l.stream, l.line, { labels: l.labels, at: l.at });
    delivered = l.seq;
    ackTimer ??= setTimeout(ack, ACK_MS);
  };
  delivered = link.acked;
  link.onLine = (l) => {
    if (replayed) deliver(l);
  };
  link.onReplay = deliver;
  // Seen in order with the lines around it (a request's answer is seen a microtask later).
  link.onReplayDone = (last) => {
    replayed = true;
    if (last > link.acked) opts.log.info("replica output kept while ops was away reached the log store", { lines: last - link.acked });
  };
  link.onState = (s) => {
    if (s.state === "stopped") mirror.delete(s.id);
    else mirror.set(s.id, s);
    hooks.onState?.(s);
  };
  return {
    kind: "process",
    /** The newest line handed to the hooks (acknowledged once they are stored: at a restart, after the Core closed). */
    get delivered() {
      return delivered;
    },
    attach(h, runOneOffs, identity) {
      hooks = h;
      oneOffs = runOneOffs;
      identityOf = identity;
      void link.channel.request("spool.replay", { after: link.acked }).catch((e: Error) => opts.log.warn("could not replay the data plane's spool", { err: e.message }));
    },
    async start(spec: ReplicaSpec) {
      const who = identityOf?.(spec.labels ?? {});
      const labels = { ...spec.labels, ...(who ? { sandbox_uid: String(who.uid), sandbox_gid: String(who.gid) } : {}) };
      const s = await link.channel.request("runtime.start", { spec: { ...spec, labels } });
      if (!mirror.has(s.id) || mirror.get(s.id)!.state === "starting") mirror.set(s.id, s);
      return s;
    },
    status(id) {
      return mirror.get(id) ?? null;
    },
    list() {
      return [...mirror.values()];
    },
    async stop(id, graceMs) {
      const last = await link.channel.request("runtime.stop", { id, graceMs });
      mirror.delete(id);
      return last;
    },
    async stopAll(graceMs) {
      await Promise.all([...mirror.keys()].map((id) => this.stop(id, graceMs).catch((e: Error) => opts.log.warn("could not stop a replica", { replica: id, err: e.message }))));
    },
    run(spec: OneOffSpec) {
      if (!oneOffs) return Promise.reject(new Error("one-off runs need the Core's runtime hooks first"));
      return oneOffs().run(spec);
    },
  };
}

/** A certificate store that also hands every change to the data plane's ingress. */
class ForwardingCertStore extends CertStore {
  constructor(private readonly forward: (set: Array<{ name: string; cert: string; key: string }>, remove: string[]) => void) {
    super();
  }
  override set(name: string, pair: PemPair): void {
    super.set(name, pair);
    this.forward([{ name, cert: pair.cert, key: pair.key }], []);
  }
  override delete(name: string): void {
    super.delete(name);
    this.forward([], [name]);
  }
}

const ZERO: IngressMetrics = {
  connections: 0,
  accepted: 0,
  refusedPerAddress: 0,
  refusedTotal: 0,
  requests: 0,
  badRequests: 0,
  headTimeouts: 0,
  idleTimeouts: 0,
  bodyTimeouts: 0,
  sendTimeouts: 0,
  credentialsStripped: 0,
  upstreamFailures: 0,
};

function addressOf(url: string | null): IngressAddress | null {
  if (!url) return null;
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port), url };
}

/** The data plane's ingress process behind the ingress interface. */
export function remoteIngress(link: DataPlaneLink, log: Logger): Ingress & { readonly part: IngressPart | null } {
  const entries = new Map<string, ServiceEntry>();
  let compiled = compileTable([]);
  let stats: IngressStats | null = null;
  let part: IngressPart | null = link.hello.ingress;
  const post = <T>(p: Promise<T>) => void p.catch((e: Error) => log.warn("the data plane did not take an ingress change", { err: e.message }));
  link.onStats = (s) => (stats = s);
  link.onPart = (p) => (part = p);
  const recompile = () => (compiled = compileTable([...entries.values()]));
  const certificates = new ForwardingCertStore((set, remove) => post(link.channel.request("ingress.certificates", { set, remove })));
  const inflightOf = (u: { host: string; port: number }) => stats?.inflight.find((i) => i.host === u.host && i.port === u.port);
  return {
    get part() {
      return part;
    },
    setRoutes(list) {
      entries.clear();
      for (const e of list) entries.set(serviceKey(e.service), e);
      recompile();
      post(link.channel.request("ingress.setRoutes", { entries: [...list] }));
    },
    setService(entry) {
      entries.set(serviceKey(entry.service), entry);
      recompile();
      post(link.channel.request("ingress.setService", { entry }));
    },
    removeService(ref: ServiceRef) {
      entries.delete(serviceKey(ref));
      recompile();
      post(link.channel.request("ingress.removeService", { ref }));
    },
    table() {
      return [...entries.values()];
    },
    conflicts(): readonly RouteConflict[] {
      return compiled.conflicts;
    },
    inflight(u) {
      return inflightOf(u)?.requests ?? 0;
    },
    websockets(u) {
      return inflightOf(u)?.websockets ?? 0;
    },
    exchanges() {
      return stats?.exchanges ?? 0;
    },
    metrics() {
      return stats?.metrics ?? ZERO;
    },
    serviceStats() {
      return stats?.services ?? [];
    },
    drained(upstreams, timeoutMs) {
      return link.channel.request("ingress.drained", { upstreams: upstreams.map((u) => ({ host: u.host, port: u.port })), timeoutMs }).catch(() => true);
    },
    listen() {
      throw new Error("the data plane's ingress listens on its own (OPS_INGRESS_LISTEN)");
    },
    get address() {
      return addressOf(part?.listen ?? null);
    },
    listenTls() {
      return Promise.reject(new Error("the data plane's ingress listens on its own (OPS_INGRESS_TLS_LISTEN)"));
    },
    get tlsAddress() {
      return addressOf(part?.tlsListen ?? null);
    },
    certificates,
    setChallenges() {
      // The data plane's ingress answers from the tokens pushed by `challengesChanged`.
    },
    async challengesChanged(tokens) {
      await link.channel.request("ingress.challenges", { tokens }).catch((e: Error) => log.warn("the data plane did not take the ACME challenges", { err: e.message }));
    },
    async stop() {
      // The ingress stops with the data plane (a full stop of ops), never with the control plane.
    },
  };
}
