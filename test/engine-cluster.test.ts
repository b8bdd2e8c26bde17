/**
 * The one-host Swarm the engine suites stand on (test/support/engine-cluster.ts): three dockerd in
 * namespaces of their own form a Swarm; a busybox service publishing in host mode (dnsrr: this
 * kernel has no IPVS) answers from the host namespace at a node's address; kill -9 of a node's
 * dockerd gets it marked down and its task rescheduled; the node comes back after a restart; and
 * stop() leaves no process, namespace, veth, mount, cgroup or folder of its own behind.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startSwarm, exec, waitFor as until, type SwarmCluster } from "./support/engine-cluster";

let swarm: SwarmCluster;
let stopped = false;
const PORT = 18080;

beforeAll(async () => {
  swarm = await startSwarm(3);
  console.log(`engine-cluster: 3-node Swarm up in ${swarm.setupMs} ms (subnet ${swarm.subnet})`);
  const t0 = performance.now();
  await swarm.importImage("bb:1", { cmd: ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/www"] });
  console.log(`engine-cluster: busybox image imported on 3 nodes in ${Math.round(performance.now() - t0)} ms`);
}, 180_000);

afterAll(async () => {
  if (swarm && !stopped) await swarm.stop();
}, 120_000);

const get = async (addr: string) => {
  try {
    const res = await fetch(`http://${addr}:${PORT}/`, { signal: AbortSignal.timeout(2000) });
    return res.ok ? await res.text() : null;
  } catch {
    return null;
  }
};

describe("one-host swarm", () => {
  test("three nodes, each its own host name and address, all ready; node 1 manages", async () => {
    const nodes = await swarm.nodeList();
    expect(nodes.map((n) => n.hostname).sort()).toEqual(swarm.nodes.map((n) => n.hostname).sort());
    expect(nodes.every((n) => n.state === "ready")).toBe(true);
    expect(nodes.filter((n) => n.manager).map((n) => n.addr)).toEqual([swarm.nodes[0]!.address]);
  });

  test("a host-mode, dnsrr busybox service answers from the host namespace at the addresses of the nodes that run it", async () => {
    const t0 = performance.now();
    await swarm.docker(1, ["service", "create", "-q", "--detach=false", "--name", "web", "--replicas", "2", "--network", swarm.network, "--endpoint-mode", "dnsrr", "--publish", `mode=host,target=8080,published=${PORT}`, "--stop-grace-period", "1s", "--placement-pref", "spread=node.id", "bb:1"]);
    const tasks = (await swarm.tasks("web")).filter((t) => t.state === "running");
    console.log(`engine-cluster: 2 tasks running in ${Math.round(performance.now() - t0)} ms on ${tasks.map((t) => t.node).join(", ")}`);
    expect(tasks.length).toBe(2);
    expect(new Set(tasks.map((t) => t.node)).size).toBe(2);
    expect(tasks.every((t) => t.published.includes(PORT))).toBe(true);
    for (const node of swarm.nodes) {
      const holds = tasks.some((t) => t.node === node.hostname);
      expect(await get(node.address)).toBe(holds ? "hello from busybox\n" : null);
    }
  }, 120_000);

  test("kill -9 of a node's dockerd: Swarm marks it down and runs its task elsewhere; restarted, the node is ready again", async () => {
    const before = (await swarm.tasks("web")).filter((t) => t.state === "running");
    // A worker that holds a task (node 1 is the manager the test talks to).
    const victim = swarm.nodes.find((n) => n.index > 1 && before.some((t) => t.node === n.hostname))!;
    const t0 = performance.now();
    const pid = await swarm.killDaemon(victim.index);
    expect(() => process.kill(pid, 0)).toThrow();
    await until(`${victim.hostname} down`, async () => (await swarm.nodeList()).find((n) => n.hostname === victim.hostname)?.state === "down", 30_000, 200);
    const down = performance.now() - t0;
    const moved = await until(
      "the task rescheduled",
      async () => {
        const running = (await swarm.tasks("web")).filter((t) => t.state === "running" && t.desired === "running" && t.node !== victim.hostname);
        return running.length === 2 && running;
      },
      60_000,
      200,
    );
    const answers = await Promise.all(moved.map((t) => get(swarm.nodes.find((n) => n.hostname === t.node)!.address)));
    expect(answers).toEqual(["hello from busybox\n", "hello from busybox\n"]);
    console.log(`engine-cluster: node down after ${Math.round(down)} ms, both tasks running again after ${Math.round(performance.now() - t0)} ms`);
    const t1 = performance.now();
    await swarm.restartDaemon(victim.index);
    await until(`${victim.hostname} ready again`, async () => (await swarm.nodeList()).find((n) => n.hostname === victim.hostname)?.state === "ready", 60_000, 200);
    console.log(`engine-cluster: ${victim.hostname} ready again ${Math.round(performance.now() - t1)} ms after its dockerd restarted`);
  }, 180_000);

  test("stop() leaves no process, namespace, veth, mount, cgroup or folder of its own behind", async () => {
    const { name, nodes } = swarm;
    const pids = nodes.map((n) => n.pid).filter((p): p is number => p !== null);
    expect(pids.length).toBe(3);
    const t0 = performance.now();
    const left = await swarm.stop();
    stopped = true;
    console.log(`engine-cluster: torn down in ${Math.round(performance.now() - t0)} ms`);
    expect(left).toEqual({ processes: [], netns: [], links: [], mounts: [], cgroups: [], dir: false });
    // Looked at again without the harness's own bookkeeping.
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    expect((await exec(["ip", "netns", "list"])).stdout).not.toContain(name);
    expect((await exec(["ip", "-o", "link"])).stdout).not.toContain(name);
    expect((await exec(["sh", "-c", `ls -d /sys/fs/cgroup/*/${name}-* 2>/dev/null || true`])).stdout).toBe("");
  }, 120_000);
});
