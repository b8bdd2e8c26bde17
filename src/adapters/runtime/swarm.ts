/**
 * The Swarm runtime (`OPS_RUNTIME=swarm`, decision 0615): the runtime interface over a Docker Swarm
 * manager's Engine API (engine-api.ts; a unix socket, or tcp:// with TLS client certificates).
 * Swarm places and restarts; ops keeps rollouts, routing, logs and status. Per replica:
 * - one Swarm service of one task (`replicas: 1`, restarted on any exit after the spec's delay),
 *   named after the replica id, so `stop(id)` removes exactly that replica (Swarm cannot scale a
 *   service down by a chosen task);
 * - its image by `image.reference` (ops's registry with the digest), the registry credentials in
 *   `X-Registry-Auth` so every node can pull it;
 * - its secret values in a Swarm secret of its own (swarm-spec.ts), never in the visible spec;
 * - published in host mode on a port ops allocates from `OPS_SWARM_PORTS` (no routing mesh: this
 *   kernel family has no IPVS; dnsrr), reached at its node's address: `status.host` and
 *   `status.node` follow the task when Swarm moves it;
 * - attached to its project's environment's overlay network (swarm-objects.ts), never another's;
 * - spread: kept off the nodes its deployment's other replicas run on while another node can take
 *   it, a rule dropped when Swarm finds no node for it (a node lost, nodes drained).
 * State comes from the task list (swarm-state.ts) every second and at once on every node and
 * service event; `running` once the app answers on its published port. Output comes from the
 * service's log stream (swarm-logs.ts), each line with its node and task in `meta.labels`.
 * Services outlive ops: `detach()` leaves them running, the next ops `takeOn()`s them.
 */
import { engineClient, followEvents, type EngineClient } from "./engine-api";
import { registryAuthHeader, type RegistryAuth } from "./docker-oneoff";
import { proxiedPortAnswers } from "./docker-container";
import { maskerOf, type SandboxLimits } from "./replica-env";
import { followServiceLogs } from "./swarm-logs";
import { filterOf, swarmObjects } from "./swarm-objects";
import { L, labelsOf, limitsLineOf, serviceSpecOf, splitEnv, SWARM_NOT_ENFORCED, type ServiceInputs } from "./swarm-spec";
import { nodesOf, observe, type EngineNode, type EngineTask, type NodeInfo, type Tracked } from "./swarm-state";
import { runOneOff } from "./swarm-run";
import { roomFor, roomNodes } from "./swarm-room";
import { RuntimeError, type OneOffSpec, type OutputStream, type ReplicaSpec, type ReplicaStatus, type Runtime, type RuntimeHooks } from "./types";

export { SWARM_NOT_ENFORCED } from "./swarm-spec";

export interface SwarmRuntimeOptions extends RuntimeHooks {
  /** The manager's Engine API: `unix:///var/run/docker.sock` or `tcp://host:2376` (OPS_DOCKER_HOST). */
  host: string;
  tls?: { ca: string; cert: string; key: string } | null;
  /** Short-lived credentials of ops's registry for the nodes' pulls of `ref` (`--with-registry-auth`). */
  registryAuth?: RegistryAuth;
  /** Stop grace of every task (Swarm's StopGracePeriod, fixed when its service is made): default 10 s. */
  graceMs?: number;
  /** Ports replicas publish on (OPS_SWARM_PORTS). */
  ports?: { first: number; last: number };
  limits?: SandboxLimits;
  /** The user a replica's task runs as (its project's sandbox uid); omitted: the image's. */
  identityOf?: (labels: Record<string, string>) => { uid: number; gid: number } | null;
  /** A kept replica's secret values, by its labels (`takeOn`): the swarm never gives them back. */
  maskedOf?: (labels: Record<string, string>) => readonly string[] | null;
  /** Marks what this ops made, so two ops on one swarm never touch each other's services. */
  instance?: string;
  pollMs?: number;
}

interface Replica extends Tracked {
  spec: ReplicaSpec;
  secretId: string | null;
  logs: AbortController;
  spread: string[];
  relaxing: boolean;
  probing: string | null;
  stopped: Promise<ReplicaStatus | null> | null;
}

export interface SwarmRuntime extends Runtime {
  readonly kind: "swarm";
  readonly engine: EngineClient;
  /** The swarm's nodes as last seen. */
  nodes(): NodeInfo[];
  /** Watch this instance's replicas that run without an ops (a previous one's); its leftover one-offs and secrets are removed. */
  takeOn(): Promise<ReplicaStatus[]>;
  /** Stop watching every replica and leave it running (ops restarts without stopping its apps). */
  detach(): void;
  /** Hooks given after creation; lines held meanwhile follow. */
  attach(hooks: RuntimeHooks): void;
}

export function createSwarmRuntime(opts: SwarmRuntimeOptions): SwarmRuntime {
  const engine = engineClient({ host: opts.host, tls: opts.tls ?? null });
  const instance = opts.instance ?? "ops";
  const graceMs = opts.graceMs ?? 10_000;
  const objects = swarmObjects(engine, instance, opts.ports ?? { first: 30000, last: 32767 });
  const replicas = new Map<string, Replica>();
  const starting = new Set<string>();
  let nodes = new Map<string, NodeInfo>();
  let watch: { timer: ReturnType<typeof setInterval>; events: AbortController } | null = null;
  let refreshing: Promise<void> | null = null;
  let again = false;
  let hooks: RuntimeHooks = opts;
  const held: Array<Parameters<NonNullable<RuntimeHooks["onLine"]>>> = [];

  const emit: NonNullable<RuntimeHooks["onLine"]> = (...line) => {
    if (hooks.onLine) hooks.onLine(...line);
    else if (held.length < 2000) held.push(line);
  };
  const note = (id: string, line: string) => emit(id, "ops", line);
  const copy = (r: Replica): ReplicaStatus => ({ ...r.status, labels: { ...r.status.labels }, node: r.status.node ? { ...r.status.node } : null, notEnforced: [...r.status.notEnforced] });
  const changed = (r: Replica, over: Partial<ReplicaStatus> = {}) => hooks.onState?.({ ...copy(r), ...over });
  const auth = (ref: string) => registryAuthHeader(opts.registryAuth, ref);
  const userOf = (labels: Record<string, string>) => opts.identityOf?.(labels) ?? null;

  async function loadNodes(): Promise<Map<string, NodeInfo>> {
    nodes = nodesOf(await engine.json<EngineNode[]>("GET", "/nodes"));
    return nodes;
  }

  /** One pass over the task list; calls that arrive meanwhile run one more pass after it. */
  function refresh(): Promise<void> {
    if (refreshing) {
      again = true;
      return refreshing;
    }
    refreshing = (async () => {
      do {
        again = false;
        const [, tasks] = await Promise.all([loadNodes(), engine.json<EngineTask[]>("GET", `/tasks?filters=${filterOf({ label: [`${L.instance}=${instance}`, `${L.kind}=replica`] })}`)]);
        for (const r of replicas.values()) {
          const seen = observe(r, tasks, nodes);
          for (const line of seen.notes) note(r.spec.id, line);
          if (seen.crashedFirst) changed(r, { state: "crashed" });
          if (seen.changed) changed(r);
          if (seen.unplaceable && r.spread.length > 0 && !r.relaxing) void relax(r);
          if (seen.probe && r.probing !== seen.probe) void watchReady(r, seen.probe);
        }
      } while (again);
    })().finally(() => (refreshing = null));
    return refreshing;
  }

  /** Mark the task ready once its app answers on the published port (the task runs before the app listens). */
  async function watchReady(r: Replica, taskId: string): Promise<void> {
    r.probing = taskId;
    while (r.probing === taskId && !r.stopping && replicas.get(r.spec.id) === r && r.status.node?.task === taskId) {
      if (await proxiedPortAnswers(r.status.host, r.status.port)) {
        if (r.probing !== taskId || r.status.node?.task !== taskId) return;
        r.readyTask = taskId;
        r.probing = null;
        await refresh().catch(() => undefined);
        return;
      }
      await Bun.sleep(100);
    }
    if (r.probing === taskId) r.probing = null;
  }

  function watching(): void {
    if (watch || replicas.size === 0) return;
    const events = new AbortController();
    watch = { timer: setInterval(() => void refresh().catch(() => undefined), opts.pollMs ?? 1000), events };
    void (async () => {
      while (!events.signal.aborted) {
        // Node and service events say at once what the next poll would say a second later.
        await followEvents(engine, { type: ["node", "service"] }, events.signal, () => void refresh().catch(() => undefined)).catch(() => undefined);
        if (!events.signal.aborted) await Bun.sleep(1000);
      }
    })();
  }

  function unwatchIfIdle(): void {
    if (!watch || replicas.size > 0) return;
    clearInterval(watch.timer);
    watch.events.abort();
    watch = null;
  }

  /** Swarm found no node for a replica kept off its siblings' nodes: drop that rule, keep the operator's. */
  async function relax(r: Replica): Promise<void> {
    r.relaxing = true;
    try {
      const svc = await engine.json<{ Version: { Index: number }; Spec: { TaskTemplate: { ContainerSpec: { Image: string }; Placement?: { Constraints?: string[] } } } }>("GET", `/services/${r.serviceId}`);
      const spec = svc.Spec;
      spec.TaskTemplate.Placement = { ...spec.TaskTemplate.Placement, Constraints: (spec.TaskTemplate.Placement?.Constraints ?? []).filter((c) => !r.spread.includes(c)) };
      await engine.call("POST", `/services/${r.serviceId}/update?version=${svc.Version.Index}`, spec, await auth(spec.TaskTemplate.ContainerSpec.Image));
      note(r.spec.id, "no node but its siblings' can take it: placed without spreading");
      r.spread = [];
    } catch (e) {
      note(r.spec.id, `could not let Swarm place it beside its siblings: ${(e as Error).message}`);
    } finally {
      r.relaxing = false;
    }
  }

  /** Keep a replica off the nodes its deployment's other replicas run on, while some other node can take it. */
  function spreadFor(spec: ReplicaSpec): string[] {
    const l = spec.labels ?? {};
    const same = (o: Record<string, string>) => ["project", "environment", "service", "deployment"].every((k) => o[k] === l[k]);
    const taken = new Set([...replicas.values()].filter((r) => !r.stopping && same(r.spec.labels ?? {}) && r.status.node).map((r) => r.status.node!.id));
    const open = [...nodes.values()].filter((n) => n.ready && n.active);
    if (taken.size === 0 || open.every((n) => taken.has(n.id))) return [];
    return [...taken].map((id) => `node.id!=${id}`);
  }

  function inputsOf(kind: "replica" | "run", spec: ServiceInputs["spec"], networkId: string, env: ServiceInputs["env"], secret: ServiceInputs["secret"], port: ServiceInputs["port"], constraints: string[]): ServiceInputs {
    const who = userOf(spec.labels ?? {});
    const restartDelayMs = kind === "replica" ? ((spec as ReplicaSpec).restart?.initialMs ?? 1000) : 0;
    return { kind, instance, spec, networkId, port, env, secret, constraints, limits: opts.limits ?? {}, graceMs, restartDelayMs, user: who ? `${who.uid}:${who.gid}` : null };
  }

  /** Track a replica's service and follow its output (from `sinceMs`); null `masked`: its values are unknown, so its output is not followed. */
  function track(spec: ReplicaSpec, serviceId: string, secretId: string | null, port: number, memoryMb: number | null, spread: string[], sinceMs: number, masked: boolean): Replica {
    const r: Replica = {
      spec,
      serviceId,
      secretId,
      seen: new Set(),
      ended: new Set(),
      stopping: false,
      memoryMb,
      lastNote: "",
      readyTask: null,
      probing: null,
      logs: new AbortController(),
      spread,
      relaxing: false,
      stopped: null,
      status: {
        id: spec.id,
        state: "starting",
        host: "",
        port,
        pid: null,
        restarts: 0,
        startedAt: Date.now(),
        lastExit: null,
        nextRestartAt: null,
        memory: { limitMb: memoryMb, enforced: true, how: memoryMb ? "docker" : null, reason: null },
        notEnforced: [...SWARM_NOT_ENFORCED],
        labels: { ...spec.labels },
        node: null,
      },
    };
    replicas.set(spec.id, r);
    if (!masked) {
      note(spec.id, "its output is not followed: its secret values are not known to this ops (they live in a Swarm secret)");
      return r;
    }
    const mask = maskerOf(spec);
    followServiceLogs(engine, serviceId, r.logs.signal, (line) => {
      const node = line.nodeId ? nodes.get(line.nodeId) : undefined;
      const where = { node: node?.name ?? line.nodeId ?? "", node_addr: node?.addr ?? "", task: line.taskId ?? "" };
      emit(spec.id, line.stream as OutputStream, mask(line.text), { labels: { ...r.status.labels, ...where }, at: line.at });
    }, undefined, sinceMs);
    return r;
  }

  const runtime: SwarmRuntime = {
    kind: "swarm",
    engine,

    nodes: () => [...nodes.values()],

    async start(spec) {
      if (replicas.has(spec.id) || starting.has(spec.id)) throw new RuntimeError(`replica ${spec.id} is already live`);
      starting.add(spec.id);
      let port: number | null = null;
      let secret: { id: string; name: string } | null = null;
      try {
        const target = spec.containerPort ?? 8080;
        const env = splitEnv(spec.env ?? [], spec.masked ?? [], target, spec.image.config.env);
        const [networkId] = await Promise.all([objects.networkFor(spec.labels ?? {}), loadNodes()]);
        const spread = spreadFor(spec);
        port = await objects.allocatePort([...replicas.values()].map((r) => r.status.port));
        secret = await objects.makeSecret(spec.id, "replica", env.secretFile);
        const body = serviceSpecOf(inputsOf("replica", spec, networkId, env, secret, { published: port, target }, [...(spec.placement ?? []), ...spread]));
        const made = await engine.json<{ ID: string }>("POST", "/services/create", body, await auth(spec.image.reference ?? ""));
        const r = track(spec, made.ID, secret?.id ?? null, port, spec.memoryMb ?? (opts.limits?.memoryMb || null), spread, 0, true);
        note(spec.id, limitsLineOf(spec, opts.limits ?? {}, userOf(spec.labels ?? {})?.uid ?? null));
        watching();
        // Placed before it returns, so the next replica of its deployment is spread away from it.
        for (const until = Date.now() + 5000; !r.status.node && Date.now() < until; ) {
          await refresh().catch(() => undefined);
          if (!r.status.node) await Bun.sleep(200);
        }
        return copy(r);
      } catch (e) {
        await objects.removeSecret(secret?.id ?? null).catch(() => undefined);
        throw e instanceof RuntimeError ? e : new RuntimeError((e as Error).message);
      } finally {
        if (port !== null) objects.release(port);
        starting.delete(spec.id);
      }
    },

    async room(want, count) {
      const used = new Map<string, number>();
      for (const r of replicas.values()) if (!r.stopping && r.status.node && r.memoryMb) used.set(r.status.node.id, (used.get(r.status.node.id) ?? 0) + r.memoryMb);
      return roomFor(roomNodes(await engine.json<EngineNode[]>("GET", "/nodes"), want.placement), used, count, want.memoryMb ?? (opts.limits?.memoryMb || null));
    },

    status(id) {
      const r = replicas.get(id);
      return r ? copy(r) : null;
    },

    list() {
      return [...replicas.values()].map(copy);
    },

    stop(id) {
      const r = replicas.get(id);
      if (!r) return Promise.resolve(null);
      r.stopped ??= (async () => {
        r.stopping = true;
        r.status.state = "stopping";
        changed(r);
        // Swarm stops the task with the spec's grace (SIGTERM, then SIGKILL) once its service is gone.
        await engine.call("DELETE", `/services/${r.serviceId}`).catch((e: Error) => {
          if (!/404|not found/i.test(e.message)) note(id, `could not remove its Swarm service: ${e.message}`);
        });
        for (const until = Date.now() + graceMs + 15_000; Date.now() < until; await Bun.sleep(250)) {
          const tasks = await engine.json<EngineTask[]>("GET", `/tasks?filters=${filterOf({ label: [`${L.replica}=${id}`] })}`).catch(() => [] as EngineTask[]);
          // A task on a node that is down is never reported ended: it is gone with its node.
          const live = tasks.filter((t) => t.ServiceID === r.serviceId && ["running", "starting", "preparing", "ready", "assigned", "accepted"].includes(t.Status.State) && nodes.get(t.NodeID ?? "")?.ready !== false);
          if (live.length === 0) break;
        }
        await Bun.sleep(300); // The last lines it wrote on its way out.
        r.logs.abort();
        await objects.removeSecret(r.secretId);
        replicas.delete(id);
        unwatchIfIdle();
        r.status.state = "stopped";
        changed(r);
        return copy(r);
      })();
      return r.stopped;
    },

    async stopAll() {
      await Promise.all([...replicas.keys()].map((id) => runtime.stop(id)));
    },

    run(spec: OneOffSpec) {
      return runOneOff({ engine, spec, auth, objects, inputsOf, onLine: emit });
    },

    async takeOn() {
      type Svc = { ID: string; CreatedAt: string; Spec: { Labels?: Record<string, string>; TaskTemplate: { ContainerSpec: { Image: string; Secrets?: Array<{ SecretID: string }> } } } };
      const services = await engine.json<Svc[]>("GET", `/services?filters=${filterOf({ label: [`${L.instance}=${instance}`] })}`);
      const taken: Replica[] = [];
      for (const s of services) {
        const l = s.Spec.Labels ?? {};
        const id = l[L.replica];
        if (!id || replicas.has(id)) continue;
        // A one-off whose ops went away: nobody waits for it any more.
        if (l[L.kind] !== "replica") {
          await engine.call("DELETE", `/services/${s.ID}`).catch(() => undefined);
          continue;
        }
        const labels = labelsOf(l);
        const masked = opts.maskedOf?.(labels) ?? null;
        const image = { digest: l[L.digest] ?? "", config: { entrypoint: [], cmd: [], env: [], workingDir: "/", exposedPorts: [], labels: {}, user: "" }, reference: s.Spec.TaskTemplate.ContainerSpec.Image };
        const spec: ReplicaSpec = { id, image, labels, masked: masked ?? [] };
        const secretId = s.Spec.TaskTemplate.ContainerSpec.Secrets?.[0]?.SecretID ?? null;
        taken.push(track(spec, s.ID, secretId, Number(l[L.port]), Number(l[L.memory]) || null, [], Date.now(), masked !== null));
      }
      await objects.sweepSecrets().catch(() => 0);
      watching();
      await refresh().catch(() => undefined);
      // What ran before is history: restarts count from here, as after a hand-over.
      for (const r of taken) if (r.status.state === "running" || r.seen.size > 0) r.readyTask ??= r.status.node?.task ?? null;
      await refresh().catch(() => undefined);
      return taken.map(copy);
    },

    detach() {
      for (const r of replicas.values()) {
        r.logs.abort();
        r.probing = null;
      }
      replicas.clear();
      unwatchIfIdle();
    },

    attach(next) {
      hooks = { ...opts, ...next };
      for (const line of held.splice(0)) hooks.onLine?.(...line);
    },
  };
  return runtime;
}
