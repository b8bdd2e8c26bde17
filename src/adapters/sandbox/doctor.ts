/**
 * What this host gives ops's sandboxes (DESIGN §6): the checks `ops doctor` runs, each answering
 * with a name, whether it holds, what was found and, when it does not hold, how to fix it. A limit
 * the host cannot enforce is named here as well as in build logs and service status, never skipped.
 *
 * Checks do what a sandbox does rather than guess from files: the cgroup checks make a group and
 * remove it, the sandbox check runs a command in a real sandbox and reads back its seccomp mode,
 * `no_new_privs`, the sizes of its /tmp and /dev/shm and whether the rest of /dev takes a file.
 * `DOCTOR_CHECKS` is a list other parts of ops append to (`addDoctorCheck`), e.g. the network
 * checks; each runs on its own and a check that throws is reported as failed with the error. What
 * holds for each kind of run follows from these verdicts (doctor-limits.ts).
 */
import { readFileSync } from "node:fs";
import { createMemoryCgroup } from "./cgroups";
import { createPidsGroup } from "./pids";
import { hostArch, seccompFile } from "./seccomp";
import { diskCapUnsupported } from "./disk";
import { KEEP_SHARE } from "../builder/cache";
import { sandboxArgv } from "./bwrap";
import { findSandboxTools, runsAsRoot } from "./users";
import { DEFAULT_PATH } from "../runtime/process";
import { networkCheck } from "./doctor-network";

export type { DoctorCheck, DoctorCheckFn, DoctorContext } from "./doctor-types";
import { CHECK, type DoctorCheck, type DoctorCheckFn, type DoctorContext } from "./doctor-types";

const ok = (name: string, detail: string): DoctorCheck => ({ name, ok: true, detail, fix: null });
const fail = (name: string, detail: string, fix: string): DoctorCheck => ({ name, ok: false, detail, fix });

function identity(c: DoctorContext): DoctorCheck {
  if (runsAsRoot()) return ok("identity", `ops runs as root: every sandbox drops to its project's own unprivileged host user (uid ${c.uidBase ?? 200000} + the project's slot) before it starts (never root)`);
  return ok("identity", `ops runs as uid ${process.getuid?.()}: every sandbox runs as that user inside user namespaces (projects share it)`);
}

function userNamespaces(): DoctorCheck {
  let max = "";
  try {
    max = readFileSync("/proc/sys/user/max_user_namespaces", "utf8").trim();
  } catch {
    return fail("user namespaces", "/proc/sys/user/max_user_namespaces is missing", "run ops on Linux 4.9 or later");
  }
  if (Number(max) > 0) return ok("user namespaces", `available (max_user_namespaces ${max})`);
  return fail("user namespaces", "disabled (max_user_namespaces 0): bubblewrap cannot make its sandbox", "sysctl -w user.max_user_namespaces=15000 (and in /etc/sysctl.d/)");
}

function bubblewrap(): DoctorCheck {
  const tools = findSandboxTools(DEFAULT_PATH, "builds and replicas");
  if (typeof tools === "string") return fail("bubblewrap", tools, runsAsRoot() ? "apt-get install bubblewrap util-linux" : "apt-get install bubblewrap");
  const version = Bun.spawnSync([tools.bwrap, "--version"]).stdout.toString().trim();
  return ok("bubblewrap", `${version} at ${tools.bwrap}${tools.setpriv ? `; setpriv at ${tools.setpriv}` : ""}`);
}

async function memoryCgroup(c: DoctorContext): Promise<DoctorCheck> {
  const attempt = createMemoryCgroup(`ops-doctor-${process.pid}-memory`, 64 * 1024 * 1024);
  if (!attempt.cgroup) {
    return fail(CHECK.memory, `builds (${c.buildMemoryMb} MiB), job runs (${c.jobMemoryMb} MiB), release steps and replicas (${c.replicaMemoryMb} MiB by default) run with it NOT enforced: ${attempt.reason}`, "give ops a writable memory cgroup: run it as a systemd service with Delegate=yes, or as root on a host with cgroup v2 (or v1's memory controller)");
  }
  const how = attempt.cgroup.how;
  await attempt.cgroup.remove();
  return ok(CHECK.memory, `enforced through ${how}: builds ${c.buildMemoryMb} MiB, job runs ${c.jobMemoryMb} MiB, release steps and replicas ${c.replicaMemoryMb} MiB unless limits.memory_mb says otherwise`);
}

async function pidsCgroup(c: DoctorContext): Promise<DoctorCheck> {
  if (c.pids <= 0) return fail(CHECK.pids, "OPS_SANDBOX_PIDS is 0: sandboxes have no process limit", "set OPS_SANDBOX_PIDS (default 512)");
  const attempt = createPidsGroup(`ops-doctor-${process.pid}-pids`, c.pids);
  if (!attempt.group) return fail(CHECK.pids, `${c.pids} per sandbox is NOT enforced: ${attempt.reason}`, "give ops a writable pids cgroup (cgroup v2 with the pids controller delegated, or v1's pids hierarchy)");
  const how = attempt.group.how;
  await attempt.group.remove();
  return ok(CHECK.pids, `${c.pids} processes per sandbox, enforced through ${how}`);
}

/** Run `sh -c script` in a real sandbox (sized /tmp, the filter) and return its output. */
function inSandbox(c: DoctorContext, script: string): { code: number | null; out: string } {
  const tools = findSandboxTools(DEFAULT_PATH);
  if (typeof tools === "string") return { code: null, out: tools };
  const argv = sandboxArgv(tools, { mounts: [], chdir: "/", tmpfs: ["/tmp"], tmpSizeMb: c.tmpMb, hostname: "ops-doctor" }, ["/bin/sh", "-c", script]);
  const p = Bun.spawnSync(argv, { env: { PATH: DEFAULT_PATH }, cwd: "/" });
  return { code: p.exitCode, out: p.stdout.toString() + p.stderr.toString() };
}

function seccomp(c: DoctorContext): DoctorCheck {
  const arch = hostArch();
  if (!arch || !seccompFile()) return fail(CHECK.seccomp, `no filter for ${process.arch}: sandboxes run without one (no_new_privs still set)`, "run ops on x86_64 or aarch64");
  const r = inSandbox(c, "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; unshare -r true 2>/dev/null && echo userns=allowed || echo userns=refused");
  const nnp = /^NoNewPrivs:\s+1$/m.test(r.out);
  const filtered = /^Seccomp:\s+2$/m.test(r.out);
  const refused = r.out.includes("userns=refused");
  if (r.code === 0 && nnp && filtered && refused) return ok(CHECK.seccomp, `filter loaded (${arch}): mounts, new namespaces, ptrace, kernel modules, bpf … return EPERM; no_new_privs set`);
  return fail(CHECK.seccomp, `a sandbox ran with no_new_privs ${nnp ? "set" : "NOT set"}, filter ${filtered ? "loaded" : "NOT loaded"}, user namespaces ${refused ? "refused" : "allowed"} (exit ${r.code}: ${r.out.trim().slice(0, 200)})`, "install bubblewrap 0.4 or later (--seccomp)");
}

function sizedTmp(c: DoctorContext): DoctorCheck {
  const r = inSandbox(c, "df -P -k /tmp /dev/shm | tail -n 2; touch /dev/ops-doctor 2>/dev/null && echo dev=writable || echo dev=read-only");
  const sizes = r.out.trim().split("\n").slice(0, 2).map((l) => Number(l.trim().split(/\s+/)[1]));
  const sized = sizes.length === 2 && sizes.every((kb) => kb > 0 && kb <= c.tmpMb * 1024);
  if (r.code === 0 && sized && r.out.includes("dev=read-only")) return ok(CHECK.tmp, `${c.tmpMb} MiB tmpfs each per sandbox; the rest of /dev read-only`);
  return fail(CHECK.tmp, `a sandbox's /tmp and /dev/shm are not ${c.tmpMb} MiB each with the rest of /dev read-only (${r.out.trim().slice(0, 200)})`, "install bubblewrap 0.8 or later (--size)");
}

const DISK_FIX = "run ops as root on a host with loop devices and e2fsprogs";

function buildDisk(c: DoctorContext): DoctorCheck {
  if (c.buildDiskMb <= 0) return fail(CHECK.disk, "OPS_BUILD_MAX_DISK_MB is 0: a build or a job run may fill the data disk", "set OPS_BUILD_MAX_DISK_MB (default 10240)");
  const why = diskCapUnsupported();
  if (why) return fail(CHECK.disk, `the cap of ${c.buildDiskMb} MiB per build dir and job run's home is NOT enforced: ${why}`, DISK_FIX);
  return ok(CHECK.disk, `${c.buildDiskMb} MiB per build dir and per job run's home (an ext4 image on a loop device)`);
}

function dependencyCaches(c: DoctorContext): DoctorCheck {
  if (c.cacheMb <= 0) return fail(CHECK.caches, "OPS_CACHE_MAX_MB is 0: a project's dependency caches may fill the data disk", "set OPS_CACHE_MAX_MB (default 5120)");
  const keep = `trimmed least recently used first to ${Math.floor(c.cacheMb * KEEP_SHARE)} MiB after them`;
  const why = diskCapUnsupported();
  if (why) return fail(CHECK.caches, `the cap of ${c.cacheMb} MiB per project is NOT enforced while its builds run: ${why}; ${keep}`, DISK_FIX);
  return ok(CHECK.caches, `${c.cacheMb} MiB per project (npm, cargo, pip and buildah's layers; an ext4 image on a loop device while its builds run), ${keep}`);
}

/** The checks, in the order they print; append with `addDoctorCheck`. */
export const DOCTOR_CHECKS: DoctorCheckFn[] = [identity, userNamespaces, bubblewrap, networkCheck, memoryCgroup, pidsCgroup, seccomp, sizedTmp, buildDisk, dependencyCaches];

export function addDoctorCheck(check: DoctorCheckFn): void {
  DOCTOR_CHECKS.push(check);
}

/** Run every check (one that throws is a failed check naming the error). */
export async function runDoctor(ctx: DoctorContext, checks: readonly DoctorCheckFn[] = DOCTOR_CHECKS): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  for (const check of checks) {
    try {
      out.push(await check(ctx));
    } catch (e) {
      out.push(fail(check.name || "check", `the check failed: ${(e as Error).message}`, "report this to the ops maintainers with the output above"));
    }
  }
  return out;
}
