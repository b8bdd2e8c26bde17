/**
 * Health of new replicas during a rollout: each must answer `health_check_path` with a 2xx (or,
 * with no path, accept a TCP connection on its port) before the deadline. A replica that exits
 * first fails at once, with how it exited: waiting out the deadline would only delay the verdict.
 */
import type { Core } from "../../core/core";
import { runtimeOf, probeOnce, type ReplicaExit } from "../../adapters/runtime";

export type ProbeVerdict = { ok: true } | { ok: false; replica: string; reason: string };

/** Told each probe result as it changes (and every REPORT_MS while it does not), with the seconds left. */
export type ProbeReport = (replica: string, result: string, secondsLeft: number) => void;

const REPORT_MS = 10_000;

const ATTEMPT_MS = 2000;
const INTERVAL_MS = 200;

/** How a replica's last run ended, in words. */
export function describeExit(exit: ReplicaExit | null): string {
  if (!exit) return "it stopped";
  if (exit.oomKilled) return "it was killed over its memory limit";
  if (exit.signal) return `it was ended by ${exit.signal}`;
  return `it exited with code ${exit.code}`;
}

/** Probe one replica until healthy, exited, or `deadline` (epoch ms, wall clock). */
async function probeReplica(core: Core, id: string, path: string | null, deadline: number, report?: ProbeReport): Promise<ProbeVerdict> {
  const runtime = runtimeOf(core);
  let last = "it never accepted a connection on its port (does the app listen on $PORT?)";
  let told = "";
  let toldAt = 0;
  const tell = (result: string) => {
    if (!report || (result === told && Date.now() - toldAt < REPORT_MS)) return;
    told = result;
    toldAt = Date.now();
    report(id, result, Math.max(0, Math.round((deadline - Date.now()) / 1000)));
  };
  for (;;) {
    const st = runtime.status(id);
    if (!st || st.state === "stopped" || st.state === "stopping") return { ok: false, replica: id, reason: "it was stopped before it became healthy" };
    if (st.state === "crashed") return { ok: false, replica: id, reason: `${describeExit(st.lastExit)} before it became healthy` };
    const left = deadline - Date.now();
    if (left <= 0) return { ok: false, replica: id, reason: last };
    if (st.state === "running") {
      if (!path) return { ok: true };
      const res = await probeOnce({ host: st.host, port: st.port, path }, Math.max(1, Math.min(left, ATTEMPT_MS)));
      if (res.ok) {
        tell(`${path} answered 2xx: healthy`);
        return { ok: true };
      }
      last = res.error ?? `${path} did not answer`;
      tell(last);
    }
    await Bun.sleep(Math.min(INTERVAL_MS, Math.max(0, deadline - Date.now())));
  }
}

/** Every replica healthy within `deadlineMs`, or the first one that was not and why. */
export async function probeReplicas(core: Core, ids: readonly string[], path: string | null, deadlineMs: number, report?: ProbeReport): Promise<ProbeVerdict> {
  const deadline = Date.now() + deadlineMs;
  const verdicts = await Promise.all(ids.map((id) => probeReplica(core, id, path, deadline, report)));
  return verdicts.find((v) => !v.ok) ?? { ok: true };
}
