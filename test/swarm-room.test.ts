/**
 * Start-first or stop-first on a Swarm (src/adapters/runtime/swarm-room.ts): placement constraints
 * as Swarm reads them, and the nodes' memory counted against the replicas ops runs there.
 */
import { describe, expect, test } from "bun:test";
import { constraintsHold, roomFor, roomNodes } from "../src/adapters/runtime/swarm-room";
import type { EngineNode } from "../src/adapters/runtime/swarm-state";

const node = (id: string, o: { memMb?: number; state?: string; availability?: string; role?: string; labels?: Record<string, string>; engineLabels?: Record<string, string> } = {}) =>
  ({
    ID: id,
    Description: { Hostname: `vm-${id}`, Resources: { MemoryBytes: (o.memMb ?? 1024) * 1048576 }, Platform: { OS: "linux", Architecture: "x86_64" }, Engine: { Labels: o.engineLabels ?? {} } },
    Status: { State: o.state ?? "ready", Addr: `10.0.0.${id.length}` },
    Spec: { Availability: o.availability ?? "active", Role: o.role ?? "worker", Labels: o.labels ?? {} },
  }) as EngineNode;

describe("placement constraints", () => {
  test("==, != on node labels, hostname, role, platform and engine labels; a missing label equals nothing", () => {
    const n = node("a", { labels: { zone: "eu" }, engineLabels: { disk: "ssd" }, role: "manager" });
    expect(constraintsHold(n, [])).toBe(true);
    expect(constraintsHold(n, ["node.labels.zone==eu"])).toBe(true);
    expect(constraintsHold(n, ["node.labels.zone == EU"])).toBe(true);
    expect(constraintsHold(n, ["node.labels.zone!=eu"])).toBe(false);
    expect(constraintsHold(n, ["node.labels.rack==1"])).toBe(false);
    expect(constraintsHold(n, ["node.labels.rack!=1"])).toBe(true);
    expect(constraintsHold(n, ["node.hostname==vm-a", "node.role==manager", "node.platform.os==linux", "engine.labels.disk==ssd"])).toBe(true);
    expect(constraintsHold(n, ["node.role!=manager"])).toBe(false);
    expect(constraintsHold(n, ["nonsense"])).toBe(false);
  });
});

describe("room for a rollout", () => {
  const nodes = [node("a", { memMb: 1024 }), node("b", { memMb: 1024 }), node("c", { memMb: 4096, state: "down" }), node("d", { memMb: 4096, availability: "drain" })];

  test("start-first while the eligible nodes hold the new replicas beside the running ones", () => {
    const used = new Map([["a", 512], ["b", 512]]);
    const room = roomFor(roomNodes(nodes, []), used, 2, 256);
    expect(room.mode).toBe("start-first");
    expect(room.why).toContain("vm-a, vm-b");
  });

  test("stop-first when they do not (down and drained nodes do not count), naming the nodes", () => {
    const used = new Map([["a", 900], ["b", 700]]);
    const room = roomFor(roomNodes(nodes, []), used, 2, 256);
    expect(room.mode).toBe("stop-first");
    expect(room.why).toContain("no room for 2 more replicas of 256 MiB");
  });

  test("constraints narrow the nodes: one eligible node with room for one, not two", () => {
    const labelled = [node("a", { memMb: 1024, labels: { zone: "eu" } }), node("b", { memMb: 8192 })];
    expect(roomFor(roomNodes(labelled, ["node.labels.zone==eu"]), new Map(), 1, 600).mode).toBe("start-first");
    expect(roomFor(roomNodes(labelled, ["node.labels.zone==eu"]), new Map(), 2, 600).mode).toBe("stop-first");
  });

  test("no memory limit, or no eligible node: start-first, saying why", () => {
    expect(roomFor(roomNodes(nodes, []), new Map(), 2, null)).toMatchObject({ mode: "start-first", why: expect.stringContaining("no memory limit") });
    expect(roomFor(roomNodes(nodes, ["node.labels.zone==mars"]), new Map(), 2, 64)).toMatchObject({ mode: "start-first", why: expect.stringContaining("no node may take it") });
  });
});
