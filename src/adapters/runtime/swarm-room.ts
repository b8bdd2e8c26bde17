/**
 * Whether a rollout on a Swarm can start its new replicas beside the old ones (start-first) or must
 * stop the old ones first (stop-first). Swarm itself would place every task anyway: ops sets memory
 * limits, not reservations, so its scheduler never runs out of room, and nodes would be overcommitted
 * instead. ops counts for it: the memory limits of the replicas this ops runs on each node that may
 * take the service (ready, active, every placement constraint holding) against the node's memory,
 * and places the new replicas one by one on the node with the most left, as Swarm spreads them.
 */
import type { EngineNode } from "./swarm-state";

export interface RoomNode {
  id: string;
  name: string;
  memoryMb: number;
  eligible: boolean;
}

export interface Room {
  mode: "start-first" | "stop-first";
  why: string;
}

/** A node as the constraint evaluator sees it. */
function attributes(n: EngineNode & { Description?: { Hostname?: string; Platform?: { OS?: string; Architecture?: string }; Engine?: { Labels?: Record<string, string> } }; Spec: { Labels?: Record<string, string>; Role?: string } }): Map<string, string> {
  const a = new Map<string, string>([
    ["node.id", n.ID],
    ["node.hostname", n.Description?.Hostname ?? ""],
    ["node.role", n.Spec.Role ?? ""],
    ["node.platform.os", n.Description?.Platform?.OS ?? ""],
    ["node.platform.arch", n.Description?.Platform?.Architecture ?? ""],
  ]);
  for (const [k, v] of Object.entries(n.Spec.Labels ?? {})) a.set(`node.labels.${k}`, v);
  for (const [k, v] of Object.entries(n.Description?.Engine?.Labels ?? {})) a.set(`engine.labels.${k}`, v);
  return a;
}

/** Whether every constraint (`key==value`, `key!=value`, Swarm's syntax) holds for the node. */
export function constraintsHold(node: EngineNode, constraints: readonly string[]): boolean {
  const attrs = attributes(node as Parameters<typeof attributes>[0]);
  return constraints.every((c) => {
    const m = /^\s*([^=!\s]+)\s*(==|!=)\s*(.+?)\s*$/.exec(c);
    if (!m) return false;
    const have = attrs.get(m[1]!);
    // Swarm compares case-insensitively; a missing label is unequal to everything.
    const equal = have !== undefined && have.toLowerCase() === m[3]!.toLowerCase();
    return m[2] === "==" ? equal : !equal;
  });
}

/** The nodes with their memory and whether the service may run there. */
export function roomNodes(nodes: EngineNode[], constraints: readonly string[]): RoomNode[] {
  return nodes.map((n) => {
    const res = (n as EngineNode & { Description?: { Resources?: { MemoryBytes?: number } } }).Description?.Resources?.MemoryBytes ?? 0;
    const eligible = n.Status.State === "ready" && (n.Spec.Availability ?? "active") === "active" && constraintsHold(n, constraints);
    return { id: n.ID, name: n.Description?.Hostname ?? n.ID.slice(0, 12), memoryMb: Math.floor(res / 1048576), eligible };
  });
}

/**
 * Start-first when `count` replicas of `memoryMb` each fit on the eligible nodes beside what runs
 * there (`usedMb` by node id, the replicas being replaced included); else stop-first.
 */
export function roomFor(nodes: RoomNode[], usedMb: Map<string, number>, count: number, memoryMb: number | null): Room {
  const open = nodes.filter((n) => n.eligible);
  if (open.length === 0) return { mode: "start-first", why: "no node may take it now (none ready and active with its placement constraints): Swarm places the new replicas when one can" };
  if (!memoryMb) return { mode: "start-first", why: "the service has no memory limit to count: the new replicas start beside the old ones" };
  const free = new Map(open.map((n) => [n.id, n.memoryMb - (usedMb.get(n.id) ?? 0)]));
  for (let i = 0; i < count; i++) {
    const [best, left] = [...free.entries()].sort((a, b) => b[1] - a[1])[0]!;
    if (left < memoryMb) {
      return { mode: "stop-first", why: `the nodes it may run on (${open.map((n) => n.name).join(", ")}) have no room for ${count} more replica${count === 1 ? "" : "s"} of ${memoryMb} MiB beside the ones running: the old replicas stop first (its requests fail until a new one is healthy)` };
    }
    free.set(best, left - memoryMb);
  }
  return { mode: "start-first", why: `room for ${count} new replica${count === 1 ? "" : "s"} of ${memoryMb} MiB beside the old ones on ${open.map((n) => n.name).join(", ")}` };
}
