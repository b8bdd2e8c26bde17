/**
 * The process runtime: each replica is a supervised child of `ops serve` in the bubblewrap sandbox
 * builds run in (src/adapters/sandbox/), with the image's root bound in, started through the project's command runner (process.ts). ops picks a free
 * loopback port and passes it as `PORT`; the replica is `running` once that port accepts
 * connections. A replica that exits on its own is `crashed` and starts again after a delay that
 * doubles per crash up to a cap (and resets after a run that lasted), keeping its port so the
 * ingress's route to it stays valid. `limits.memory_mb` goes into a cgroup (sandbox/cgroups.ts); when no
 * cgroup is writable the replica still runs and its status and output say the limit is not
 * enforced. An OOM kill is read from the group's counters and reported as such.
 *
 * Each replica has its own network namespace (sandbox/netns.ts, DESIGN §6): ops forwards a free
 * port of the host's 127.0.0.1 into it and passes that number as `PORT`, so the app listens on
 * `$PORT` at 127.0.0.1, 0.0.0.0 or [::] inside and the ingress reaches it there, and nothing else
 * on the host does. pasta accepts on the forwarded port whether or not the app listens yet, so
 * readiness is read from the namespace's own socket table instead of a connect. It runs as its
 * project's host user (sandbox/identity.ts).
 *
 * Stop: SIGTERM to the processes inside the sandbox (bwrap itself would die at once and take them
 * along without their grace period), then SIGKILL of the whole group after the grace period: bwrap
 * is pid 1's parent of the sandbox's pid namespace, so its death ends everything inside.
 *
 * `ops restart` (an exec of ops in place, same pid) keeps replicas running (docs/decisions/0390):
 * `handOver` describes every live one and stops watching it, the next image `adopt`s them
 * (handover.ts), and from then on supervision, output, stop and crash restarts go on as before.
 */
import { freeLoopbackPort, startCommand } from "./process";
import { maskerOf, replicaArgv, replicaEnv, type SandboxLimits } from "./replica-env";
import { adoptCommand, startKeptCommand, type KeptCommand } from "./kept";
import { adoptableParts, discardHandover, replicaHandover } from "./handover";
import type { MemoryCgroup, MemoryDetection } from "../sandbox/cgroups";
import type { PidsGroup } from "../sandbox/pids";
import { emptyAll } from "../sandbox/group-end";
import { politeTargets } from "../sandbox/bwrap";
import type { SandboxIdentity } from "../sandbox/users";
import type { Netns, SandboxNetwork } from "../sandbox";
import { replicaSandbox } from "./replica-sandbox";
import { tcpAccepts } from "./probe";
import { RuntimeError, type HandingOverRuntime, type MemoryStatus, type OneOffResult, type ReplicaHandover, type ReplicaSpec, type ReplicaStatus, type RestartPolicy, type RuntimeHooks } from "./types";

export interface ProcessRuntimeOptions extends RuntimeHooks {
  /** How memory limits are enforced; detected on first use when omitted. */
  memory?: MemoryDetection;
  /** The host user a replica runs as when ops is root, from its labels (its project's); default nobody. */
  identityOf?: (labels: Record<string, string>) => SandboxIdentity;
  /** Network namespaces of replicas and one-off runs; omitted: the host's network. */
  network?: SandboxNetwork;
  /** Default grace period of `stop` (10 s). */
  graceMs?: number;
  /** Sandbox limits (DESIGN §6): see `SandboxLimits`. */
  limits?: SandboxLimits;
}

const DEFAULT_RESTART: RestartPolicy = { initialMs: 1000, maxMs: 30_000, resetAfterMs: 60_000 };
const READY_POLL_MS = 100;

interface Replica {
  spec: ReplicaSpec;
  status: ReplicaStatus;
  policy: RestartPolicy;
  delayMs: number;
  run: KeptCommand | null;
  /** Bumped per run, so a stale readiness poll of an earlier run stops. */
  generation: number;
  cgroup: MemoryCgroup | null;
  pids: PidsGroup | null;
  oomBase: number;
  restartTimer: ReturnType<typeof setTimeout> | null;
  stopRequested: boolean;
  /** Resolves when the current run's exit was handled. */
  exited: Promise<void> | null;
  /** Its network namespace (kept across restarts, so its port stays), or null on the host's network. */
  netns: Netns | null;
}

export { replicaArgv, replicaEnv, type SandboxLimits } from "./replica-env";
export { freeLoopbackPort } from "./process";

export function createProcessRuntime(opts: ProcessRuntimeOptions = {}): HandingOverRuntime {
  const replicas = new Map<string, Replica>();
  const note = (r: Replica, line: string) => opts.onLine?.(r.spec.id, "ops", line);
  const changed = (r: Replica) => opts.onState?.({ ...r.status });
  const sandbox = replicaSandbox(opts);
  const { tools, memoryFor, pidsFor, inSandbox, netnsFor } = sandbox;

  async function watchReady(r: Replica, generation: number): Promise<void> {
    while (r.generation === generation && r.status.state === "starting") {
      const ready = r.netns ? r.netns.listening(r.status.port) : (await tcpAccepts(r.status.host, r.status.port, 500)) === null;
      if (ready) {
        if (r.generation === generation && r.status.state === "starting") {
          r.status.state = "running";
          changed(r);
        }
        return;
      }
      await Bun.sleep(READY_POLL_MS);
    }
  }

  function launch(r: Replica): void {
    const { spec } = r;
    const image = spec.image;
    const command = inSandbox(image, replicaArgv(image.config.entrypoint, image.config.cmd, spec.command), r.cgroup, spec.labels?.service ?? "replica", r.pids, spec.labels ?? {}, r.netns);
    r.generation++;
    r.oomBase = r.cgroup?.oomKills() ?? 0;
    const run = startKeptCommand({
      command,
      cwd: "/",
      env: replicaEnv(image.config.env, spec.env ?? [], r.status.port),
      onLine: (stream, line) => opts.onLine?.(spec.id, stream, line),
      mask: maskerOf(spec),
      politeTargets,
    });
    r.status.state = "starting";
    r.status.pid = run.pid;
    r.status.startedAt = Date.now();
    r.status.nextRestartAt = null;
    watch(r, run);
    changed(r);
  }

  /** Supervise `run` as the replica's current process (started here, or adopted). */
  function watch(r: Replica, run: KeptCommand): void {
    r.run = run;
    if (r.status.state === "starting") void watchReady(r, r.generation);
    r.exited = run.done.then((res) => onExit(r, res), (e) => onExit(r, { exitCode: null, signal: null, error: e }));
  }

  async function onExit(r: Replica, res: { exitCode: number | null; signal: string | null; error?: unknown }): Promise<void> {
    r.generation++;
    r.run = null;
    // Reported ended only once its sandbox is empty; what the kernel keeps alive past the bound is noted (decision 0511).
    await emptyAll([r.cgroup, r.pids]).catch((e: Error) => note(r, e.message));
    const oomKilled = r.cgroup !== null && r.cgroup.oomKills() > r.oomBase;
    const at = Date.now();
    r.status.lastExit = { code: res.exitCode, signal: res.signal, oomKilled, at };
    r.status.pid = null;
    const how = oomKilled
      ? `was killed: over its memory limit of ${r.status.memory.limitMb} MiB`
      : res.signal
        ? `was ended by ${res.signal}`
        : `exited with code ${res.exitCode}`;
    if (r.stopRequested) {
      note(r, `stopped (${how})`);
      await finish(r);
      return;
    }
    const ran = at - (r.status.startedAt ?? at);
    if (ran >= r.policy.resetAfterMs) r.delayMs = r.policy.initialMs;
    const delay = r.delayMs;
    r.delayMs = Math.min(r.delayMs * 2, r.policy.maxMs);
    r.status.state = "crashed";
    r.status.nextRestartAt = at + delay;
    note(r, `${how}; restarting in ${delay} ms`);
    changed(r);
    r.restartTimer = setTimeout(() => {
      r.restartTimer = null;
      if (r.stopRequested) return;
      r.status.restarts++;
      try {
        launch(r);
      } catch (e) {
        note(r, `could not restart: ${(e as Error).message}`);
        void onExit(r, { exitCode: null, signal: null, error: e });
      }
    }, delay);
  }

  async function finish(r: Replica): Promise<void> {
    r.status.state = "stopped";
    r.status.pid = null;
    r.status.nextRestartAt = null;
    await r.cgroup?.remove();
    await r.pids?.remove();
    await r.netns?.close();
    changed(r);
  }

  const runtime: HandingOverRuntime = {
    kind: "process",

    async start(spec) {
      const live = replicas.get(spec.id);
      if (live && live.status.state !== "stopped") throw new RuntimeError(`replica ${spec.id} is already live`);
      if (!spec.image.root) throw new RuntimeError(`image ${spec.image.digest} has no unpacked root: unpack it first`);
      if (replicaArgv(spec.image.config.entrypoint, spec.image.config.cmd, spec.command).length === 0) {
        throw new RuntimeError(`image ${spec.image.digest} has no Entrypoint or Cmd, and no command was given`);
      }
      tools();
      const netns = await netnsFor(true);
      const mem = memoryFor(spec);
      const pids = pidsFor(spec, mem);
      const r: Replica = {
        spec,
        policy: { ...DEFAULT_RESTART, ...spec.restart },
        delayMs: spec.restart?.initialMs ?? DEFAULT_RESTART.initialMs,
        run: null,
        generation: 0,
        cgroup: mem.cgroup,
        pids: pids.group,
        oomBase: 0,
        restartTimer: null,
        stopRequested: false,
        exited: null,
        netns,
        status: {
          id: spec.id,
          state: "starting",
          host: "127.0.0.1",
          port: netns?.port ?? freeLoopbackPort(),
          netns: netns?.inside() ?? null,
          pid: null,
          restarts: 0,
          startedAt: null,
          lastExit: null,
          nextRestartAt: null,
          memory: mem.status,
          notEnforced: pids.notEnforced,
          labels: { ...spec.labels },
        },
      };
      replicas.set(spec.id, r);
      note(r, sandbox.limitsLine(mem, pids, netns, spec.labels ?? {}));
      for (const what of pids.notEnforced) note(r, what);
      if (opts.network?.note) note(r, opts.network.note);
      try {
        launch(r);
      } catch (e) {
        replicas.delete(spec.id);
        await mem.cgroup?.remove();
        await pids.group?.remove();
        await netns?.close();
        throw new RuntimeError(`replica ${spec.id} could not start: ${(e as Error).message}`);
      }
      return { ...r.status };
    },

    status(id) {
      const r = replicas.get(id);
      return r ? { ...r.status, labels: { ...r.status.labels } } : null;
    },

    list() {
      return [...replicas.values()].map((r) => ({ ...r.status }));
    },

    async stop(id, graceMs = opts.graceMs ?? 10_000) {
      const r = replicas.get(id);
      if (!r) return null;
      r.stopRequested = true;
      if (r.restartTimer) {
        clearTimeout(r.restartTimer);
        r.restartTimer = null;
      }
      if (r.run) {
        r.status.state = "stopping";
        changed(r);
        r.run.stop(graceMs);
      }
      if (r.exited) await r.exited;
      if (r.status.state !== "stopped") await finish(r);
      replicas.delete(id);
      return { ...r.status };
    },

    async stopAll(graceMs) {
      await Promise.all([...replicas.keys()].map((id) => runtime.stop(id, graceMs)));
    },

    handOver() {
      const out: ReplicaHandover[] = [];
      const fds: number[] = [];
      for (const r of [...replicas.values()]) {
        // Only a replica with a process of its own goes over; one stopping or waiting to restart is stopped as before.
        if (!r.run || r.stopRequested || (r.status.state !== "running" && r.status.state !== "starting")) continue;
        r.generation++; // its readiness poll ends
        const h = replicaHandover(r, r.run);
        out.push(h.record);
        fds.push(...h.fds);
        r.run = null;
        replicas.delete(r.spec.id);
      }
      return { replicas: out, fds };
    },

    adopt(list) {
      const results: Array<{ id: string; adopted: boolean; reason: string | null }> = [];
      for (const h of list) {
        const id = h.spec.id;
        const parts = adoptableParts(h, opts.network, replicas.has(id));
        if (parts.reason !== null) {
          void discardHandover(h, parts.netns).catch((e) => opts.onLine?.(id, "ops", `could not clean up after it: ${(e as Error).message}`));
          results.push({ id, adopted: false, reason: parts.reason });
          continue;
        }
        const r: Replica = { ...parts, spec: h.spec, status: { ...h.status, labels: { ...h.status.labels } }, policy: h.policy, delayMs: h.delayMs, run: null, generation: 0, oomBase: h.oomBase, restartTimer: null, stopRequested: false, exited: null };
        replicas.set(id, r);
        watch(r, adoptCommand(h.command, { onLine: (stream, line) => opts.onLine?.(id, stream, line), politeTargets, mask: maskerOf(h.spec) }));
        note(r, `kept running across a restart of ops (pid ${h.command.pid})`);
        changed(r);
        results.push({ id, adopted: true, reason: null });
      }
      return results;
    },

    async run(spec) {
      if (!spec.image.root) throw new RuntimeError(`image ${spec.image.digest} has no unpacked root: unpack it first`);
      tools();
      const netns = await netnsFor(false);
      const mem = memoryFor(spec);
      const pids = pidsFor(spec, mem);
      opts.onLine?.(spec.id, "ops", sandbox.limitsLine(mem, pids, netns, spec.labels ?? {}));
      for (const what of pids.notEnforced) opts.onLine?.(spec.id, "ops", what);
      if (opts.network?.note) opts.onLine?.(spec.id, "ops", opts.network.note);
      const tail: string[] = [];
      try {
        const run = startCommand({
          command: inSandbox(spec.image, ["/bin/sh", "-c", spec.command], mem.cgroup, spec.labels?.service ?? "release", pids.group, spec.labels ?? {}, netns),
          cwd: "/",
          env: replicaEnv(spec.image.config.env, spec.env ?? [], freeLoopbackPort()),
          timeoutMs: spec.timeoutMs,
          mask: maskerOf(spec),
          onLine: (stream, line) => {
            tail.push(line);
            if (tail.length > 20) tail.shift();
            opts.onLine?.(spec.id, stream, line);
          },
          politeTargets,
        });
        const res = await run.done;
        await emptyAll([mem.cgroup, pids.group]); // returns once its sandbox is empty, else rejects naming what is left (decision 0511)
        const oomKilled = (mem.cgroup?.oomKills() ?? 0) > 0;
        return { code: res.exitCode, signal: res.signal, oomKilled, timedOut: res.timedOut, tail } satisfies OneOffResult;
      } finally {
        await mem.cgroup?.remove();
        await pids.group?.remove();
        await netns?.close();
      }
    },
  };
  return runtime;
}
