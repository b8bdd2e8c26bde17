/**
 * `ops doctor` (DESIGN §6, Limits): what this host gives builds and replicas, run as a child
 * process of the real entry point, as root as CI runs it. Here every check holds; a limit switched
 * off is named with its fix and the exit code says so; the checks are a list other parts append to.
 */
import { describe, test, expect } from "bun:test";
import path from "node:path";
import { addDoctorCheck, DOCTOR_CHECKS, runDoctor, type DoctorContext } from "../../src/adapters/sandbox/doctor";

const MAIN = path.resolve(import.meta.dir, "../../src/main.ts");

function doctor(args: string[], env: Record<string, string> = {}): { code: number | null; out: string } {
  const p = Bun.spawnSync([process.execPath, MAIN, "doctor", ...args], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, cwd: "/" });
  return { code: p.exitCode, out: p.stdout.toString() + p.stderr.toString() };
}

describe("ops doctor", () => {
  test("as root on this host: every check holds, one line each", () => {
    expect(process.getuid?.()).toBe(0);
    const r = doctor([]);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split("\n");
    for (const name of ["identity", "user namespaces", "bubblewrap", "network isolation", "memory limit", "process limit", "seccomp", "sized /tmp", "build disk"]) {
      expect(lines.some((l) => l.startsWith(`ok    ${name}: `))).toBe(true);
    }
    expect(r.out).toContain("ops runs as root");
    expect(r.out).toMatch(/process limit: 512 processes per sandbox, enforced through cgroup-v[12]/);
    expect(r.out).toContain("sized /tmp: 256 MiB tmpfs per sandbox");
    expect(r.out).toContain("seccomp: filter loaded");
    expect(r.out).toContain("build disk: 10240 MiB per build dir (an ext4 image on a loop device)");
    expect(lines.at(-1)).toBe("every check holds");
  });

  test("--json gives the checks with name, ok, detail and fix; the settings are the server's", () => {
    const r = doctor(["--json"], { OPS_SANDBOX_TMP_MB: "32" });
    const checks = JSON.parse(r.out) as Array<{ name: string; ok: boolean; detail: string; fix: string | null }>;
    expect(checks.every((c) => Object.keys(c).sort().join() === "detail,fix,name,ok")).toBe(true);
    expect(checks.find((c) => c.name === "sized /tmp")).toEqual({ name: "sized /tmp", ok: true, detail: "32 MiB tmpfs per sandbox", fix: null });
  });

  test("a limit that does not hold is named with its fix, and the exit code is 1", () => {
    const r = doctor([], { OPS_SANDBOX_PIDS: "0" });
    expect(r.code).toBe(1);
    expect(r.out).toContain("FAIL  process limit: OPS_SANDBOX_PIDS is 0: sandboxes have no process limit");
    expect(r.out).toContain("      fix: set OPS_SANDBOX_PIDS (default 512)");
    expect(r.out.trim().split("\n").at(-1)).toBe("1 of 9 checks do not hold");
  });

  test("network isolation: a namespace made and closed as a build's; switched off on purpose, it is named with its fix", () => {
    const on = doctor([]);
    expect(on.out).toMatch(/ok {4}network isolation: a namespace per sandbox through pasta \(\d+ ms to make here\); the internet and ops's port 8080 reachable/);
    const off = doctor([], { OPS_SANDBOX_NETWORK: "host" });
    expect(off.code).toBe(1);
    expect(off.out).toContain("FAIL  network isolation: off on purpose (OPS_SANDBOX_NETWORK=host)");
    expect(off.out).toContain("      fix: apt-get install passt, then unset OPS_SANDBOX_NETWORK");
  });
});

describe("the list of checks", () => {
  const ctx: DoctorContext = { pids: 512, tmpMb: 256, buildMemoryMb: 2048, replicaMemoryMb: 512, buildDiskMb: 10240, dataDir: "/nonexistent" };

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
});
