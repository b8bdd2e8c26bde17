/**
 * `ops doctor`'s network check (decision 0200): with isolation on, it makes a namespace the way a
 * build does, asks the namespace's own routing table for a private address and for ops's port on
 * its loopback, and closes it; with `OPS_SANDBOX_NETWORK=host` it says isolation is off.
 */
import { networkPolicy } from "./network";
import { openNetns } from "./netns";
import { networkTools } from "./index";
import { CHECK, type DoctorCheck, type DoctorContext } from "./doctor-types";

const NAME = CHECK.network;

export async function networkCheck(ctx: DoctorContext): Promise<DoctorCheck> {
  const n = ctx.network;
  if (!n) return { name: NAME, ok: false, detail: "no network settings were given to the check", fix: "run ops doctor from the ops binary" };
  if (n.mode === "host") {
    return { name: NAME, ok: false, detail: "off on purpose (OPS_SANDBOX_NETWORK=host): builds, job runs and replicas share the host's network, its loopback services included; every build log says so", fix: "apt-get install passt, then unset OPS_SANDBOX_NETWORK" };
  }
  const tools = networkTools();
  if (typeof tools === "string") return { name: NAME, ok: false, detail: tools, fix: "apt-get install passt iproute2 util-linux" };
  const policy = networkPolicy({ publicUrl: n.publicUrl, sandboxAllowCidrs: n.allowCidrs, sandboxHostPorts: n.hostPorts });
  const started = performance.now();
  const ns = await openNetns({ ...tools, policy, forward: false });
  const openMs = performance.now() - started;
  try {
    const route = Bun.spawnSync([...ns.enterArgv(), tools.ip, "-o", "route", "get", "10.0.0.1"], { stdout: "pipe", stderr: "pipe" });
    const said = (route.stdout.toString() + route.stderr.toString()).trim();
    if (route.exitCode === 0 && !/prohibit|unreachable/.test(said)) {
      return { name: NAME, ok: false, detail: `a sandbox's namespace routes 10.0.0.1 (${said}): private ranges are not closed`, fix: "report this to the ops maintainers with the output above" };
    }
    return {
      name: NAME,
      ok: true,
      detail: `a namespace per sandbox through pasta (${Math.round(openMs)} ms to make here); the internet and ops's port ${policy.hostPorts.join(", ")} reachable, the host's loopback, private ranges (${policy.allowCidrs.length > 0 ? `except ${policy.allowCidrs.join(", ")}` : "none allowed"}), link-local and its own addresses not`,
      fix: null,
    };
  } finally {
    await ns.close();
  }
}
