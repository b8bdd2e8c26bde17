/**
 * What a replica runs, with which environment and which of its values are masked in its output,
 * and the sandbox limits every replica gets (process-runtime.ts).
 */
import { DEFAULT_PATH } from "./process";
import { secretMasker, type SecretMasker } from "../../core/secret-mask";

/** What every replica and one-off command gets unless its spec says otherwise. */
export interface SandboxLimits {
  /** Memory of a replica without `limits.memory_mb`, MiB (`OPS_REPLICA_MEMORY_MB`; 0 = none). */
  memoryMb?: number;
  /** `pids.max` of each sandbox (`OPS_SANDBOX_PIDS`; 0 = none). */
  pids?: number;
  /** Size of its /tmp tmpfs, MiB (`OPS_SANDBOX_TMP_MB`). */
  tmpMb?: number;
}

/** The command a replica runs: an override through `/bin/sh -c`, else the image's Entrypoint and Cmd. */
export function replicaArgv(entrypoint: readonly string[], cmd: readonly string[], override: string | null | undefined): string[] {
  if (override) return ["/bin/sh", "-c", override];
  return [...entrypoint, ...cmd];
}

/** The environment of a replica: a minimal base, the image's Env, the caller's variables in order, then PORT. */
export function replicaEnv(imageEnv: readonly string[], extra: ReadonlyArray<readonly [string, string]>, port: number): Record<string, string> {
  const env: Record<string, string> = { PATH: DEFAULT_PATH, HOME: "/tmp" };
  for (const e of imageEnv) {
    const i = e.indexOf("=");
    if (i > 0) env[e.slice(0, i)] = e.slice(i + 1);
  }
  for (const [k, v] of extra) env[k] = v;
  env.PORT = String(port);
  return env;
}


const maskers = new WeakMap<object, SecretMasker>();

/**
 * The masker of a replica's or a one-off command's secret values (`masked`), made once per spec:
 * a replica's restarts, and its adoption after a hand-over, use the one spec (decision 0516).
 */
export function maskerOf(spec: { masked?: readonly string[] }): SecretMasker {
  let mask = maskers.get(spec);
  if (!mask) maskers.set(spec, (mask = secretMasker(spec.masked ?? [])));
  return mask;
}
