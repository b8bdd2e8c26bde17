/**
 * `ops doctor`: what this host gives ops's sandboxes (src/adapters/sandbox/doctor.ts), one line per
 * check with the fix under each that does not hold, then the limits of each kind of run as those
 * checks leave them (doctor-limits.ts), and last what is not enforced, if anything. Exit 0 when
 * everything holds, 1 otherwise; `--json` prints the checks and kinds as a JSON array instead.
 */
import { loadConfig } from "../core/config";
import { runDoctor } from "../adapters/sandbox/doctor";
import { limitsByKind, notEnforcedSummary } from "../adapters/sandbox/doctor-limits";
import { askDataPlane, uptime } from "../dataplane/status";
import { engineChecks, isSkipped, newestImageFor } from "../adapters/runtime/doctor-engine";
import { EXIT, SERVER_FLAGS, envOverrides, type Command } from "./types";

export const doctorCommand: Command = {
  name: "doctor",
  side: "server",
  summary: "Check what this host gives builds, job runs and replicas (sandbox, limits per kind of run)",
  usage: "[--data-dir DIR] [--json] [--registry-token TOKEN]",
  description:
    "Runs each check the way a sandbox would (a real sandbox, real cgroups made and removed) and prints what holds and what does not, with how to fix it; then the limits of each kind of run (build, job run, release step, publish step, replica) and, last, what is not enforced. A limit this host cannot enforce is named here as well as in build logs, job run logs and service status. Exits 1 when anything does not hold.",
  flags: {
    "data-dir": SERVER_FLAGS["data-dir"],
    json: { type: "boolean", description: "Print the checks and each kind of run's limits as JSON" },
    "registry-token": { type: "string", value: "TOKEN", description: "OPS_RUNTIME=swarm: check the nodes' pull with this ops token (packages.read) instead of the pull-only credential ops gives them" },
  },
  async run(ctx) {
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    const settings = {
      pids: config.sandboxPids,
      tmpMb: config.sandboxTmpMb,
      buildMemoryMb: config.buildMemoryMb,
      jobMemoryMb: config.jobMemoryMb,
      replicaMemoryMb: config.replicaMemoryMb,
      buildDiskMb: config.buildMaxDiskMb,
      cacheMb: config.cacheMaxMb,
      imageMb: config.imageMaxMb,
      runtime: config.runtime,
      dataDir: config.dataDir,
      network: { mode: config.sandboxNetwork, publicUrl: config.publicUrl, allowCidrs: config.sandboxAllowCidrs, hostPorts: config.sandboxHostPorts },
      uidBase: config.sandboxUidBase,
    };
    const checks = await runDoctor(settings);
    // The engine runtime's checks (src/adapters/runtime/doctor-engine.ts); the image comes from this data dir's registry.
    const token = typeof ctx.flags["registry-token"] === "string" ? ctx.flags["registry-token"] : null;
    const withCore = async <T>(fn: (core: import("../core/core").Core) => T | Promise<T>): Promise<T> => {
      const [{ createCore, closeCore }, { accessModule }] = await Promise.all([import("../app"), import("../domains/access")]);
      const core = createCore(config, { modules: [accessModule], logSink: () => {} });
      try {
        return await fn(core);
      } finally {
        await closeCore(core);
      }
    };
    const newestImage = (t: string | null) => withCore((core) => newestImageFor(core, t));
    // Without a token: the pull-only credential the runtime itself gives the nodes (decision 0615).
    const runtimePullToken = async (repository: string) => {
      const { issueRuntimePullToken } = await import("../domains/registries/service");
      return withCore((core) => issueRuntimePullToken(core, repository, 300));
    };
    checks.push(...(await engineChecks({ runtime: config.runtime, dockerHost: config.dockerHost, dockerTls: config.dockerTls, publicUrl: config.publicUrl, registryToken: token, newestImage, runtimePullToken })));
    const kinds = limitsByKind(settings, checks);
    const all = [...checks, ...kinds.map(({ notEnforced: _, ...k }) => k)];
    // The processes serving this data dir (decision 0600): what is so, not a check of the host.
    const asked = await askDataPlane(config.dataDir);
    const processes = typeof asked === "string" ? [{ part: "data plane", pid: null, startedAt: null, detail: asked }] : asked.parts;
    const processLine = (p: (typeof processes)[number]) => `${p.pid === null ? "" : `pid ${p.pid}, up ${uptime(p.startedAt)}; `}${p.detail}`;
    if (ctx.flags.json) ctx.stdout(`${JSON.stringify([...all, ...processes.map((p) => ({ name: `process: ${p.part}`, ok: true, detail: processLine(p), fix: null }))], null, 2)}\n`);
    else {
      ctx.stdout(`processes (data dir ${config.dataDir}):\n`);
      for (const p of processes) ctx.stdout(`      ${p.part}: ${processLine(p)}\n`);
      const line = (c: (typeof all)[number]) => {
        ctx.stdout(`${c.ok ? (isSkipped(c) ? "skip" : "ok  ") : "FAIL"}  ${c.name}: ${c.detail}\n`);
        if (c.fix) ctx.stdout(`      fix: ${c.fix}\n`);
      };
      checks.forEach(line);
      ctx.stdout("limits per kind of run:\n");
      kinds.forEach(line);
      const failed = all.filter((c) => !c.ok).length;
      const open = notEnforcedSummary(kinds);
      if (failed === 0) ctx.stdout("every check holds: every limit above is enforced\n");
      else ctx.stdout(`${failed} of ${all.length} checks do not hold${open ? `; NOT enforced: ${open}` : ""}\n`);
    }
    return all.every((c) => c.ok) ? EXIT.ok : EXIT.failure;
  },
};
