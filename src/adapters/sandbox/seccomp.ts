/**
 * The seccomp filter every sandbox runs under (DESIGN §6, Limits), in the spirit of Docker's
 * default profile: the syscalls a build or an app has no use for and that widen the kernel's
 * attack surface or reach outside the sandbox return EPERM — mounts, new namespaces (a user
 * namespace inside the sandbox is how `unshare -r` gets root-like powers), ptrace, kernel modules,
 * kexec, bpf, keyrings, perf, handle-based opens, userfaultfd, setns, swap, reboot, the clock,
 * and io_uring (decision 0510: its requests run in kernel workers that seccomp never sees).
 * `clone3` answers ENOSYS (its flags live in memory a filter cannot read), so libc falls back to
 * `clone`, whose flags are checked like `unshare`'s. A syscall of another architecture (i386 or
 * x32 on an x86_64 host) kills the process: the table below would not name it rightly.
 *
 * The program is classic BPF over `struct seccomp_data` (nr at 0, arch at 4, args at 16), written
 * here as bytes (`struct sock_filter`: u16 code, u8 jt, u8 jf, u32 k, little-endian on both
 * architectures ops runs on), so no native library is needed. bwrap loads it (`--seccomp FD`) right
 * before it execs the sandbox's command, after its own mounts; bwrap sets `no_new_privs` first.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { JOIN_SHELL } from "./cgroups";

export type SeccompArch = "x64" | "arm64";

/** The syscalls denied with EPERM, by name (decisions 0229, 0510). */
export const DENIED = [
  "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
  "setns", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
  "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff",
  "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at",
  "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl", "quotactl_fd",
  "lookup_dcookie", "vhangup", "nfsservctl", "iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl",
  "create_module", "get_kernel_syms", "query_module",
  "io_uring_setup", "io_uring_enter", "io_uring_register",
] as const;

/** Syscall numbers (Linux uapi: asm/unistd_64.h for x86_64, asm-generic/unistd.h for aarch64); absent where the architecture has none. */
export const SYSCALLS: Record<SeccompArch, Record<string, number>> = {
  x64: {
    mount: 165, umount2: 166, pivot_root: 155, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, move_mount: 429, open_tree: 428, mount_setattr: 442,
    setns: 308, ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, kcmp: 312,
    kexec_load: 246, kexec_file_load: 320, init_module: 175, finit_module: 313, delete_module: 176, reboot: 169, swapon: 167, swapoff: 168,
    bpf: 321, perf_event_open: 298, userfaultfd: 323, keyctl: 250, add_key: 248, request_key: 249, open_by_handle_at: 304, name_to_handle_at: 303,
    acct: 163, settimeofday: 164, clock_settime: 227, clock_adjtime: 305, adjtimex: 159, syslog: 103, quotactl: 179, quotactl_fd: 443,
    lookup_dcookie: 212, vhangup: 153, nfsservctl: 180, iopl: 172, ioperm: 173, uselib: 134, ustat: 136, sysfs: 139, _sysctl: 156,
    create_module: 174, get_kernel_syms: 177, query_module: 178,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    clone: 56, clone3: 435, unshare: 272,
  },
  arm64: {
    mount: 40, umount2: 39, pivot_root: 41, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, move_mount: 429, open_tree: 428, mount_setattr: 442,
    setns: 268, ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, kcmp: 272,
    kexec_load: 104, kexec_file_load: 294, init_module: 105, finit_module: 273, delete_module: 106, reboot: 142, swapon: 224, swapoff: 225,
    bpf: 280, perf_event_open: 241, userfaultfd: 282, keyctl: 219, add_key: 217, request_key: 218, open_by_handle_at: 265, name_to_handle_at: 264,
    acct: 89, settimeofday: 170, clock_settime: 112, clock_adjtime: 266, adjtimex: 171, syslog: 116, quotactl: 60, quotactl_fd: 443,
    lookup_dcookie: 18, vhangup: 58, nfsservctl: 42,
    io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    clone: 220, clone3: 435, unshare: 97,
  },
};

/** AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64. */
export const AUDIT_ARCH: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };
/** The namespace flags of clone (CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET; the low byte is the exit signal). */
export const CLONE_NS_MASK = 0x7e020000;
/** The same for unshare, plus CLONE_NEWTIME. */
export const UNSHARE_NS_MASK = 0x7e020080;
const X32_SYSCALL_BIT = 0x40000000;

export const RET = { allow: 0x7fff0000, kill: 0x80000000, eperm: 0x00050000 | 1, enosys: 0x00050000 | 38 } as const;
export const OP = { ldAbs: 0x20, jeq: 0x15, jge: 0x35, jset: 0x45, ret: 0x06 } as const;

export interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

type Target = string | null;
interface Pending {
  code: number;
  k: number;
  jt?: Target;
  jf?: Target;
  label?: string;
}

/** The filter as instructions (see the file comment for what it decides). */
export function seccompInstructions(arch: SeccompArch): Insn[] {
  const nr = SYSCALLS[arch];
  const p: Pending[] = [];
  const at = (label: string, insn: Pending) => p.push({ ...insn, label });
  p.push({ code: OP.ldAbs, k: 4 });
  p.push({ code: OP.jeq, k: AUDIT_ARCH[arch], jt: null, jf: "kill" });
  p.push({ code: OP.ldAbs, k: 0 });
  if (arch === "x64") p.push({ code: OP.jge, k: X32_SYSCALL_BIT, jt: "kill", jf: null });
  p.push({ code: OP.jeq, k: nr.clone3!, jt: "enosys", jf: null });
  p.push({ code: OP.jeq, k: nr.clone!, jt: "clone", jf: null });
  p.push({ code: OP.jeq, k: nr.unshare!, jt: "unshare", jf: null });
  for (const name of DENIED) if (nr[name] !== undefined) p.push({ code: OP.jeq, k: nr[name]!, jt: "eperm", jf: null });
  p.push({ code: OP.ret, k: RET.allow });
  at("clone", { code: OP.ldAbs, k: 16 });
  p.push({ code: OP.jset, k: CLONE_NS_MASK, jt: "eperm", jf: "allow" });
  at("unshare", { code: OP.ldAbs, k: 16 });
  p.push({ code: OP.jset, k: UNSHARE_NS_MASK, jt: "eperm", jf: "allow" });
  at("allow", { code: OP.ret, k: RET.allow });
  at("eperm", { code: OP.ret, k: RET.eperm });
  at("enosys", { code: OP.ret, k: RET.enosys });
  at("kill", { code: OP.ret, k: RET.kill });
  const where = new Map(p.flatMap((x, i) => (x.label ? [[x.label, i] as const] : [])));
  const offset = (from: number, to: Target | undefined): number => {
    if (to === null || to === undefined) return 0;
    const off = where.get(to)! - from - 1;
    if (off < 0 || off > 255) throw new Error(`seccomp jump to ${to} out of range (${off})`);
    return off;
  };
  return p.map((x, i) => ({ code: x.code, jt: offset(i, x.jt), jf: offset(i, x.jf), k: x.k >>> 0 }));
}

/** The filter as `struct sock_filter[]` bytes, as `--seccomp FD` reads them. */
export function seccompProgram(arch: SeccompArch): Uint8Array {
  const insns = seccompInstructions(arch);
  const buf = new DataView(new ArrayBuffer(insns.length * 8));
  insns.forEach((x, i) => {
    buf.setUint16(i * 8, x.code, true);
    buf.setUint8(i * 8 + 2, x.jt);
    buf.setUint8(i * 8 + 3, x.jf);
    buf.setUint32(i * 8 + 4, x.k, true);
  });
  return new Uint8Array(buf.buffer);
}

/** This host's architecture in the filter's terms, or null when ops has no table for it. */
export function hostArch(): SeccompArch | null {
  return process.arch === "x64" || process.arch === "arm64" ? process.arch : null;
}

let written: string | null = null;

/**
 * The filter of this host's architecture in a file of a private temporary folder (made once per
 * process, removed at exit), or null when ops has no table for the architecture (then the sandbox
 * runs without one and `ops doctor` says so).
 */
export function seccompFile(): string | null {
  if (written) return written;
  const arch = hostArch();
  if (!arch) return null;
  const dir = mkdtempSync(path.join(tmpdir(), "ops-seccomp-"));
  const file = path.join(dir, `${arch}.bpf`);
  writeFileSync(file, seccompProgram(arch), { mode: 0o644 });
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return (written = file);
}

/** The file descriptor the filter is opened on for bwrap. */
export const SECCOMP_FD = 9;

/**
 * The argv prefix that opens `file` on SECCOMP_FD (bwrap gets `--seccomp 9`) and joins the groups
 * whose join files are `joins` (cgroups.ts `joinFile`: a v1 pids group), then execs the rest: one
 * shell for both, so the limits cost one exec per sandbox start.
 */
export function seccompOpenArgv(file: string | null, joins: readonly string[] = []): string[] {
  const open = file ? `exec ${SECCOMP_FD}<"$0" || exit 125; ` : "";
  const join = joins.map((_, i) => `J="\${${i + 1}}"; ${JOIN_SHELL} || { echo "ops: could not join the sandbox's cgroup" >&2; exit 125; }; `).join("");
  return ["/bin/sh", "-c", `${open}${join}shift ${joins.length}; exec "$@"`, file ?? "", ...joins];
}
