/**
 * A replica's state read off Swarm's task list (swarm.ts polls it every second and again at once on
 * every node and service event of the manager). Swarm keeps one task per run of a service's slot:
 * the newest one wanted running is the replica's current run, every task after the first is a
 * restart, and a task that ended says how (exit code; the manager does not say "OOM", so a SIGKILL
 * under a memory limit that ops did not send is reported as one). A task on a node that is not
 * `ready` no longer counts as running, at once: Swarm takes seconds more to give up on the node and
 * place a replacement, and the ingress must stop routing there meanwhile.
 */
import type { ReplicaExit, ReplicaState, ReplicaStatus } from "./types";

export interface EngineTask {
  ID: string;
  CreatedAt: string;
  ServiceID: string;
  NodeID?: string;
  DesiredState: string;
  Status: { Timestamp?: string; State: string; Message?: string; Err?: string; ContainerStatus?: { ExitCode?: number } };
  NetworksAttachments?: Array<{ Network: { ID: string }; Addresses?: string[] }>;
}

export interface EngineNode {
  ID: string;
  Description?: { Hostname?: string };
  Status: { State: string; Addr?: string };
  Spec: { Availability?: string; Role?: string };
  ManagerStatus?: { Addr?: string };
}

export interface NodeInfo {
  id: string;
  name: string;
  addr: string;
  /** Swarm's word for it: ready, down, disconnected, unknown. */
  state: string;
  ready: boolean;
  active: boolean;
}

/** What swarm.ts knows of a replica besides its status. */
export interface Tracked {
  status: ReplicaStatus;
  serviceId: string;
  /** Every task of it seen so far (the first is its start, the rest restarts). */
  seen: Set<string>;
  /** Tasks whose end was already reported. */
  ended: Set<string>;
  stopping: boolean;
  memoryMb: number | null;
  lastNote: string;
  /** The task whose app was seen answering on the published port (running means that, as in the process runtime). */
  readyTask: string | null;
}

const BEFORE_RUNNING = new Set(["new", "allocated", "pending", "assigned", "accepted", "preparing", "ready", "starting"]);
const ENDED = new Set(["complete", "failed", "shutdown", "rejected", "orphaned", "remove"]);

/** The manager's nodes by id, with the address each is reached at (a manager's Status.Addr may read 0.0.0.0). */
export function nodesOf(list: EngineNode[]): Map<string, NodeInfo> {
  const out = new Map<string, NodeInfo>();
  for (const n of list) {
    let addr = n.Status.Addr ?? "";
    if ((addr === "" || addr === "0.0.0.0") && n.ManagerStatus?.Addr) addr = n.ManagerStatus.Addr.replace(/:\d+$/, "");
    out.set(n.ID, { id: n.ID, name: n.Description?.Hostname ?? n.ID.slice(0, 12), addr, state: n.Status.State, ready: n.Status.State === "ready", active: (n.Spec.Availability ?? "active") === "active" });
  }
  return out;
}

/** Whether a task ended, and with which exit (null while it has not). */
function exitOf(t: EngineTask, r: Tracked): ReplicaExit | null {
  if (!ENDED.has(t.Status.State)) return null;
  const code = t.Status.ContainerStatus?.ExitCode ?? null;
  const at = Date.parse(t.Status.Timestamp ?? "") || Date.now();
  return { code: t.Status.State === "rejected" ? null : code, signal: code !== null && code > 128 ? signalName(code - 128) : null, oomKilled: code === 137 && r.memoryMb !== null && !r.stopping, at };
}

function signalName(n: number): string | null {
  return ({ 9: "SIGKILL", 15: "SIGTERM", 6: "SIGABRT", 11: "SIGSEGV", 2: "SIGINT" } as Record<number, string>)[n] ?? null;
}

/**
 * Bring `r.status` up to date with its tasks; returns whether anything a watcher cares about changed,
 * and ops's notes about it (a task that ended, a node that went down, why Swarm will not place it).
 */
export function observe(r: Tracked, tasks: EngineTask[], nodes: Map<string, NodeInfo>): Observed {
  const before = { state: r.status.state, host: r.status.host, restarts: r.status.restarts, exit: r.status.lastExit?.at ?? 0, node: r.status.node?.task ?? "" };
  const notes: string[] = [];
  let exited = false;
  const mine = tasks.filter((t) => t.ServiceID === r.serviceId).sort((a, b) => Date.parse(a.CreatedAt) - Date.parse(b.CreatedAt));
  for (const t of mine) {
    if (!r.seen.has(t.ID)) r.seen.add(t.ID);
    const exit = r.ended.has(t.ID) ? null : exitOf(t, r);
    if (exit && t.Status.State !== "shutdown") {
      r.ended.add(t.ID);
      r.status.lastExit = exit;
      exited = !r.stopping;
      const where = nodes.get(t.NodeID ?? "")?.name ?? "no node";
      const why = exit.oomKilled ? `killed (SIGKILL) under its memory limit of ${r.memoryMb} MiB: out of memory` : exit.code === null ? t.Status.Err ?? t.Status.State : `exit ${exit.code}`;
      if (!r.stopping) notes.push(`task ${t.ID.slice(0, 12)} on ${where} ended: ${why}${t.Status.Err && exit.code !== null ? ` (${t.Status.Err})` : ""}`);
    } else if (exit) r.ended.add(t.ID);
  }
  r.status.restarts = Math.max(r.status.restarts, r.seen.size - 1);
  const wanted = mine.filter((t) => t.DesiredState === "running" || t.DesiredState === "ready");
  const current = wanted[wanted.length - 1] ?? mine[mine.length - 1] ?? null;
  const node = current?.NodeID ? nodes.get(current.NodeID) : undefined;
  let state: ReplicaState = r.status.state;
  let unplaceable = false;
  if (r.stopping) state = "stopping";
  else if (!current) state = r.seen.size > 0 ? "crashed" : "starting";
  else if (current.Status.State === "running" && current.DesiredState === "running") state = !node?.ready ? "crashed" : r.readyTask === current.ID ? "running" : "starting";
  else if (ENDED.has(current.Status.State) || (current.DesiredState === "ready" && r.seen.size > 1)) state = "crashed";
  else if (BEFORE_RUNNING.has(current.Status.State)) {
    state = "starting";
    unplaceable = current.Status.State === "pending" && /no suitable node/i.test(`${current.Status.Err ?? ""} ${current.Status.Message ?? ""}`);
  }
  if (current && node) {
    r.status.host = node.addr;
    r.status.node = { id: node.id, name: node.name, addr: node.addr, task: current.ID };
    if (!node.ready && !r.stopping) {
      const note = `node ${node.name} (${node.addr}) is ${node.state}: the replica gets no traffic there until Swarm places it again`;
      if (r.lastNote !== note && current.Status.State === "running") notes.push(note);
      r.lastNote = note;
    }
  }
  const err = current?.Status.Err;
  if (err && !r.stopping && r.lastNote !== err && !ENDED.has(current.Status.State)) {
    notes.push(`task ${current.ID.slice(0, 12)} ${current.Status.State}: ${err}`);
    r.lastNote = err;
  }
  r.status.state = state;
  const changed = state !== before.state || r.status.host !== before.host || r.status.restarts !== before.restarts || (r.status.lastExit?.at ?? 0) !== before.exit || (r.status.node?.task ?? "") !== before.node;
  const probe = state === "starting" && current?.Status.State === "running" && node?.ready ? current.ID : null;
  return { changed, notes, unplaceable, crashedFirst: exited && state !== "crashed" && before.state !== "crashed", probe };
}

export interface Observed {
  changed: boolean;
  notes: string[];
  /** Swarm finds no node that may take it. */
  unplaceable: boolean;
  /** A run ended and the next one was already under way: say `crashed` before the new state. */
  crashedFirst: boolean;
  /** A running task whose app has not yet been seen answering: watch its port. */
  probe: string | null;
}
