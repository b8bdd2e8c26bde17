/**
 * `ops doctor` (DESIGN §6, Limits; issue 32 item 6): what this host gives each kind of run, run as a
 * child process of the real entry point, as root as CI runs it. Here every check holds and each
 * kind of run (build, job run, release step, publish step, replica) lists its limits; a limit
 * switched off or that a check found not enforced is named with its fix, under every kind of run
 * it leaves open, on the last line, and the exit code says so; the checks are a list others append to.
 */
import { describe, test, expect } from "bun:test";
import path from "node:path";
import { addDoctorCheck, DOCTOR_CHECKS, runDoctor, type DoctorContext } from "../../src/adapters/sandbox/doctor";
import { limitsByKind, notEnforcedSummary } from "../../src/adapters/sandbox/doctor-limits";

const MAIN = path.resolve(import.meta.dir, "../../src/main.ts");
const KINDS = ["build", "job run", "release step", "publish step", "replica"];

function doctor(args: string[], env: Record<string, string> = {}): { code: number | null; out: string } {
  const p = Bun.spawnSync([process.execPath, MAIN, "doctor", ...args], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, cwd: "/" });
  return { code: p.exitCode, out: p.stdout.toString() + p.stderr.toString() };
}

describe("ops doctor", () => {
  test("as root on this host: every check holds, one line each, then each kind of run's limits", () => {
    expect(process.getuid?.()).toBe(0);
    const r = doctor([]);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split("\n");
    for (const name of ["identity", "user namespaces", "bubblewrap", "network isolation", "memory limit", "process limit", "seccomp", "sized /tmp and /dev/shm", "build disk", "dependency caches"]) {
      expect(lines.some((l) => l.startsWith(`ok    ${name}: `))).toBe(true);
    }
    expect(r.out).toContain("ops runs as root");
    expect(r.out).toMatch(/process limit: 512 processes per sandbox, enforced through cgroup-v[12]/);
    expect(r.out).toMatch(/memory limit: enforced through cgroup-v[12]: builds 2048 MiB, job runs 2048 MiB, release steps and replicas 512 MiB unless limits.memory_mb says otherwise/);
    expect(r.out).toContain("sized /tmp and /dev/shm: 256 MiB tmpfs each per sandbox; the rest of /dev read-only");
    expect(r.out).toContain("seccomp: filter loaded");
    expect(r.out).toContain("build disk: 10240 MiB per build dir and per job run's home (an ext4 image on a loop device)");
    expect(r.out).toContain("dependency caches: 5120 MiB per project (npm, cargo, pip and buildah's layers; an ext4 image on a loop device while its builds run), trimmed least recently used first to 3840 MiB after them");
    const kinds = lines.slice(lines.indexOf("limits per kind of run:") + 1, -1);
    expect(kinds.map((l) => /^ok {4}(.+) limits: /.exec(l)?.[1])).toEqual(KINDS);
    const shared = "512 processes; /tmp and /dev/shm 256 MiB each, the rest of /dev read-only";
    const sandbox = "seccomp filter and no_new_privs; a network namespace of its own";
    expect(kinds[0]).toBe(`ok    build limits: memory 2048 MiB (OPS_BUILD_MEMORY_MB); ${shared}; build dir 10240 MiB (OPS_BUILD_MAX_DISK_MB); dependency caches 5120 MiB per project (OPS_CACHE_MAX_MB); image 4096 MiB (OPS_IMAGE_MAX_MB); ${sandbox}`);
    expect(kinds[1]).toBe(`ok    job run limits: memory 2048 MiB (OPS_JOB_MEMORY_MB); ${shared}; home 10240 MiB (OPS_BUILD_MAX_DISK_MB); ${sandbox}`);
    expect(kinds[2]).toBe(`ok    release step limits: memory 512 MiB (OPS_REPLICA_MEMORY_MB, unless limits.memory_mb says otherwise); ${shared}; nothing else writable (the image is read-only); ${sandbox}`);
    expect(kinds[3]).toBe(`ok    publish step limits: memory 2048 MiB (OPS_BUILD_MEMORY_MB); ${shared}; build dir 10240 MiB (OPS_BUILD_MAX_DISK_MB); ${sandbox}`);
    expect(kinds[4]).toBe(`ok    replica limits: memory 512 MiB (OPS_REPLICA_MEMORY_MB, unless limits.memory_mb says otherwise); ${shared}; nothing else writable (the image is read-only); ${sandbox}`);
    expect(lines.at(-1)).toBe("every check holds: every limit above is enforced");
  });

  test("--json gives the checks and each kind of run with name, ok, detail and fix; the settings are the server's", () => {
    const r = doctor(["--json"], { OPS_SANDBOX_TMP_MB: "32", OPS_JOB_MEMORY_MB: "300" });
    const checks = JSON.parse(r.out) as Array<{ name: string; ok: boolean; detail: string; fix: string | null }>;
    expect(checks.every((c) => Object.keys(c).sort().join() === "detail,fix,name,ok")).toBe(true);
    expect(checks.find((c) => c.name === "sized /tmp and /dev/shm")).toEqual({ name: "sized /tmp and /dev/shm", ok: true, detail: "32 MiB tmpfs each per sandbox; the rest of /dev read-only", fix: null });
    expect(checks.find((c) => c.name === "job run limits")?.detail).toStartWith("memory 300 MiB (OPS_JOB_MEMORY_MB); 512 processes; /tmp and /dev/shm 32 MiB each");
  });

  test("a limit switched off is named with its fix, under each kind of run it leaves open, on the last line; the exit code is 1", () => {
    const r = doctor([], { OPS_SANDBOX_PIDS: "0", OPS_CACHE_MAX_MB: "0" });
    expect(r.code).toBe(1);
    expect(r.out).toContain("FAIL  process limit: OPS_SANDBOX_PIDS is 0: sandboxes have no process limit");
    expect(r.out).toContain("      fix: set OPS_SANDBOX_PIDS (default 512)");
    expect(r.out).toContain("FAIL  dependency caches: OPS_CACHE_MAX_MB is 0: a project's dependency caches may fill the data disk");
    expect(r.out).toContain("FAIL  build limits: memory 2048 MiB (OPS_BUILD_MEMORY_MB); no process limit (OPS_SANDBOX_PIDS=0);");
    expect(r.out).toContain("dependency caches not capped (OPS_CACHE_MAX_MB=0)");
    expect(r.out).toContain("      fix: set OPS_SANDBOX_PIDS; set OPS_CACHE_MAX_MB");
    expect(r.out.trim().split("\n").at(-1)).toBe("7 of 15 checks do not hold; NOT enforced: processes (build, job run, release step, publish step, replica); dependency caches (build)");
  });

  test("network isolation: a namespace made and closed as a build's; switched off on purpose, every kind of run says so", () => {
    const on = doctor([]);
    expect(on.out).toMatch(/ok {4}network isolation: a namespace per sandbox through pasta \(\d+ ms to make here\); the internet and ops's port 8080 reachable/);
    const off = doctor([], { OPS_SANDBOX_NETWORK: "host" });
    expect(off.code).toBe(1);
    expect(off.out).toContain("FAIL  network isolation: off on purpose (OPS_SANDBOX_NETWORK=host)");
    expect(off.out).toContain("      fix: apt-get install passt, then unset OPS_SANDBOX_NETWORK");
    expect(off.out).toContain("FAIL  job run limits: ");
    expect(off.out).toContain("a network namespace of its own NOT enforced");
    expect(off.out.trim().split("\n").at(-1)).toBe("6 of 15 checks do not hold; NOT enforced: network isolation (build, job run, release step, publish step, replica)");
  });

  test("with the Docker runtime, release steps and replicas are the engine's: what it does not limit is named", () => {
    const r = doctor([], { OPS_RUNTIME: "docker" });
    expect(r.code).toBe(1);
    expect(r.out).toContain("FAIL  replica limits: memory 512 MiB (OPS_REPLICA_MEMORY_MB, unless limits.memory_mb says otherwise); no process limit (the Docker runtime sets none); /tmp not sized (the Docker runtime leaves it on the container's layer)");
    // No engine answers at the default socket here: the engine API check (src/adapters/runtime/doctor-engine.ts) says so.
    expect(r.out).toContain("FAIL  engine API: the Docker Engine API does not answer at OPS_DOCKER_HOST=unix:///var/run/docker.sock");
    expect(r.out.trim().split("\n").at(-1)).toBe("3 of 16 checks do not hold; NOT enforced: processes (release step, replica); /tmp and /dev/shm (release step, replica)");
  });
});

describe("the list of checks", () => {
  const ctx: DoctorContext = { pids: 512, tmpMb: 256, buildMemoryMb: 2048, jobMemoryMb: 2048, replicaMemoryMb: 512, buildDiskMb: 10240, cacheMb: 5120, imageMb: 4096, dataDir: "/nonexistent" };

  test("others append checks; one that throws is reported as not holding, with the error", async () => {
    const before = DOCTOR_CHECKS.length;
    const network = () => ({ name: "network", ok: true, detail: "appended", fix: null });
    addDoctorCheck(network);
    try {
      expect(DOCTOR_CHECKS.at(-1)).toBe(network);
      const out = await runDoctor(ctx, [network, function broken() { throw new Error("boom"); }]);
      expect(out[0]).toEqual({ name: "network", ok: true, detail: "appended", fix: null });
      expect(out[1]).toMatchObject({ name: "broken", ok: false, detail: "the check failed: boom" });
    } finally {
      DOCTOR_CHECKS.splice(before);
    }
  });

  test("a host check that fails leaves its limit NOT enforced for every kind of run that has it, never 'holds'", () => {
    const checks = [
      { name: "memory limit", ok: false, detail: "no cgroup", fix: "delegate one" },
      { name: "build disk", ok: false, detail: "no loop devices", fix: "run as root" },
    ];
    const kinds = limitsByKind(ctx, checks);
    expect(kinds.map((k) => [k.name, k.ok])).toEqual(KINDS.map((k) => [`${k} limits`, false]));
    expect(kinds[1]!.detail).toStartWith("memory 2048 MiB (OPS_JOB_MEMORY_MB) NOT enforced; 512 processes;");
    expect(kinds[1]!.detail).toContain("home 10240 MiB (OPS_BUILD_MAX_DISK_MB) NOT enforced");
    expect(kinds[1]!.fix).toBe("see the memory limit check above; see the build disk check above");
    expect(notEnforcedSummary(kinds)).toBe("memory (build, job run, release step, publish step, replica); disk (build, job run, publish step)");
  });
});
