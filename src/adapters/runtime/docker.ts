/**
 * The Docker Engine runtime (`OPS_RUNTIME=docker`): the runtime contract over the Engine API
 * (v1.41, Docker 20.10+; engine-api.ts), on a unix socket or tcp:// with TLS client certificates.
 * The engine supervises, not ops: a replica is a container named `ops-<id>` with restart policy
 * `unless-stopped`, so it keeps running, and is restarted after a crash, while ops is down.
 * - its image is pulled from ops's registry by digest (`registryAuth`: credentials the engine
 *   presents there), unless the engine has it already;
 * - Env = the caller's variables then `PORT=<containerPort>`; its port is published on
 *   `publish.hostIp` at a port ops picks and keeps across restarts (where the ingress reaches it);
 * - limits (docker-container.ts): memory, PidsLimit, NanoCpus, /tmp and /dev/shm as sized tmpfs,
 *   no-new-privileges, an init that passes SIGTERM on, bounded json-file logs;
 * - state from the engine's event stream (start, die, oom, destroy) and inspect; `running` once
 *   the app listens on its port (its socket table, or a probe through the port proxy);
 * - output: the log stream with timestamps, followed again after each restart from the last line
 *   seen, its secret values masked;
 * - stop: `POST /containers/{id}/stop?t=<grace>` (SIGTERM, then SIGKILL), then remove.
 * Every container carries `dev.ops.replica` (or `dev.ops.release`) and `dev.ops.owner` labels:
 * `takeOn()` finds the ones a previous ops left running and watches them again (logs from now),
 * `detach()` stops watching and leaves them running; only `stop`/`stopAll` stop them (decision 0610).
 */
import { isIP } from "node:net";
import { freeLoopbackPort } from "./process";
import { engineClient, followEvents, followLogs, type EngineEndpoint } from "./engine-api";
import { secretMasker } from "../../core/secret-mask";
import { containerListens, exitOf, LABEL, limitsText, memoryOf, notEnforcedBy, proxiedPortAnswers, replicaBody, stateOf, takenOn, watchedContainer, type ContainerInspect, type DockerLimits, type WatchedContainer as Container } from "./docker-container";
import { namedEngine, pullImage, runOneOff, type RegistryAuth } from "./docker-oneoff";
import { RuntimeError, type OutputStream, type ReplicaSpec, type ReplicaStatus, type Runtime, type RuntimeHooks } from "./types";

export type { DockerLimits } from "./docker-container";

export interface DockerRuntimeOptions extends RuntimeHooks {
  /** The Engine's socket (OPS_DOCKER_SOCKET); `engine` wins when both are given. */
  socket?: string;
  /** The Engine API: a unix socket or tcp:// with TLS client certificates (OPS_DOCKER_HOST). */
  engine?: EngineEndpoint;
  /** Credentials the engine presents to ops's registry for an image reference (the image's project's, short-lived). */
  registryAuth?: RegistryAuth;
  /** Default grace period of `stop` (10 s). */
  graceMs?: number;
  limits?: DockerLimits;
  /**
   * Where replicas' ports are published on the engine's host, and where the ingress reaches them.
   * Default: 127.0.0.1 for a local engine; for a tcp:// engine named by its IP address, that address.
   */
  publish?: { hostIp: string; host?: string };
  /** Tells this ops's containers from another's on a shared engine (default "ops"). */
  owner?: string;
}

/** The Docker runtime: the contract, and its containers taken on or left running across a restart of ops. */
export interface DockerRuntime extends Runtime {
  readonly kind: "docker";
  /** Watch the containers of this owner that run without an ops (a previous one's); their one-off containers are removed. */
  takeOn(): Promise<ReplicaStatus[]>;
  /** Stop watching every container and leave them running (ops restarts or stops without stopping its apps). */
  detach(): void;
  /** Hooks given after creation (ops serve makes the runtime before the domains install theirs); lines held meanwhile follow. */
  attach(hooks: RuntimeHooks): void;
}

export function createDockerRuntime(opts: DockerRuntimeOptions): DockerRuntime {
  const containers = new Map<string, Container>();
  const byContainer = new Map<string, Container>();
  const starting = new Set<string>();
  const engine = namedEngine(engineClient(opts.engine ?? { host: opts.socket ?? "/var/run/docker.sock" }), opts.engine ? "OPS_DOCKER_HOST" : "OPS_DOCKER_SOCKET");
  const call = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => engine.call(method, p, body, headers);
  const owner = opts.owner ?? "ops";
  const limits = opts.limits ?? {};
  const graceDefault = opts.graceMs ?? 10_000;
  const tcpHost = /^tcp:\/\/\[?([^\]]+?)\]?:\d+$/.exec(opts.engine?.host ?? "")?.[1];
  const hostIp = opts.publish?.hostIp ?? (tcpHost && isIP(tcpHost) ? tcpHost : "127.0.0.1");
  const reachAt = opts.publish?.host ?? hostIp;
  let hooks: RuntimeHooks = opts;
  const held: Array<[string, OutputStream, string]> = [];
  const emit = (id: string, stream: OutputStream, line: string) => {
    if (hooks.onLine) hooks.onLine(id, stream, line);
    else if (held.length < 2000) held.push([id, stream, line]);
  };
  const note = (c: Container, line: string) => emit(c.id, "ops", line);
  const changed = (c: Container) => hooks.onState?.({ ...c.status, labels: { ...c.status.labels } });
  let events: AbortController | null = null;

  const limitsLine = (mem: number | null, cpus: number | null | undefined) => limitsText(limits, mem, cpus);

  /** Follow the container's output from its last line on; again after a restart while it runs. */
  function follow(c: Container): void {
    if (c.logs || c.stopping || containers.get(c.id) !== c) return;
    const ac = (c.logs = new AbortController());
    const from = c.lastTs ? Math.floor(Date.parse(c.lastTs) / 1000) : c.since;
    c.logsDone = (async () => {
      try {
        const res = await call("GET", `/containers/${c.containerId}/logs?follow=1&stdout=1&stderr=1&timestamps=1&since=${from}`);
        await followLogs(res, ac.signal, (stream, raw) => {
          const sp = raw.indexOf(" ");
          const ts = raw.slice(0, sp);
          if (sp < 0 || (c.lastTs && ts <= c.lastTs)) return; // seen before the follow started again
          c.lastTs = ts;
          emit(c.id, stream, c.mask(raw.slice(sp + 1)));
        });
      } catch (e) {
        if (!ac.signal.aborted && containers.get(c.id) === c) note(c, `its output could not be followed: ${(e as Error).message}`);
      } finally {
        if (c.logs === ac) c.logs = null;
        if (!ac.signal.aborted && c.up && containers.get(c.id) === c) setTimeout(() => follow(c), 200);
      }
    })();
  }

  async function watchReady(c: Container, generation: number): Promise<void> {
    while (c.generation === generation && c.status.state === "starting" && containers.get(c.id) === c) {
      let ok = containerListens(c.status.pid ?? 0, c.containerId, c.containerPort);
      if (ok === null) ok = await proxiedPortAnswers(c.status.host, c.status.port);
      if (ok && c.generation === generation && c.status.state === "starting") {
        c.status.state = "running";
        changed(c);
        return;
      }
      await Bun.sleep(100);
    }
  }

  /** Read the container's state from the engine into its status; a running one is watched until it listens. */
  async function refresh(c: Container): Promise<ContainerInspect | null> {
    const info = await engine.json<ContainerInspect>("GET", `/containers/${c.containerId}/json`).catch(() => null);
    if (!info || c.stopping) return info;
    const s = info.State;
    c.status.restarts = info.RestartCount;
    c.status.pid = s.Pid || null;
    c.status.startedAt = Date.parse(s.StartedAt) || c.status.startedAt;
    c.up = s.Running;
    if (s.Running) {
      if (c.status.state !== "running") {
        c.status.state = "starting";
        c.status.nextRestartAt = null;
        void watchReady(c, ++c.generation);
      }
      follow(c);
    } else {
      c.status.state = stateOf(s.Status);
      if (c.status.state === "crashed" && s.FinishedAt && !s.FinishedAt.startsWith("0001")) c.status.lastExit = exitOf(s.ExitCode, s.OOMKilled || c.oom, Date.parse(s.FinishedAt));
    }
    return info;
  }

  function onEvent(ev: Record<string, unknown>): void {
    const actor = ev.Actor as { ID?: string; Attributes?: Record<string, string> } | undefined;
    const c = actor?.ID ? byContainer.get(actor.ID) : undefined;
    if (!c) return;
    const action = String(ev.Action ?? ev.status ?? "");
    c.queue = c.queue.then(async () => {
      if (c.stopping || containers.get(c.id) !== c) return;
      if (action === "oom") c.oom = true;
      else if (action === "start") {
        c.oom = false;
        await refresh(c);
        changed(c);
      } else if (action === "die") {
        c.up = false;
        c.generation++;
        const info = await engine.json<ContainerInspect>("GET", `/containers/${c.containerId}/json`).catch(() => null);
        const oomKilled = c.oom || !!info?.State.OOMKilled;
        c.status.lastExit = exitOf(Number(actor?.Attributes?.exitCode ?? info?.State.ExitCode ?? -1), oomKilled, Date.now());
        c.status.state = "crashed";
        c.status.pid = null;
        c.status.restarts = info?.RestartCount ?? c.status.restarts;
        const how = oomKilled ? `was killed: over its memory limit of ${c.status.memory.limitMb} MiB` : c.status.lastExit.signal ? `was ended by ${c.status.lastExit.signal}` : `exited with code ${c.status.lastExit.code}`;
        note(c, `${how}; the Docker Engine restarts it`);
        changed(c);
      } else if (action === "destroy") {
        note(c, "its container was removed outside ops");
        untrack(c);
        c.status.state = "stopped";
        c.status.pid = null;
        changed(c);
      }
    });
  }

  /** The event stream of this owner's containers, connected before anything it reports is started; reconnected (and every container read again) when it ends. */
  function ensureEvents(): Promise<void> {
    if (events) return Promise.resolve();
    const ac = (events = new AbortController());
    return new Promise<void>((resolve, reject) => {
      let opened = false;
      const loop = async (delay: number): Promise<void> => {
        try {
          await followEvents(engine, { type: ["container"], label: [`${LABEL.owner}=${owner}`] }, ac.signal, onEvent, () => {
            if (!opened) resolve();
            else for (const c of containers.values()) c.queue = c.queue.then(() => refresh(c).then(() => changed(c)));
            opened = true;
            delay = 500;
          });
        } catch (e) {
          if (!opened) {
            if (events === ac) events = null;
            return reject(e);
          }
        }
        if (ac.signal.aborted) return;
        await Bun.sleep(delay);
        return loop(Math.min(delay * 2, 10_000));
      };
      void loop(500);
    });
  }

  function track(c: Container): void {
    containers.set(c.id, c);
    byContainer.set(c.containerId, c);
  }

  function untrack(c: Container): void {
    c.generation++;
    c.logs?.abort();
    if (containers.get(c.id) === c) containers.delete(c.id);
    byContainer.delete(c.containerId);
  }

  const newContainer = (id: string, containerId: string, containerPort: number, port: number, masked: readonly string[], memoryMb: number | null, labels: Record<string, string>): Container =>
    watchedContainer({ id, containerId, containerPort, host: reachAt, port, mask: secretMasker([...masked]), memoryMb, notEnforced: notEnforcedBy(limits), labels });

  const pull = (image: ReplicaSpec["image"]) => pullImage(engine, image, opts.registryAuth);

  const nameOf = (id: string) => `ops-${owner === "ops" ? "" : `${owner}-`}${id}`.replace(/[^A-Za-z0-9_.-]/g, "_");
  const portConflict = (e: unknown) => /address already in use|port is already allocated/.test((e as Error).message);
  const pickPort = () => (hostIp === "127.0.0.1" ? freeLoopbackPort() : 20_000 + Math.floor(Math.random() * 40_000));

  /** Create `name`; a container of this owner's that holds the name but no live replica (left by a crash) is removed first. */
  async function create(name: string, body: unknown): Promise<string> {
    try {
      return (await engine.json<{ Id: string }>("POST", `/containers/create?name=${encodeURIComponent(name)}`, body)).Id;
    } catch (e) {
      if (!/HTTP 409/.test((e as Error).message)) throw e;
      const old = await engine.json<ContainerInspect>("GET", `/containers/${encodeURIComponent(name)}/json`);
      if (old.Config.Labels?.[LABEL.owner] !== owner || byContainer.has(old.Id)) throw e;
      await call("DELETE", `/containers/${old.Id}?force=1`);
      return (await engine.json<{ Id: string }>("POST", `/containers/create?name=${encodeURIComponent(name)}`, body)).Id;
    }
  }

  const runtime: DockerRuntime = {
    kind: "docker",

    async start(spec) {
      if (containers.has(spec.id) || starting.has(spec.id)) throw new RuntimeError(`replica ${spec.id} is already live`);
      starting.add(spec.id);
      try {
        const ref = await pull(spec.image);
        await ensureEvents();
        const mem = memoryOf(spec, limits);
        for (let attempt = 1; ; attempt++) {
          const port = pickPort();
          const body = replicaBody(spec, ref, { owner, limits, graceMs: graceDefault, hostIp, hostPort: port });
          const c = newContainer(spec.id, await create(nameOf(spec.id), body), spec.containerPort ?? 8080, port, spec.masked ?? [], mem, spec.labels ?? {});
          track(c);
          try {
            await call("POST", `/containers/${c.containerId}/start`);
          } catch (e) {
            untrack(c);
            await call("DELETE", `/containers/${c.containerId}?force=1`).catch(() => undefined);
            if (portConflict(e) && attempt < 5) continue;
            throw new RuntimeError(`replica ${spec.id} could not start: ${(e as Error).message}`);
          }
          note(c, limitsLine(mem, spec.cpus));
          for (const what of c.status.notEnforced) note(c, what);
          return { ...c.status, labels: { ...c.status.labels } };
        }
      } finally {
        starting.delete(spec.id);
      }
    },

    status(id) {
      const c = containers.get(id);
      return c ? { ...c.status, labels: { ...c.status.labels } } : null;
    },

    list() {
      return [...containers.values()].map((c) => ({ ...c.status, labels: { ...c.status.labels } }));
    },

    async stop(id, graceMs = graceDefault) {
      const c = containers.get(id);
      if (!c) return null;
      await c.queue;
      c.stopping = true;
      c.generation++;
      c.status.state = "stopping";
      changed(c);
      await call("POST", `/containers/${c.containerId}/stop?t=${Math.max(0, Math.ceil(graceMs / 1000))}`).catch(() => undefined);
      // Its last lines (a goodbye after SIGTERM) before it is reported stopped.
      await Promise.race([c.logsDone, Bun.sleep(1000)]);
      untrack(c);
      await call("DELETE", `/containers/${c.containerId}?force=1`).catch(() => undefined);
      c.status.state = "stopped";
      c.status.pid = null;
      c.status.nextRestartAt = null;
      changed(c);
      return { ...c.status, labels: { ...c.status.labels } };
    },

    async stopAll(graceMs) {
      await Promise.all([...containers.keys()].map((id) => runtime.stop(id, graceMs)));
      events?.abort(); // the next start opens it again
      events = null;
    },

    run(spec) {
      return runOneOff(engine, spec, { owner, limits, graceMs: graceDefault, pull, emit });
    },

    async takeOn() {
      await ensureEvents();
      const list = await engine.json<Array<{ Id: string; Labels: Record<string, string> }>>("GET", `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`${LABEL.owner}=${owner}`] }))}`);
      const out: ReplicaStatus[] = [];
      for (const item of list) {
        // A one-off belonged to a rollout, which ended with the ops that ran it.
        if (item.Labels[LABEL.release] !== undefined) {
          await call("DELETE", `/containers/${item.Id}?force=1`).catch(() => undefined);
          continue;
        }
        if (byContainer.has(item.Id)) continue;
        const info = await engine.json<ContainerInspect>("GET", `/containers/${item.Id}/json`).catch(() => null);
        const kept = info && takenOn(info);
        if (!info || !kept || kept.hostPort === null || containers.has(kept.id)) continue;
        const c = newContainer(kept.id, info.Id, kept.containerPort, kept.hostPort, kept.masked, kept.memoryMb, kept.labels);
        c.since = Math.floor(Date.now() / 1000);
        track(c);
        if (!info.State.Running && info.State.Status !== "restarting") await call("POST", `/containers/${c.containerId}/start`).catch((e) => note(c, `could not start it again: ${(e as Error).message}`));
        await refresh(c);
        follow(c);
        note(c, `taken on: its container ${info.Id.slice(0, 12)} ran on without ops`);
        changed(c);
        out.push({ ...c.status, labels: { ...c.status.labels } });
      }
      return out;
    },

    detach() {
      events?.abort();
      events = null;
      for (const c of [...containers.values()]) untrack(c);
    },

    attach(h) {
      hooks = { ...hooks, ...h };
      if (hooks.onLine) for (const [id, stream, line] of held.splice(0)) hooks.onLine(id, stream, line);
    },
  };
  return runtime;
}
