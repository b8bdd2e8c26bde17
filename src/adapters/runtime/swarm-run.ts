/**
 * A one-off command on the swarm (a release step): a service of one task that is never restarted
 * (`Condition: none`), on its project's network, its secret values in a Swarm secret like a
 * replica's; its output followed while it runs and read to the end once its task ended; its exit
 * code off the task; the service and its secret removed whatever happened. Past `timeoutMs` the
 * service is removed (Swarm stops the task with its grace) and the result says it timed out.
 */
import type { EngineClient } from "./engine-api";
import { maskerOf } from "./replica-env";
import type { SwarmObjects } from "./swarm-objects";
import { followServiceLogs } from "./swarm-logs";
import { L, oneOffInputs, serviceSpecOf, splitEnv, type ServiceInputs } from "./swarm-spec";
import type { EngineTask } from "./swarm-state";
import type { OneOffResult, OneOffSpec, RuntimeHooks } from "./types";

export interface OneOffContext {
  engine: EngineClient;
  spec: OneOffSpec;
  /** The X-Registry-Auth header for pulling `ref`. */
  auth(ref: string): Promise<Record<string, string>>;
  objects: Pick<SwarmObjects, "networkFor" | "makeSecret" | "removeSecret">;
  inputsOf(kind: "run", spec: ServiceInputs["spec"], networkId: string, env: ServiceInputs["env"], secret: ServiceInputs["secret"], port: null, constraints: string[]): ServiceInputs;
  onLine?: RuntimeHooks["onLine"];
}

/** How long a one-off may take to be placed and pulled before its command's time starts. */
const PLACE_MS = 120_000;
const ENDED = new Set(["complete", "failed", "shutdown", "rejected", "orphaned", "remove"]);

/** Run `ctx.spec` to completion on the swarm. */
export async function runOneOff(ctx: OneOffContext): Promise<OneOffResult> {
  const { engine, spec } = ctx;
  const env = splitEnv(spec.env ?? [], spec.masked ?? [], null, spec.image.config.env);
  const networkId = await ctx.objects.networkFor(spec.labels ?? {});
  const secret = await ctx.objects.makeSecret(spec.id, "run", env.secretFile);
  const tail: string[] = [];
  const mask = maskerOf(spec);
  const emit = (stream: "stdout" | "stderr" | "ops", raw: string) => {
    const line = mask(raw);
    tail.push(line);
    if (tail.length > 20) tail.shift();
    ctx.onLine?.(spec.id, stream, line);
  };
  let serviceId: string | null = null;
  const logs = new AbortController();
  try {
    const inputs = ctx.inputsOf("run", oneOffInputs(spec), networkId, env, secret, null, []);
    const made = await engine.json<{ ID: string }>("POST", "/services/create", serviceSpecOf(inputs), await ctx.auth(spec.image.reference ?? ""));
    serviceId = made.ID;
    const follower = followServiceLogs(engine, made.ID, logs.signal, (l) => emit(l.stream, l.text));
    // The time limit is the command's: it starts once the task runs (a node may pull the image first, bounded apart).
    let deadline = Date.now() + spec.timeoutMs + PLACE_MS;
    let runningSince: number | null = null;
    const memoryLimited = (spec.memoryMb ?? (inputs.limits.memoryMb || null)) !== null;
    let ended: EngineTask | null = null;
    let timedOut = false;
    while (!ended) {
      if (Date.now() > deadline) {
        timedOut = true;
        break;
      }
      const tasks = await engine.json<EngineTask[]>("GET", `/tasks?filters=${encodeURIComponent(JSON.stringify({ label: [`${L.replica}=${spec.id}`], service: [made.ID] }))}`).catch(() => [] as EngineTask[]);
      ended = tasks.find((t) => ENDED.has(t.Status.State)) ?? null;
      if (runningSince === null && tasks.some((t) => t.Status.State === "running")) {
        runningSince = Date.now();
        deadline = runningSince + spec.timeoutMs;
      }
      if (!ended) await Bun.sleep(300);
    }
    logs.abort();
    await follower.drain();
    if (timedOut) {
      await engine.call("DELETE", `/services/${made.ID}`).catch(() => undefined);
      serviceId = null;
      return { code: null, signal: null, oomKilled: false, timedOut: true, tail };
    }
    const t = ended!;
    const code = t.Status.State === "rejected" ? null : (t.Status.ContainerStatus?.ExitCode ?? null);
    if (code === null) emit("ops", `its task was ${t.Status.State}: ${t.Status.Err ?? t.Status.Message ?? "no reason given"}`);
    // The manager does not say "OOM": a SIGKILL ops did not send, under a memory limit, is one.
    return { code, signal: code === 137 ? "SIGKILL" : null, oomKilled: code === 137 && memoryLimited, timedOut: false, tail };
  } finally {
    logs.abort();
    if (serviceId) await engine.call("DELETE", `/services/${serviceId}`).catch(() => undefined);
    await ctx.objects.removeSecret(secret?.id ?? null);
  }
}
