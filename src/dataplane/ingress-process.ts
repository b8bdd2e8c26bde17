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
import { createIngress, type Ingress } from "../adapters/ingress/ingress";
import { ingressOptions } from "../adapters/ingress";
import { serviceKey, type ServiceEntry, type ServiceRef } from "../adapters/ingress/table";
import type { Config } from "../core/config";
import type { Logger } from "../core/log";
import { CONFIG_ON_STDIN, type IngressPart, type IngressStats } from "./protocol";

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
  };
}

/** `ops ingress`: serve what the supervisor sends until it says stop or goes away. */
export async function runIngressProcess(config: Config, log: Logger): Promise<number> {
  if (!process.send) {
    log.error("ops ingress runs only as a child of ops data-plane");
    return 2;
  }
  const send = (m: FromChild) => process.send!(m);
  const ingress = createIngress(ingressOptions(config, log));
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

/**
 * Start `argv` (an `ops ingress`) and keep it running: when it exits it is started again at once
 * (after a crash loop, with a doubling delay up to 5 s), and handed the whole state again.
 */
export function startIngressProcess(argv: string[], config: Config, log: Logger, onPart: (p: IngressPart) => void, onStats: (s: IngressStats) => void): IngressHandle {
  const state: IngressState = { listen: config.ingressListen, tlsListen: config.ingressTlsListen, routes: [], certs: [], challenges: [] };
  const routes = new Map<string, ServiceEntry>();
  const certs = new Map<string, { name: string; cert: string; key: string }>();
  const part: IngressPart = { pid: null, startedAt: null, restarts: 0, listen: null, tlsListen: null, error: null };
  let child: ReturnType<typeof Bun.spawn> | null = null;
  let stopping = false;
  let delay = 0;
  let lastStats: IngressStats | null = null;
  let nextDrain = 0;
  const drains = new Map<number, (v: boolean) => void>();

  const snapshot = (): IngressState => ({ ...state, routes: [...routes.values()], certs: [...certs.values()] });
  const post = (m: ToChild) => {
    try {
      child?.send(m);
    } catch {
      // gone: the next start replays everything
    }
  };
  const spawn = () => {
    const started = Date.now();
    const proc = Bun.spawn(argv, {
      // Its configuration is this process's, on stdin (decision 0600).
      stdio: [new TextEncoder().encode(JSON.stringify(config)), "inherit", "inherit"],
      env: { ...process.env, [CONFIG_ON_STDIN]: "1" },
      serialization: "json",
      ipc(m: FromChild) {
        if (m.ev === "listening") {
          Object.assign(part, { listen: m.listen, tlsListen: m.tlsListen, error: m.error });
          onPart({ ...part });
        } else if (m.ev === "stats") {
          lastStats = m.stats;
          onStats(m.stats);
        } else if (m.ev === "drained") {
          drains.get(m.id)?.(m.value);
          drains.delete(m.id);
        }
      },
    });
    child = proc;
    Object.assign(part, { pid: proc.pid, startedAt: started, listen: null, tlsListen: null, error: null });
    onPart({ ...part });
    proc.send({ op: "state", state: snapshot() } satisfies ToChild);
    void proc.exited.then((code) => {
      if (child === proc) child = null;
      // A drain the dead process was answering: nothing is in flight through it any more.
      for (const [, resolve] of drains) resolve(true);
      drains.clear();
      if (stopping) return;
      part.restarts++;
      // Quick after a run that lasted; doubling (to 5 s) while it keeps dying at once.
      delay = Date.now() - started > 10_000 ? 0 : Math.min(5000, Math.max(50, delay * 2));
      log.warn("the ingress process ended; starting it again", { pid: proc.pid, code, signal: proc.signalCode, restart_in_ms: delay });
      Object.assign(part, { pid: null, listen: null, tlsListen: null });
      onPart({ ...part });
      setTimeout(() => {
        if (!stopping) spawn();
      }, delay);
    });
  };
  spawn();

  return {
    get part() {
      return { ...part };
    },
    get stats() {
      return lastStats;
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
      if (!child) return Promise.resolve(true);
      const id = ++nextDrain;
      return new Promise<boolean>((resolve) => {
        drains.set(id, resolve);
        post({ op: "drained", id, upstreams, timeoutMs });
        setTimeout(() => {
          if (drains.delete(id)) resolve(false);
        }, timeoutMs + 2000);
      });
    },
    async stop(graceMs) {
      stopping = true;
      const proc = child;
      if (!proc) return;
      post({ op: "stop", graceMs });
      const ended = await Promise.race([proc.exited.then(() => true), Bun.sleep(graceMs + 2000).then(() => false)]);
      if (!ended) proc.kill("SIGKILL");
    },
  };
}
