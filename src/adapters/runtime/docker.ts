/**
 * The Docker Engine runtime (`OPS_RUNTIME=docker`), for hosts that run Docker: the same interface
 * as the process runtime, over the Engine API (v1.41, Docker 20.10+) on its Unix socket
 * (`OPS_DOCKER_SOCKET`). Deliberately small, and not exercised by the test suite (no Docker here)
 * beyond failing clearly without its socket. Per replica:
 * - `POST /images/create` pulls `image.reference` (the embedded registry's address with the
 *   digest; `registryAuth` supplies short-lived credentials for it);
 * - `POST /containers/create` named `ops-<id>`: Entrypoint/Cmd from the image unless `command`
 *   overrides them (`/bin/sh -c`), Env = the caller's variables then `PORT=<containerPort>`,
 *   the container port published on 127.0.0.1:<a free port> (what the ingress routes to),
 *   `Memory` = limits.memory_mb, restart policy `on-failure` (Docker's own doubling backoff);
 * - `POST /containers/{id}/start`, then the log stream (`follow`, multiplexed stdout/stderr
 *   frames) handed over line by line, its secret values masked (`masked`);
 * - state by polling `GET /containers/{id}/json` every second (status, restart count, OOMKilled);
 * - stop: `POST /containers/{id}/stop?t=<grace>` (SIGTERM, then SIGKILL), then remove;
 * - a one-off command (a release step): a container with restart policy `no`, its logs followed,
 *   `POST /containers/{id}/wait` for the exit code (stopped past the timeout), then removed.
 */
import { freeLoopbackPort } from "./process-runtime";
import { engineClient, followLogs } from "./engine-api";
import { maskerOf } from "./replica-env";
import { RuntimeError, type OutputStream, type ReplicaSpec, type ReplicaStatus, type Runtime, type RuntimeHooks } from "./types";

export interface DockerRuntimeOptions extends RuntimeHooks {
  socket: string;
  /** Credentials the engine presents to the registry the images come from. */
  registryAuth?: () => { username: string; password: string; serveraddress: string };
  graceMs?: number;
}

interface Container {
  spec: ReplicaSpec;
  containerId: string;
  status: ReplicaStatus;
  poll: ReturnType<typeof setInterval>;
  logs: AbortController;
}

export function createDockerRuntime(opts: DockerRuntimeOptions): Runtime {
  const containers = new Map<string, Container>();

  const engine = engineClient({ host: opts.socket });
  const call = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => engine.call(method, p, body, headers);

  /** The container's log stream, line by line. */
  async function follow(c: Pick<Container, "containerId" | "logs">, emit: (stream: OutputStream, line: string) => void): Promise<void> {
    await followLogs(await call("GET", `/containers/${c.containerId}/logs?follow=1&stdout=1&stderr=1`), c.logs.signal, emit);
  }

  async function refresh(c: Container): Promise<void> {
    const info = (await (await call("GET", `/containers/${c.containerId}/json`)).json()) as {
      State: { Status: string; ExitCode: number; OOMKilled: boolean; StartedAt: string; FinishedAt: string; Pid: number };
      RestartCount: number;
    };
    const s = info.State;
    const state = s.Status === "running" ? "running" : s.Status === "restarting" || s.Status === "exited" ? "crashed" : s.Status === "created" ? "starting" : c.status.state;
    const changed = state !== c.status.state || info.RestartCount !== c.status.restarts;
    c.status.state = state;
    c.status.restarts = info.RestartCount;
    c.status.pid = s.Pid || null;
    c.status.startedAt = Date.parse(s.StartedAt) || null;
    if (state === "crashed") c.status.lastExit = { code: s.ExitCode, signal: null, oomKilled: s.OOMKilled, at: Date.parse(s.FinishedAt) || Date.now() };
    if (changed) opts.onState?.({ ...c.status });
  }

  /** Pull the image's reference; resolves once the engine has it. */
  async function pull(image: ReplicaSpec["image"]): Promise<string> {
    const ref = image.reference;
    if (!ref) throw new RuntimeError(`image ${image.digest} has no registry reference for the Docker Engine to pull`);
    const at = ref.lastIndexOf("@");
    const auth: Record<string, string> = opts.registryAuth ? { "x-registry-auth": Buffer.from(JSON.stringify(opts.registryAuth())).toString("base64url") } : {};
    const res = await call("POST", `/images/create?fromImage=${encodeURIComponent(at > 0 ? ref.slice(0, at) : ref)}${at > 0 ? `&tag=${encodeURIComponent(ref.slice(at + 1))}` : ""}`, undefined, auth);
    await res.text(); // The pull finishes when its progress stream ends.
    return ref;
  }

  const runtime: Runtime = {
    kind: "docker",

    async start(spec) {
      if (containers.has(spec.id)) throw new RuntimeError(`replica ${spec.id} is already live`);
      const ref = await pull(spec.image);
      const containerPort = spec.containerPort ?? 8080;
      const hostPort = freeLoopbackPort();
      const created = (await (
        await call("POST", `/containers/create?name=ops-${encodeURIComponent(spec.id)}`, {
          Image: ref,
          ...(spec.command ? { Entrypoint: ["/bin/sh", "-c"], Cmd: [spec.command] } : {}),
          Env: [...(spec.env ?? []).map(([k, v]) => `${k}=${v}`), `PORT=${containerPort}`],
          Labels: { "dev.ops.replica": spec.id, ...spec.labels },
          ExposedPorts: { [`${containerPort}/tcp`]: {} },
          HostConfig: {
            PortBindings: { [`${containerPort}/tcp`]: [{ HostIp: "127.0.0.1", HostPort: String(hostPort) }] },
            RestartPolicy: { Name: "on-failure" },
            ...(spec.memoryMb ? { Memory: spec.memoryMb * 1024 * 1024, MemorySwap: spec.memoryMb * 1024 * 1024 } : {}),
          },
        })
      ).json()) as { Id: string };
      await call("POST", `/containers/${created.Id}/start`);
      const c: Container = {
        spec,
        containerId: created.Id,
        logs: new AbortController(),
        poll: setInterval(() => void refresh(c).catch(() => undefined), 1000),
        status: {
          id: spec.id,
          state: "starting",
          host: "127.0.0.1",
          port: hostPort,
          pid: null,
          restarts: 0,
          startedAt: Date.now(),
          lastExit: null,
          nextRestartAt: null,
          memory: { limitMb: spec.memoryMb ?? null, enforced: true, how: spec.memoryMb ? "docker" : null, reason: null },
          notEnforced: ["the process limit is not enforced: the Docker runtime sets none (the engine's defaults apply)", "/tmp is not sized: the Docker runtime leaves it on the container's layer"],
          labels: { ...spec.labels },
        },
      };
      containers.set(spec.id, c);
      const mask = maskerOf(spec);
      void follow(c, (stream, line) => opts.onLine?.(spec.id, stream, mask(line))).catch((e) => opts.onLine?.(spec.id, "ops", `log stream ended: ${(e as Error).message}`));
      return { ...c.status };
    },

    status(id) {
      const c = containers.get(id);
      return c ? { ...c.status } : null;
    },

    list() {
      return [...containers.values()].map((c) => ({ ...c.status }));
    },

    async stop(id, graceMs = opts.graceMs ?? 10_000) {
      const c = containers.get(id);
      if (!c) return null;
      c.status.state = "stopping";
      opts.onState?.({ ...c.status });
      await call("POST", `/containers/${c.containerId}/stop?t=${Math.ceil(graceMs / 1000)}`).catch(() => undefined);
      await call("DELETE", `/containers/${c.containerId}?force=1`).catch(() => undefined);
      clearInterval(c.poll);
      c.logs.abort();
      containers.delete(id);
      c.status.state = "stopped";
      c.status.pid = null;
      opts.onState?.({ ...c.status });
      return { ...c.status };
    },

    async stopAll(graceMs) {
      await Promise.all([...containers.keys()].map((id) => runtime.stop(id, graceMs)));
    },

    async run(spec) {
      const ref = await pull(spec.image);
      const created = (await (
        await call("POST", `/containers/create?name=ops-${encodeURIComponent(spec.id)}`, {
          Image: ref,
          Entrypoint: ["/bin/sh", "-c"],
          Cmd: [spec.command],
          Env: (spec.env ?? []).map(([k, v]) => `${k}=${v}`),
          Labels: { "dev.ops.release": spec.id, ...spec.labels },
          HostConfig: { RestartPolicy: { Name: "no" }, ...(spec.memoryMb ? { Memory: spec.memoryMb * 1024 * 1024, MemorySwap: spec.memoryMb * 1024 * 1024 } : {}) },
        })
      ).json()) as { Id: string };
      const tail: string[] = [];
      const logs = new AbortController();
      let timedOut = false;
      try {
        await call("POST", `/containers/${created.Id}/start`);
        const mask = maskerOf(spec);
        const lines = follow({ containerId: created.Id, logs }, (stream, raw) => {
          const line = mask(raw);
          tail.push(line);
          if (tail.length > 20) tail.shift();
          opts.onLine?.(spec.id, stream, line);
        }).catch(() => undefined);
        const timer = setTimeout(() => {
          timedOut = true;
          void call("POST", `/containers/${created.Id}/stop?t=10`).catch(() => undefined);
        }, spec.timeoutMs);
        const waited = (await (await call("POST", `/containers/${created.Id}/wait`)).json()) as { StatusCode: number };
        clearTimeout(timer);
        const info = (await (await call("GET", `/containers/${created.Id}/json`)).json()) as { State: { OOMKilled: boolean } };
        await Promise.race([lines, Bun.sleep(1000)]);
        return { code: waited.StatusCode, signal: null, oomKilled: info.State.OOMKilled, timedOut, tail };
      } finally {
        logs.abort();
        await call("DELETE", `/containers/${created.Id}?force=1`).catch(() => undefined);
      }
    },
  };
  return runtime;
}
