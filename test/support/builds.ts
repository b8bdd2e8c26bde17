/**
 * Test helpers of the builds domain: real skopeo against the test app's embedded registry, with a
 * throwaway home so no auth file or policy of the machine's user is used.
 */
import path from "node:path";
import { tempDir } from "../harness";
import { run, type RunResult } from "./registries";

/** `skopeo --insecure-policy <args>` (loopback registries only; callers pass --tls-verify=false). */
export function skopeo(args: string[]): Promise<RunResult> {
  const home = tempDir("ops-skopeo-home-");
  return run(["skopeo", "--insecure-policy", ...args], { cwd: home, env: { HOME: home, XDG_RUNTIME_DIR: home, REGISTRY_AUTH_FILE: path.join(home, "auth.json") }, timeoutMs: 120_000 });
}
