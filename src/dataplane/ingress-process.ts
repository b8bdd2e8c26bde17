/**
 * The ingress in a process of its own (decision 0600): `ops ingress`, a child of the data plane's
 * supervisor, which hands it the whole state it serves (listen addresses, the route table,
 * certificates, ACME challenge answers) over Bun's IPC channel and again after every restart. It
 * holds no state of its own: killed, it is started again by the supervisor and serves the same
 * table within a second, while the control plane may be down. It ends when its supervisor does
 * (the channel closes): the replicas it routes to end with the supervisor anyway.
 *
 * Both halves live here: `runIngressProcess` (the child) and `startIngressProcess` (the
 * supervisor's handle on it).
 */
import { sumServiceStats } from "../adapters/ingress/service-stats";
import { createIngress, type Ingress } from "../adapters/ingress/ingress";
import { ingressOptions } from "../adapters/ingress";
import { serviceKey, type ServiceEntry, type ServiceRef } from "../adapters/ingress/table";
import type { Config } from "../core/config";
import type { Logger } from "../core/log";
import { CONFIG_ON_STDIN, type IngressPart, type IngressStats } from "./protocol";

/** Set for an ingress process: how many share its listeners (the per-address and total caps are shared out). */
const WORKERS_ENV = "OPS_INGRESS_WORKER_COUNT";

/** Everything the ingress serves; replayed whole into a new ingress process. */
export interface IngressState {
  listen: { host: string; port: number } | null;
  tlsListen: { host: string; port: number } | null;
  routes: ServiceEntry[];
  certs: Array<{ name: string; cert: string; key: string }>;
  challenges: Array<[string, string]>;
}

type ToChild =
  | { op: "state"; state: IngressState }
  | { op: "setService"; entry: ServiceEntry }
  | { op: "removeService"; ref: ServiceRef }
  | { op: "setRoutes"; entries: ServiceEntry[] }
  | { op: "certs"; set: IngressState["certs"]; remove: string[] }
  | { op: "challenges"; tokens: Array<[string, string]> }
  | { op: "drained"; id: number; upstreams: Array<{ host: string; port: number }>; timeoutMs: number }
  | { op: "stop"; graceMs: number };

type FromChild =
  | { ev: "listening"; listen: string | null; tlsListen: string | null; error: string | null }
  | { ev: "stats"; stats: IngressStats }
  | { ev: "drained"; id: number; value: boolean };

/** The ingress's counters and what is in flight, for the control plane. */
export function statsOf(ingress: Ingress): IngressStats {
  const seen = new Map<string, { host: string; port: number }>();
  for (const e of ingress.table()) for (const u of e.upstreams) seen.set(`${u.host}:${u.port}`, { host: u.host, port: u.port });
  return {
    metrics: { ...ingress.metrics() },
    exchanges: ingress.exchanges(),
    inflight: [...seen.values()].map((u) => ({ ...u, requests: ingress.inflight(u), websockets: ingress.websockets(u) })),
    services: ingress.serviceStats(),
  };
}

/** `ops ingress`: serve what the supervisor sends until it says stop or goes away. */
export async function runIngressProcess(config: Config, log: Logger): Promise<number> {
  if (!process.send) {
    log.error("ops ingress runs only as a child of ops data-plane");
    return 2;
  }
  const send = (m: FromChild) => process.send!(m);
  // One of several on the same listeners (SO_REUSEPORT): each holds its share of the caps.
  const count = Math.max(1, Number(process.env[WORKERS_ENV] ?? "1") || 1);
  const options = ingressOptions(config, log);
  const ingress = createIngress({ ...options, reusePort: true, maxConnPerIp: Math.ceil((options.maxConnPerIp ?? 256) / count), maxConnections: Math.ceil((options.maxConnections ?? 10_000) / count) });
  const challenges = new Map<string, string>();
  ingress.setChallenges((token) => challenges.get(token) ?? null);
  let listening = false;
  let done: (code: number) => void = () => {};
  const finished = new Promise<number>((resolve) => (done = resolve));

  const apply = async (m: ToChild) => {
    switch (m.op) {
      case "state": {
        ingress.setRoutes(m.state.routes);
        for (const c of m.state.certs) ingress.certificates.set(c.name, { cert: c.cert, key: c.key });
        challenges.clear();
        for (const [k, v] of m.state.challenges) challenges.set(k, v);
        if (listening) return;
        listening = true;
        const errors: string[] = [];
        if (m.state.listen) {
          try {
            ingress.listen(m.state.listen.host, m.state.listen.port);
          } catch (e) {
            errors.push(`OPS_INGRESS_LISTEN ${m.state.listen.host}:${m.state.listen.port}: ${(e as Error).message}`);
          }
        }
        if (m.state.tlsListen) {
          try {
            await ingress.listenTls(m.state.tlsListen.host, m.state.tlsListen.port);
          } catch (e) {
            errors.push(`OPS_INGRESS_TLS_LISTEN ${m.state.tlsListen.host}:${m.state.tlsListen.port}: ${(e as Error).message}`);
          }
        }
        send({ ev: "listening", listen: ingress.address?.url ?? null, tlsListen: ingress.tlsAddress?.url ?? null, error: errors.length > 0 ? errors.join("; ") : null });
        return;
      }
      case "setService":
        return ingress.setService(m.entry);
      case "removeService":
        return ingress.removeService(m.ref);
      case "setRoutes":
        return ingress.setRoutes(m.entries);
      case "certs":
        for (const c of m.set) ingress.certificates.set(c.name, { cert: c.cert, key: c.key });
        for (const n of m.remove) ingress.certificates.delete(n);
        return;
      case "challenges":
        challenges.clear();
        for (const [k, v] of m.tokens) challenges.set(k, v);
        return;
      case "drained":
        send({ ev: "drained", id: m.id, value: await ingress.drained(m.upstreams, m.timeoutMs) });
        return;
      case "stop":
        await ingress.stop(m.graceMs);
        done(0);
    }
  };
  process.on("message", (m) => {
    void apply(m as ToChild).catch((e) => log.error("the ingress could not apply a change", { err: e as Error }));
  });
  // No supervisor, no replicas to route to: end rather than hold the ports.
  process.on("disconnect", () => {
    void ingress.stop(1000).then(() => done(0));
  });
  const stats = setInterval(() => send({ ev: "stats", stats: statsOf(ingress) }), 1000);
  // What starting left behind, collected once: an idle ingress stays small.
  setTimeout(() => Bun.gc(true), 2000).unref();
  const code = await finished;
  clearInterval(stats);
  return code;
}

export interface IngressHandle {
  readonly part: IngressPart;
  readonly stats: IngressStats | null;
  setService(entry: ServiceEntry): void;
  removeService(ref: ServiceRef): void;
  setRoutes(entries: ServiceEntry[]): void;
  certificates(set: IngressState["certs"], remove: string[]): void;
  challenges(tokens: Array<[string, string]>): void;
  drained(upstreams: Array<{ host: string; port: number }>, timeoutMs: number): Promise<boolean>;
  /** Stop it for good (no restart). */
  stop(graceMs: number): Promise<void>;
}

/** How many ingress processes to run: `OPS_INGRESS_WORKERS`, or one per core (at most 4) when 0. */
export function ingressWorkers(config: Config): number {
  return config.ingressWorkers > 0 ? config.ingressWorkers : Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1));
}

interface Worker {
  proc: ReturnType<typeof Bun.spawn> | null;
  pid: number | null;
  startedAt: number | null;
  restarts: number;
  delay: number;
  listen: string | null;
  tlsListen: string | null;
  error: string | null;
  stats: IngressStats | null;
}

/** Counters of every worker added up; what is in flight per upstream too. */
function sumStats(all: IngressStats[]): IngressStats | null {
  if (all.length === 0) return null;
  const metrics = { ...all[0]!.metrics };
  for (const s of all.slice(1)) for (const k of Object.keys(metrics) as Array<keyof typeof metrics>) metrics[k] += s.metrics[k];
  const inflight = new Map<string, IngressStats["inflight"][number]>();
  for (const s of all) {
    for (const i of s.inflight) {
      const key = `${i.host}:${i.port}`;
      const had = inflight.get(key);
      inflight.set(key, had ? { ...had, requests: had.requests + i.requests, websockets: had.websockets + i.websockets } : { ...i });
    }
  }
  return { metrics, exchanges: all.reduce((n, s) => n + s.exchanges, 0), inflight: [...inflight.values()], services: sumServiceStats(all.map((s) => s.services ?? [])) };
}

/**
 * Start `count` ingress processes (`argv`, an `ops ingress`) on the same listeners (SO_REUSEPORT:
 * the kernel spreads connections over them, as nginx's workers) and keep them running: one that
 * exits is started again at once (after a crash loop, with a doubling delay up to 5 s) and handed
 * the whole state again; the others serve meanwhile (decision 0600).
 */
export function startIngressProcess(argv: string[], config: Config, log: Logger, onPart: (p: IngressPart) => void, onStats: (s: IngressStats) => void, count = 1): IngressHandle {
  const state: IngressState = { listen: config.ingressListen, tlsListen: config.ingressTlsListen, routes: [], certs: [], challenges: [] };
  const routes = new Map<string, ServiceEntry>();
  const certs = new Map<string, { name: string; cert: string; key: string }>();
  const workers: Worker[] = Array.from({ length: count }, () => ({ proc: null, pid: null, startedAt: null, restarts: 0, delay: 0, listen: null, tlsListen: null, error: null, stats: null }));
  let stopping = false;
  let nextDrain = 0;
  const drains = new Map<number, { left: Set<Worker>; ok: boolean; resolve: (v: boolean) => void }>();

  // SO_REUSEPORT would let these processes share a port another server already holds (a second
  // ops, another data dir): bound once without it first, so a taken port is an error, as before.
  const taken: string[] = [];
  for (const [setting, l] of [["OPS_INGRESS_LISTEN", config.ingressListen], ["OPS_INGRESS_TLS_LISTEN", config.ingressTlsListen]] as const) {
    if (!l || l.port === 0) continue;
    try {
      Bun.listen({ hostname: l.host, port: l.port, socket: { data() {} } }).stop(true);
    } catch (e) {
      taken.push(`${setting} ${l.host}:${l.port}: ${(e as Error).message}`);
    }
  }
  const part = (): IngressPart => {
    if (taken.length > 0) return { pid: null, startedAt: null, restarts: 0, listen: null, tlsListen: null, error: taken.join("; "), workers: [] };
    const up = workers.filter((w) => w.pid !== null);
    const first = up[0] ?? workers[0]!;
    return {
      pid: first.pid,
      startedAt: first.startedAt,
      restarts: workers.reduce((n, w) => n + w.restarts, 0),
      listen: up.find((w) => w.listen)?.listen ?? null,
      tlsListen: up.find((w) => w.tlsListen)?.tlsListen ?? null,
      error: up.find((w) => w.error)?.error ?? null,
      workers: workers.map((w) => ({ pid: w.pid, startedAt: w.startedAt })),
    };
  };
  const changed = () => onPart(part());
  const snapshot = (): IngressState => ({ ...state, routes: [...routes.values()], certs: [...certs.values()] });
  const post = (m: ToChild) => {
    for (const w of workers) {
      try {
        w.proc?.send(m);
      } catch {
        // gone: its next start replays everything
      }
    }
  };
  const settle = (id: number, w: Worker, value: boolean) => {
    const d = drains.get(id);
    if (!d) return;
    d.left.delete(w);
    d.ok &&= value;
    if (d.left.size === 0) {
      drains.delete(id);
      d.resolve(d.ok);
    }
  };
  const spawn = (w: Worker) => {
    const started = Date.now();
    const proc = Bun.spawn(argv, {
      // Its configuration is this process's, on stdin (decision 0600).
      stdio: [new TextEncoder().encode(JSON.stringify(config)), "inherit", "inherit"],
      env: { ...process.env, [CONFIG_ON_STDIN]: "1", [WORKERS_ENV]: String(count) },
      serialization: "json",
      ipc(m: FromChild) {
        if (m.ev === "listening") {
          Object.assign(w, { listen: m.listen, tlsListen: m.tlsListen, error: m.error });
          changed();
        } else if (m.ev === "stats") {
          w.stats = m.stats;
          const sum = sumStats(workers.flatMap((x) => (x.stats && x.pid !== null ? [x.stats] : [])));
          if (sum) onStats(sum);
        } else if (m.ev === "drained") {
          settle(m.id, w, m.value);
        }
      },
    });
    Object.assign(w, { proc, pid: proc.pid, startedAt: started, listen: null, tlsListen: null, error: null, stats: null });
    changed();
    proc.send({ op: "state", state: snapshot() } satisfies ToChild);
    void proc.exited.then((code) => {
      if (w.proc === proc) Object.assign(w, { proc: null, pid: null, listen: null, tlsListen: null, stats: null });
      // A drain the dead process was answering: nothing is in flight through it any more.
      for (const id of [...drains.keys()]) settle(id, w, true);
      if (stopping) return;
      w.restarts++;
      // Quick after a run that lasted; doubling (to 5 s) while it keeps dying at once.
      w.delay = Date.now() - started > 10_000 ? 0 : Math.min(5000, Math.max(50, w.delay * 2));
      log.warn("an ingress process ended; starting it again", { pid: proc.pid, code, signal: proc.signalCode, restart_in_ms: w.delay, others_serving: workers.filter((x) => x.pid !== null).length });
      changed();
      setTimeout(() => {
        if (!stopping) spawn(w);
      }, w.delay);
    });
  };
  if (taken.length > 0) {
    log.error("the ingress cannot listen: its address is taken; apps are not reachable through it", { err: taken.join("; ") });
    queueMicrotask(changed);
  } else for (const w of workers) spawn(w);

  return {
    get part() {
      return part();
    },
    get stats() {
      return sumStats(workers.flatMap((x) => (x.stats && x.pid !== null ? [x.stats] : [])));
    },
    setService(entry) {
      routes.set(serviceKey(entry.service), entry);
      post({ op: "setService", entry });
    },
    removeService(ref) {
      routes.delete(serviceKey(ref));
      post({ op: "removeService", ref });
    },
    setRoutes(entries) {
      routes.clear();
      for (const e of entries) routes.set(serviceKey(e.service), e);
      post({ op: "setRoutes", entries });
    },
    certificates(set, remove) {
      for (const c of set) certs.set(c.name.toLowerCase(), c);
      for (const n of remove) certs.delete(n.toLowerCase());
      post({ op: "certs", set, remove });
    },
    challenges(tokens) {
      state.challenges = tokens;
      post({ op: "challenges", tokens });
    },
    drained(upstreams, timeoutMs) {
      const live = workers.filter((w) => w.proc !== null);
      if (live.length === 0) return Promise.resolve(true);
      const id = ++nextDrain;
      return new Promise<boolean>((resolve) => {
        drains.set(id, { left: new Set(live), ok: true, resolve });
        post({ op: "drained", id, upstreams, timeoutMs });
        setTimeout(() => {
          if (drains.delete(id)) resolve(false);
        }, timeoutMs + 2000);
      });
    },
    async stop(graceMs) {
      stopping = true;
      post({ op: "stop", graceMs });
      await Promise.all(
        workers.map(async (w) => {
          const proc = w.proc;
          if (!proc) return;
          const ended = await Promise.race([proc.exited.then(() => true), Bun.sleep(graceMs + 2000).then(() => false)]);
          if (!ended) proc.kill("SIGKILL");
        }),
      );
    },
  };
}
