/**
 * `ops doctor`: what this host gives ops's sandboxes (src/adapters/sandbox/doctor.ts), one line per
 * check, with the fix under each that does not hold. Exit 0 when every check holds, 1 otherwise;
 * `--json` prints the checks as a JSON array instead.
 */
import { loadConfig } from "../core/config";
import { runDoctor } from "../adapters/sandbox/doctor";
import { EXIT, SERVER_FLAGS, envOverrides, type Command } from "./types";

export const doctorCommand: Command = {
  name: "doctor",
  side: "server",
  summary: "Check what this host gives builds and replicas (sandbox, limits)",
  usage: "[--data-dir DIR] [--json]",
  description:
    "Runs each check the way a sandbox would (a real sandbox, real cgroups made and removed) and prints what holds and what does not, with how to fix it. A limit this host cannot enforce is named here as well as in build logs and service status. Exits 1 when any check does not hold.",
  flags: { "data-dir": SERVER_FLAGS["data-dir"], json: { type: "boolean", description: "Print the checks as JSON" } },
  async run(ctx) {
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    const checks = await runDoctor({
      pids: config.sandboxPids,
      tmpMb: config.sandboxTmpMb,
      buildMemoryMb: config.buildMemoryMb,
      replicaMemoryMb: config.replicaMemoryMb,
      buildDiskMb: config.buildMaxDiskMb,
      dataDir: config.dataDir,
      network: { mode: config.sandboxNetwork, publicUrl: config.publicUrl, allowCidrs: config.sandboxAllowCidrs, hostPorts: config.sandboxHostPorts },
      uidBase: config.sandboxUidBase,
    });
    if (ctx.flags.json) ctx.stdout(`${JSON.stringify(checks, null, 2)}\n`);
    else {
      for (const c of checks) {
        ctx.stdout(`${c.ok ? "ok  " : "FAIL"}  ${c.name}: ${c.detail}\n`);
        if (c.fix) ctx.stdout(`      fix: ${c.fix}\n`);
      }
      const failed = checks.filter((c) => !c.ok).length;
      ctx.stdout(failed === 0 ? "every check holds\n" : `${failed} of ${checks.length} checks do not hold\n`);
    }
    return checks.every((c) => c.ok) ? EXIT.ok : EXIT.failure;
  },
};
