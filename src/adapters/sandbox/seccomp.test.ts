/**
 * The seccomp program, run through a small classic-BPF interpreter for both architectures (what
 * the kernel decides for a syscall, its flags and a foreign architecture), and its syscall numbers
 * checked against this host's kernel headers where they are installed.
 */
import { describe, test, expect } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { AUDIT_ARCH, CLONE_NS_MASK, DENIED, OP, RET, SYSCALLS, seccompInstructions, seccompProgram, type SeccompArch } from "./seccomp";

/** Run the filter on one `struct seccomp_data` (nr, arch, args[0]). */
function decide(arch: SeccompArch, data: { nr: number; arch?: number; arg0?: number }): number {
  const prog = seccompInstructions(arch);
  const mem = new DataView(new ArrayBuffer(64));
  mem.setInt32(0, data.nr, true);
  mem.setUint32(4, data.arch ?? AUDIT_ARCH[arch], true);
  mem.setUint32(16, data.arg0 ?? 0, true);
  let a = 0;
  for (let pc = 0; pc < prog.length; pc++) {
    const i = prog[pc]!;
    if (i.code === OP.ldAbs) a = mem.getUint32(i.k, true);
    else if (i.code === OP.ret) return i.k;
    else {
      const taken = i.code === OP.jeq ? a === i.k : i.code === OP.jge ? a >>> 0 >= i.k : (a & i.k) !== 0;
      pc += taken ? i.jt : i.jf;
    }
  }
  throw new Error("fell off the program");
}

const CLONE_THREAD_FLAGS = 0x003d0f00; // what pthread_create passes
const CLONE_NEWUSER = 0x10000000;

for (const arch of ["x64", "arm64"] as const) {
  describe(`the ${arch} filter`, () => {
    const nr = SYSCALLS[arch];
    test("denies every listed syscall the architecture has with EPERM", () => {
      for (const name of DENIED) if (nr[name] !== undefined) expect([name, decide(arch, { nr: nr[name]! })]).toEqual([name, RET.eperm]);
    });

    test("allows ordinary syscalls (read, write, openat, execve)", () => {
      const ordinary = arch === "x64" ? [0, 1, 257, 59] : [63, 64, 56, 221];
      for (const n of ordinary) expect(decide(arch, { nr: n })).toBe(RET.allow);
    });

    test("clone: threads and forks pass, new namespaces are refused; clone3 answers ENOSYS", () => {
      expect(decide(arch, { nr: nr.clone!, arg0: CLONE_THREAD_FLAGS })).toBe(RET.allow);
      expect(decide(arch, { nr: nr.clone!, arg0: 17 /* SIGCHLD: fork */ })).toBe(RET.allow);
      expect(decide(arch, { nr: nr.clone!, arg0: 17 | CLONE_NEWUSER })).toBe(RET.eperm);
      expect(decide(arch, { nr: nr.clone!, arg0: CLONE_NS_MASK })).toBe(RET.eperm);
      expect(decide(arch, { nr: nr.clone3! })).toBe(RET.enosys);
    });

    test("unshare: of a user namespace refused, of files or fs allowed", () => {
      expect(decide(arch, { nr: nr.unshare!, arg0: CLONE_NEWUSER })).toBe(RET.eperm);
      expect(decide(arch, { nr: nr.unshare!, arg0: 0x80 /* CLONE_NEWTIME */ })).toBe(RET.eperm);
      expect(decide(arch, { nr: nr.unshare!, arg0: 0x400 /* CLONE_FILES */ })).toBe(RET.allow);
    });

    test("io_uring (setup, enter, register) is refused with EPERM, as in Docker's current profile (decision 0510)", () => {
      for (const name of ["io_uring_setup", "io_uring_enter", "io_uring_register"]) expect([name, nr[name] !== undefined && decide(arch, { nr: nr[name]! })]).toEqual([name, RET.eperm]);
      expect([nr.io_uring_setup, nr.io_uring_enter, nr.io_uring_register]).toEqual([425, 426, 427]);
    });

    test("a syscall of another architecture kills the process", () => {
      expect(decide(arch, { nr: 0, arch: 0x40000003 /* i386 */ })).toBe(RET.kill);
    });

    test("is 8 bytes per instruction", () => {
      expect(seccompProgram(arch).byteLength).toBe(seccompInstructions(arch).length * 8);
    });
  });
}

test("x32 syscalls on x86_64 are killed", () => {
  expect(decide("x64", { nr: 0x40000000 + 165 })).toBe(RET.kill);
});

test("the numbers are the kernel's (this host's uapi headers)", () => {
  const headers: Record<SeccompArch, string[]> = {
    x64: ["/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"],
    arm64: ["/usr/include/asm-generic/unistd.h"],
  };
  let checked = 0;
  for (const arch of ["x64", "arm64"] as const) {
    const file = headers[arch].find(existsSync);
    if (!file) continue;
    const text = readFileSync(file, "utf8");
    for (const [name, n] of Object.entries(SYSCALLS[arch])) {
      const m = new RegExp(`^#define __NR(?:3264)?_${name}\\s+(\\d+)`, "m").exec(text);
      expect([name, m ? Number(m[1]) : null]).toEqual([name, n]);
      checked++;
    }
    for (const name of DENIED) if (SYSCALLS[arch][name] === undefined) expect([name, new RegExp(`^#define __NR_${name}\\s`, "m").test(text)]).toEqual([name, false]);
  }
  expect(checked).toBeGreaterThan(0);
});
