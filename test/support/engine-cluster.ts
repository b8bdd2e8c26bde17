/**
 * Real Docker engines for the runtime suites, on this one machine (the layout of DESIGN §4's
 * one-host Swarm, checked on Debian's docker.io 20.10): every engine is a `dockerd` in a network
 * namespace of its own, its veth in a bridge that lives in a namespace of its own too, and the host
 * namespace reaches that bridge at `<subnet>.254` on one veth. Nothing is routed anywhere else: the
 * nodes have no default route, so an image pull from anywhere but the caller's registry fails at
 * once. Names (namespaces, the host's veth, cgroups, the folder) carry this process's pid and a
 * counter, and the subnet is one the host has no route to yet, so concurrent suites never meet.
 *
 * - `startEngine()`: one engine with its default bridge (published ports on its address), for the
 *   Docker runtime.
 * - `startSwarm(n)`: n engines with no bridge of their own, one Swarm (heartbeat 1 s), an
 *   attachable overlay network; services publish in host mode with `--endpoint-mode dnsrr` (the
 *   kernel here has no IPVS, so there is no routing mesh).
 *
 * dockerd runs as `nsenter --net=… unshare --mount --uts` rather than `ip netns exec` (which
 * remounts /sys and hides the cgroup v1 mounts); its own mount namespace takes its mounts with it
 * when it dies. `stop()` removes everything by pid and by name and `leftovers()` says what is left.
 */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { engineClient, type EngineClient } from "../../src/adapters/runtime/engine-api";
import { busyboxTar } from "./engine-images";
import { until } from "../runtime-fixtures";

/** Debian's 20.10 daemon and client, by path: /usr/local/bin/docker here is a newer client. */
export const DOCKERD = "/usr/sbin/dockerd";
export const DOCKER = "/usr/bin/docker";
const SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

export interface Exec {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run a command to its end (killed past `timeoutMs`); throws on a non-zero exit unless `allowFail`. */
export async function exec(argv: string[], opts: { env?: Record<string, string>; timeoutMs?: number; allowFail?: boolean } = {}): Promise<Exec> {
  const p = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { PATH: SYSTEM_PATH, ...opts.env } });
  const timer = setTimeout(() => p.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  if (code !== 0 && !opts.allowFail) throw new Error(`${argv.join(" ")} exited with ${code}: ${stderr.trim() || stdout.trim()}`);
  return { code, stdout, stderr };
}

const ip = (...args: string[]) => exec(["ip", ...args]);

/** Poll `check` every `every` ms until it returns a value (not undefined, null or false); fail after `ms`. */
export function waitFor<T>(what: string, check: () => T | false | null | undefined | Promise<T | false | null | undefined>, ms = 30_000, every = 200): Promise<T> {
  return until(what, check, ms, every);
}

export interface EngineNode {
  /** 1..n */
  index: number;
  hostname: string;
  netns: string;
  /** Its address on the bridge, reachable from the host namespace. */
  address: string;
  socket: string;
  dir: string;
  /** The dockerd's pid while it runs. */
  pid: number | null;
  engine: EngineClient;
}

export interface EngineClusterOptions {
  /** Registries the nodes may reach over plain HTTP (`host:port`): a list, or made from the host namespace's address on the bridge. */
  insecureRegistries?: string[] | ((hostAddress: string) => string[]);
}

export interface Leftovers {
  processes: number[];
  netns: string[];
  links: string[];
  mounts: string[];
  cgroups: string[];
  dir: boolean;
}

export interface EngineCluster {
  /** The prefix of every name this cluster made. */
  name: string;
  /** `10.x.y.0/24`. */
  subnet: string;
  /** The host namespace's address on the bridge. */
  hostAddress: string;
  nodes: EngineNode[];
  /** How long it took to come up, ms. */
  setupMs: number;
  /** Debian's client against node `i` (1-based). */
  docker(i: number, args: string[], opts?: { timeoutMs?: number; allowFail?: boolean }): Promise<Exec>;
  /** `docker import` a busybox image as `tag` on every node (or the ones given): `files` added, `cmd` its CMD. */
  importImage(tag: string, opts?: { files?: Record<string, string | Uint8Array>; cmd?: string[]; nodes?: number[] }): Promise<void>;
  /** kill -9 of node `i`'s dockerd; resolves with the pid once it is gone. */
  killDaemon(i: number): Promise<number>;
  /** Start node `i`'s dockerd again (same data); resolves once it answers. */
  restartDaemon(i: number): Promise<void>;
  /** Tear everything down; resolves with what is left (nothing, unless something went wrong). */
  stop(): Promise<Leftovers>;
  /** What of this cluster still exists. */
  leftovers(): Leftovers;
}

let counter = 0;

/** A /24 in 10.0.0.0/8 that no address or route of the host's touches, derived from the pid. */
async function freeSubnet(): Promise<string> {
  const used = (await ip("-4", "route", "show", "table", "all")).stdout + (await ip("-4", "-o", "addr")).stdout;
  const a = 100 + ((process.pid >> 8) % 100);
  let b = (process.pid + counter * 17) % 256;
  for (let k = 0; k < 256; k++, b = (b + 1) % 256) {
    if (!used.includes(`10.${a}.${b}.`)) return `10.${a}.${b}`;
  }
  throw new Error(`no free /24 in 10.${a}.0.0/16`);
}

async function waitPing(socket: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const res = await fetch("http://docker/_ping", { unix: socket } as RequestInit);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await Bun.sleep(100);
  }
  throw new Error(`dockerd on ${socket} did not answer within ${ms} ms`);
}

/** Live processes whose command line names `text`. */
function processesNaming(text: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text) && alive(Number(pid))) out.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z");
  } catch {
    return false;
  }
};

async function makeCluster(n: number, mode: "engine" | "swarm", opts: EngineClusterOptions): Promise<EngineCluster> {
  const t0 = performance.now();
  const name = `o${process.pid}x${++counter}`;
  const base = path.join(tmpdir(), name);
  const net = await freeSubnet();
  const hostVeth = `${name}h`;
  const brNs = `${name}-br`;
  const nodes: EngineNode[] = [];
  const procs = new Map<number, ReturnType<typeof Bun.spawn>>();
  mkdirSync(path.join(base, "dockercfg"), { recursive: true });

  const cluster: EngineCluster = {
    name,
    subnet: `${net}.0/24`,
    hostAddress: `${net}.254`,
    nodes,
    setupMs: 0,
    docker: (i, args, o = {}) => exec([DOCKER, "-H", `unix://${nodes[i - 1]!.socket}`, ...args], { env: { DOCKER_CONFIG: path.join(base, "dockercfg") }, timeoutMs: o.timeoutMs ?? 150_000, allowFail: o.allowFail }),
    async importImage(tag, o = {}) {
      const tar = path.join(base, `image-${tag.replace(/[^A-Za-z0-9]/g, "_")}.tar`);
      writeFileSync(tar, await busyboxTar(o.files ?? {}));
      const change = o.cmd ? ["--change", `CMD ${JSON.stringify(o.cmd)}`] : [];
      await Promise.all((o.nodes ?? nodes.map((x) => x.index)).map((i) => cluster.docker(i, ["import", ...change, tar, tag])));
    },
    async killDaemon(i) {
      const node = nodes[i - 1]!;
      const pid = node.pid;
      if (!pid) throw new Error(`node ${i} has no dockerd running`);
      process.kill(pid, "SIGKILL");
      await procs.get(pid)?.exited;
      procs.delete(pid);
      node.pid = null;
      return pid;
    },
    async restartDaemon(i) {
      const node = nodes[i - 1]!;
      // Its containerd outlives a kill -9 for a moment; a dockerd started meanwhile gives up on it ("timeout waiting for containerd").
      const config = `${node.dir}/exec/containerd/containerd.toml`;
      await waitFor("the killed dockerd's containerd to end", () => !processesNaming(config).length, 30_000, 100);
      await startDaemon(node);
    },
    stop: () => stopCluster(),
    leftovers,
  };

  async function startDaemon(node: EngineNode): Promise<void> {
    const flags = [`--iptables=false`, `--ip-forward=false`, `--ip-masq=false`, ...(mode === "swarm" ? ["--bridge=none"] : []), `--storage-driver=vfs`];
    const dockerd = [DOCKERD, ...flags, "-H", `unix://${node.socket}`, "--data-root", `${node.dir}/data`, "--exec-root", `${node.dir}/exec`, "--pidfile", `${node.dir}/docker.pid`, "--config-file", `${node.dir}/daemon.json`];
    const log = openSync(`${node.dir}/dockerd.log`, "a"); // appended to: a restart's lines follow the first run's
    const p = Bun.spawn(["nsenter", `--net=/run/netns/${node.netns}`, "unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c", `hostname ${node.hostname}; exec ${dockerd.join(" ")}`], {
      stdin: "ignore",
      stdout: log,
      stderr: log,
      env: { PATH: SYSTEM_PATH },
    });
    closeSync(log);
    p.unref();
    procs.set(p.pid, p);
    node.pid = p.pid; // nsenter, unshare and sh each exec the next: this is dockerd's pid
    try {
      await waitPing(node.socket, 60_000);
    } catch (e) {
      const log = existsSync(`${node.dir}/dockerd.log`) ? readFileSync(`${node.dir}/dockerd.log`, "utf8").split("\n").slice(-8).join("\n") : "";
      throw new Error(`${(e as Error).message}\n${log}`);
    }
  }

  function leftovers(): Leftovers {
    const processes = processesNaming(base + "/");
    for (const pid of procs.keys()) if (alive(pid) && !processes.includes(pid)) processes.push(pid);
    const cgroups: string[] = [];
    for (const ctl of readdirSync("/sys/fs/cgroup")) {
      for (const node of nodes) if (existsSync(`/sys/fs/cgroup/${ctl}/${node.hostname}`)) cgroups.push(`/sys/fs/cgroup/${ctl}/${node.hostname}`);
    }
    return {
      processes,
      netns: existsSync("/run/netns") ? readdirSync("/run/netns").filter((x) => x.startsWith(`${name}-`)) : [],
      links: existsSync(`/sys/class/net/${hostVeth}`) ? [hostVeth] : [],
      mounts: readFileSync("/proc/self/mounts", "utf8").split("\n").filter((l) => l.includes(` ${base}/`) || l.includes(` ${base} `)),
      cgroups,
      dir: existsSync(base),
    };
  }

  async function stopCluster(): Promise<Leftovers> {
    const quiet = async (f: () => Promise<unknown>) => {
      try {
        await f();
      } catch {
        // best effort: what fails here is swept up by pid and by name below
      }
    };
    // Services first (else Swarm starts their tasks again), then every container: busybox as PID 1 ignores SIGTERM.
    const up = nodes.filter((x) => x.pid && existsSync(x.socket));
    if (mode === "swarm" && up.some((x) => x.index === 1)) {
      await quiet(async () => {
        const services = await nodes[0]!.engine.json<Array<{ ID: string }>>("GET", "/services");
        await Promise.all(services.map((s) => nodes[0]!.engine.call("DELETE", `/services/${s.ID}`)));
      });
    }
    await Promise.all(
      up.map((node) =>
        quiet(async () => {
          const list = await node.engine.json<Array<{ Id: string }>>("GET", "/containers/json?all=1");
          await Promise.all(list.map((c) => node.engine.call("DELETE", `/containers/${c.Id}?force=1`).catch(() => undefined)));
          if (mode === "swarm") await node.engine.call("POST", "/swarm/leave?force=1").catch(() => undefined);
        }),
      ),
    );
    for (const node of nodes) if (node.pid && alive(node.pid)) process.kill(node.pid, "SIGTERM");
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && nodes.some((x) => x.pid && alive(x.pid))) await Bun.sleep(100);
    // Anything left: containers' processes (in our cgroups), shims and proxies (in our namespaces or naming our folder).
    const strays = new Set<number>(leftovers().processes);
    for (const node of nodes) {
      for (const ctl of ["pids", "memory", "cpu"]) {
        const dir = `/sys/fs/cgroup/${ctl}/${node.hostname}`;
        if (!existsSync(dir)) continue;
        for (const sub of readdirSync(dir, { withFileTypes: true })) {
          if (!sub.isDirectory()) continue;
          for (const p of readFileSync(path.join(dir, sub.name, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) strays.add(Number(p));
        }
      }
      const inNs = await exec(["ip", "netns", "pids", node.netns], { allowFail: true });
      for (const p of inNs.stdout.split("\n").filter(Boolean)) strays.add(Number(p));
    }
    for (const p of strays) {
      try {
        process.kill(p, "SIGKILL");
      } catch {
        // already gone
      }
    }
    const until = Date.now() + 10_000;
    while (Date.now() < until && [...strays].some(alive)) await Bun.sleep(50);
    for (const m of leftovers().mounts.map((l) => l.split(" ")[1]!).sort().reverse()) await exec(["umount", "-l", m], { allowFail: true });
    for (const dir of leftovers().cgroups) removeTree(dir);
    await exec(["ip", "link", "del", hostVeth], { allowFail: true });
    for (const node of nodes) await exec(["ip", "netns", "del", node.netns], { allowFail: true });
    await exec(["ip", "netns", "del", brNs], { allowFail: true });
    rmSync(base, { recursive: true, force: true });
    return leftovers();
  }

  try {
    await ip("netns", "add", brNs);
    await ip("-n", brNs, "link", "set", "lo", "up");
    await ip("-n", brNs, "link", "add", "br0", "type", "bridge");
    await ip("-n", brNs, "link", "set", "br0", "up");
    for (let i = 1; i <= n; i++) {
      const node: EngineNode = { index: i, hostname: `${name}-n${i}`, netns: `${name}-n${i}`, address: `${net}.${i}`, socket: path.join(base, `d${i}.sock`), dir: path.join(base, `n${i}`), pid: null, engine: engineClient({ host: path.join(base, `d${i}.sock`) }) };
      nodes.push(node);
      await ip("netns", "add", node.netns);
      await ip("-n", node.netns, "link", "set", "lo", "up");
      await ip("link", "add", `${name}v${i}`, "netns", node.netns, "type", "veth", "peer", "name", `p${i}`, "netns", brNs);
      await ip("-n", node.netns, "link", "set", `${name}v${i}`, "name", "eth0");
      await ip("-n", node.netns, "addr", "add", `${node.address}/24`, "dev", "eth0");
      await ip("-n", node.netns, "link", "set", "eth0", "up");
      await ip("-n", brNs, "link", "set", `p${i}`, "master", "br0");
      await ip("-n", brNs, "link", "set", `p${i}`, "up");
      mkdirSync(node.dir, { recursive: true });
      writeFileSync(
        `${node.dir}/daemon.json`,
        JSON.stringify({
          "deprecated-key-path": `${node.dir}/key.json`,
          "cgroup-parent": `/${node.hostname}`,
          // Inside the node's own namespaces only: the host never routes these.
          "default-address-pools": [{ base: "172.30.0.0/16", size: 24 }],
          "insecure-registries": typeof opts.insecureRegistries === "function" ? opts.insecureRegistries(`${net}.254`) : (opts.insecureRegistries ?? []),
        }),
      );
    }
    await ip("link", "add", hostVeth, "type", "veth", "peer", "name", "ph", "netns", brNs);
    await ip("-n", brNs, "link", "set", "ph", "master", "br0");
    await ip("-n", brNs, "link", "set", "ph", "up");
    await ip("addr", "add", `${net}.254/24`, "dev", hostVeth);
    await ip("link", "set", hostVeth, "up");
    await Promise.all(nodes.map(startDaemon));
    cluster.setupMs = Math.round(performance.now() - t0);
    return cluster;
  } catch (e) {
    await stopCluster();
    throw e;
  }
}

function removeTree(dir: string): void {
  for (const sub of readdirSync(dir, { withFileTypes: true })) if (sub.isDirectory()) removeTree(path.join(dir, sub.name));
  try {
    rmdirSync(dir);
  } catch {
    // a group that still holds a process: reported by leftovers()
  }
}

/** One engine in a namespace of its own, for the Docker runtime; containers publish on `nodes[0].address`. */
export async function startEngine(opts: EngineClusterOptions = {}): Promise<EngineCluster> {
  return makeCluster(1, "engine", opts);
}

export interface SwarmNode {
  id: string;
  hostname: string;
  /** ready, down, unknown… */
  state: string;
  addr: string;
  availability: string;
  manager: boolean;
}

export interface SwarmTask {
  id: string;
  serviceId: string;
  slot: number | null;
  nodeId: string;
  /** The node's hostname, when it is known. */
  node: string | null;
  state: string;
  desired: string;
  containerId: string | null;
  /** Host-mode published ports. */
  published: number[];
  error: string | null;
}

export interface SwarmCluster extends EngineCluster {
  /** The attachable overlay network every service joins. */
  network: string;
  /** The Swarm's nodes, as the manager (node 1) sees them. */
  nodeList(): Promise<SwarmNode[]>;
  /** The tasks of `service` (name or id), as the manager sees them. */
  tasks(service: string): Promise<SwarmTask[]>;
}

/** n engines, one Swarm (node 1 the manager, heartbeat 1 s) and an attachable overlay network. */
export async function startSwarm(n = 3, opts: EngineClusterOptions = {}): Promise<SwarmCluster> {
  const t0 = performance.now();
  const c = await makeCluster(n, "swarm", opts);
  try {
    const [first, ...rest] = c.nodes;
    const at = first!.address;
    await first!.engine.call("POST", "/swarm/init", {
      ListenAddr: `${at}:2377`,
      AdvertiseAddr: at,
      DataPathAddr: at,
      DefaultAddrPool: ["172.31.0.0/16"],
      SubnetSize: 24,
      Spec: { Dispatcher: { HeartbeatPeriod: 1_000_000_000 } },
    });
    const swarm = await first!.engine.json<{ JoinTokens: { Worker: string } }>("GET", "/swarm");
    for (const node of rest) {
      await node.engine.call("POST", "/swarm/join", { ListenAddr: `${node.address}:2377`, AdvertiseAddr: node.address, DataPathAddr: node.address, RemoteAddrs: [`${at}:2377`], JoinToken: swarm.JoinTokens.Worker });
    }
    const network = `${c.name}-net`;
    await first!.engine.call("POST", "/networks/create", { Name: network, Driver: "overlay", Attachable: true, CheckDuplicate: true });
    const nodeList = async (): Promise<SwarmNode[]> => {
      const list = await first!.engine.json<Array<{ ID: string; Description: { Hostname: string }; Status: { State: string; Addr: string }; Spec: { Availability: string }; ManagerStatus?: unknown }>>("GET", "/nodes");
      return list.map((x) => ({ id: x.ID, hostname: x.Description.Hostname, state: x.Status.State, addr: x.Status.Addr, availability: x.Spec.Availability, manager: !!x.ManagerStatus }));
    };
    const deadline = Date.now() + 60_000;
    while ((await nodeList()).filter((x) => x.state === "ready").length < n) {
      if (Date.now() > deadline) throw new Error(`the Swarm has not ${n} ready nodes after 60 s`);
      await Bun.sleep(200);
    }
    const swarmCluster: SwarmCluster = {
      ...c,
      network,
      nodeList,
      async tasks(service) {
        const names = new Map((await nodeList()).map((x) => [x.id, x.hostname]));
        const list = await first!.engine.json<
          Array<{ ID: string; ServiceID: string; Slot?: number; NodeID?: string; DesiredState: string; Status: { State: string; Err?: string; ContainerStatus?: { ContainerID?: string }; PortStatus?: { Ports?: Array<{ PublishedPort: number }> } } }>
        >("GET", `/tasks?filters=${encodeURIComponent(JSON.stringify({ service: [service] }))}`);
        return list.map((x) => ({
          id: x.ID,
          serviceId: x.ServiceID,
          slot: x.Slot ?? null,
          nodeId: x.NodeID ?? "",
          node: (x.NodeID && names.get(x.NodeID)) || null,
          state: x.Status.State,
          desired: x.DesiredState,
          containerId: x.Status.ContainerStatus?.ContainerID || null,
          published: (x.Status.PortStatus?.Ports ?? []).map((p) => p.PublishedPort),
          error: x.Status.Err ?? null,
        }));
      },
    };
    swarmCluster.setupMs = Math.round(performance.now() - t0);
    return swarmCluster;
  } catch (e) {
    await c.stop();
    throw e;
  }
}
