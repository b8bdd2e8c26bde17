/**
 * The native builder against the real bubblewrap sandbox and the host's cgroups: the user and
 * environment a build sees, what it cannot see, masking, each failure kind (checks, build, memory,
 * timeout), cancel killing the whole process tree, the output directory, and the dependency cache
 * measured with the real npm client fetching from a loopback tarball server.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import path from "node:path";
import { tempDir } from "./harness";
import { tarGz } from "./support/registries";
import { runNativeBuild } from "../src/adapters/builder/native";
import { createMemoryCgroup } from "../src/adapters/sandbox/cgroups";
import { builderJoinArgv, releaseLimit } from "../src/adapters/builder/limits";
import { secretMasker } from "../src/adapters/runtime/process";
import { HOST_UNPRIVILEGED_ID, runsAsRoot, sandboxArgv } from "../src/adapters/builder/sandbox";
import { findSandboxTools } from "../src/adapters/sandbox/users";
import { hostTrustVariables } from "../src/adapters/sandbox/bwrap";
import { HOST_NETWORK_NOTE, networkTools, type SandboxNetwork } from "../src/adapters/sandbox";
import type { BuildLine, NativeBuildSpec } from "../src/adapters/builder/types";

let root: string;
let n = 0;

/** A build context and work dir under a root the sandbox user can reach (as ops's own data dir is). */
function context(files: Record<string, string>): { contextDir: string; workDir: string } {
  const dir = path.join(root, `b${++n}`);
  const contextDir = path.join(dir, "src");
  mkdirSync(contextDir, { recursive: true });
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(contextDir, rel)), { recursive: true });
    writeFileSync(path.join(contextDir, rel), text);
  }
  return { contextDir, workDir: path.join(dir, "work") };
}

function spec(over: Partial<NativeBuildSpec> & Pick<NativeBuildSpec, "contextDir" | "workDir">): NativeBuildSpec {
  return { cacheDir: null, checks: [], build: [], variables: [], memoryMb: 256, stepTimeoutSecs: 60, output: ".", ...over };
}

function collect(): { lines: BuildLine[]; onLine(l: BuildLine): void; text(): string } {
  const lines: BuildLine[] = [];
  return { lines, onLine: (l) => lines.push(l), text: () => lines.map((l) => l.line).join("\n") };
}

beforeAll(() => {
  root = tempDir("ops-builder-");
  chmodSync(root, 0o755);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("sandbox", () => {
  test("commands run as user 1000 with only the build variables, secrets masked, nothing of the host's data visible", async () => {
    const dataDir = tempDir("ops-data-");
    writeFileSync(path.join(dataDir, "ops.db"), "not for builds");
    process.env.OPS_SECRETS_KEY_LEAK_PROBE = "must-not-leak";
    const ctx = context({ "hello.txt": "hi\n" });
    const log = collect();
    const res = await runNativeBuild(
      spec({
        ...ctx,
        hide: [dataDir],
        variables: [
          { name: "NODE_ENV", value: "production", secret: false },
          { name: "API_KEY", value: "s3cr3t-value-123", secret: true },
        ],
        checks: ["id -u; id -g; pwd; env | sort"],
        build: [`echo key=$API_KEY; ls ${dataDir} 2>&1 || true; cat hello.txt; echo made > built.txt`],
      }),
      { onLine: log.onLine },
    );
    delete process.env.OPS_SECRETS_KEY_LEAK_PROBE;
    expect(res.status).toBe("succeeded");
    const out = log.lines.filter((l) => l.stream === "stdout").map((l) => l.line);
    expect(out.slice(0, 3)).toEqual(["1000", "1000", "/app"]);
    const envKeys = out.filter((l) => /^[A-Z_]+=/.test(l)).map((l) => l.split("=")[0]);
    // Besides the build's own: the CA files ops trusts itself, when it is given any (decision 0203).
    expect(envKeys.sort()).toEqual(["API_KEY", "CI", "HOME", "LANG", "LOGNAME", "NODE_ENV", "PATH", "PWD", "TMPDIR", "USER", ...Object.keys(hostTrustVariables())].sort());
    expect(log.text()).not.toContain("s3cr3t-value-123");
    expect(out).toContain("API_KEY=***");
    expect(out).toContain("key=***");
    expect(log.text()).not.toContain("must-not-leak");
    expect(out.some((l) => l.includes("No such file or directory"))).toBe(true);
    expect(out).toContain("hi");
    expect(res.outputDir).toBe(ctx.contextDir);
    expect(readFileSync(path.join(ctx.contextDir, "built.txt"), "utf8")).toBe("made\n");
    if (runsAsRoot()) expect(statSync(path.join(ctx.contextDir, "built.txt")).uid).toBe(HOST_UNPRIVILEGED_ID);
    expect(res.timings.map((t) => [t.step, t.ok])).toEqual([
      ["checks", true],
      ["building", true],
    ]);
    expect(res.memory === "cgroup1" || res.memory === "cgroup2").toBe(true);
    expect(log.lines[0]).toMatchObject({ stream: "ops", line: expect.stringMatching(/^memory limit 256 MiB \(cgroup v[12]\)$/) });
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("the host's files outside the bound trees are not there, and the bound ones are read-only", async () => {
    const ctx = context({});
    const log = collect();
    const res = await runNativeBuild(spec({ ...ctx, build: ["test ! -e /root && test ! -e /var/lib && test ! -e /etc/shadow && echo hidden", "touch /usr/x 2>/dev/null || echo read-only"] }), { onLine: log.onLine });
    expect(res.status).toBe("succeeded");
    expect(log.lines.filter((l) => l.stream === "stdout").map((l) => l.line)).toEqual(["hidden", "read-only"]);
  });

  test("a hidden path under a bound host tree is covered by an empty tmpfs", async () => {
    const ctx = context({});
    const log = collect();
    const res = await runNativeBuild(spec({ ...ctx, hide: ["/etc/ssl/certs"], build: ["ls -A /etc/ssl/certs | wc -l; ls /etc/ssl | grep -c certs"] }), { onLine: log.onLine });
    expect(res.status).toBe("succeeded");
    expect(log.lines.filter((l) => l.stream === "stdout").map((l) => l.line.trim())).toEqual(["0", "1"]);
  });

  test("a step's commands share one sandbox, and the log shows each command before its own output on both streams", async () => {
    const ctx = context({});
    const log = collect();
    const build = [
      // A helper the next command talks to, as a check might start a database for the tests.
      "sh -c 'while true; do date +%s%N > helper.tick; sleep 0.05; done' & echo $! > helper.pid; echo first-out; echo first-err >&2; printf partial",
      "sleep 0.2; kill -0 $(cat helper.pid) && echo helper-alive; echo second-err >&2",
      "echo third",
    ];
    const res = await runNativeBuild(spec({ ...ctx, build }), { onLine: log.onLine });
    expect(res.status).toBe("succeeded");
    const lines = log.lines.filter((l) => l.stream !== "ops" || l.line.startsWith("$ ")).map((l) => `${l.stream}:${l.line}`);
    const at = (i: number) => lines.indexOf(`ops:$ ${build[i]}`);
    expect(at(0)).toBe(0);
    expect(lines.slice(1, at(1)).sort()).toEqual(["stderr:first-err", "stdout:first-out", "stdout:partial"]);
    expect(lines.slice(at(1) + 1, at(2)).sort()).toEqual(["stderr:second-err", "stdout:helper-alive"]);
    expect(lines.slice(at(2) + 1)).toEqual(["stdout:third"]);
    // The step's end still ends everything it started.
    const tick = readFileSync(path.join(ctx.contextDir, "helper.tick"), "utf8");
    await Bun.sleep(300);
    expect(readFileSync(path.join(ctx.contextDir, "helper.tick"), "utf8")).toBe(tick);
  });

  test("/etc/localtime is the host's link, so Node.js names the host's time zone without reading every zone file", async () => {
    const ctx = context({});
    const log = collect();
    const hostLink = lstatSync("/etc/localtime", { throwIfNoEntry: false })?.isSymbolicLink() ? readlinkSync("/etc/localtime") : null;
    const res = await runNativeBuild(
      spec({
        ...ctx,
        build: ["readlink /etc/localtime || echo not-a-link", "node -e 'console.log(Intl.DateTimeFormat().resolvedOptions().timeZone)'"],
      }),
      { onLine: log.onLine },
    );
    expect(res.status).toBe("succeeded");
    const out = log.lines.filter((l) => l.stream === "stdout").map((l) => l.line);
    const hostZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (hostLink === null) return; // A host without the link has nothing to keep.
    expect(out[0]).toBe(hostLink);
    expect(out[1]).toBe(hostZone);
    // With the link, ICU reads the zone through it and opens no file under zoneinfo/ itself. The
    // sandbox's seccomp filter refuses ptrace inside it, so strace traces the sandbox from outside.
    const tools = findSandboxTools();
    if (typeof tools === "string") throw new Error(tools);
    const opens = path.join(ctx.workDir, "opens");
    const traced = Bun.spawnSync(["strace", "-f", "-e", "trace=openat,open", "-o", opens, ...sandboxArgv(tools, { mounts: [], chdir: "/" }, ["node", "-e", "0"])], { env: { PATH: "/usr/bin:/bin" } });
    expect(traced.exitCode).toBe(0);
    expect(readFileSync(opens, "utf8").split("\n").filter((l) => l.includes("zoneinfo/")).length).toBeLessThan(3);
  });

  test("without bubblewrap on the PATH the build fails as internal and says what to install", async () => {
    const ctx = context({});
    const log = collect();
    const res = await runNativeBuild(spec({ ...ctx, build: ["true"], toolPath: "/nonexistent" }), { onLine: log.onLine });
    expect(res).toMatchObject({ status: "failed", failureKind: "internal" });
    expect(res.error).toContain("bubblewrap");
    expect(log.text()).toContain("apt-get install bubblewrap");
  });

  test("without pasta the build is refused naming the package; with OPS_SANDBOX_NETWORK=host it runs and its log says so", async () => {
    const network = (over: Partial<SandboxNetwork>): SandboxNetwork => ({
      mode: "isolated",
      refusal: null,
      note: null,
      policy: { hostPorts: [], publicHost: null, allowCidrs: [], hostAddresses: [] },
      open: async () => null,
      adopt: () => "no namespaces here",
      etc: () => ({ resolv: "/etc/resolv.conf", hosts: "/etc/hosts" }),
      ...over,
    });
    const refusal = networkTools("/nonexistent") as string;
    const refused = collect();
    const res = await runNativeBuild(spec({ ...context({}), build: ["echo ran"], network: network({ refusal }) }), { onLine: refused.onLine });
    expect(res).toMatchObject({ status: "failed", failureKind: "internal", error: refusal });
    expect(refused.text()).toContain("pasta (Debian package passt) is not installed");
    expect(refused.text()).not.toContain("ran");
    const host = collect();
    const ok = await runNativeBuild(spec({ ...context({}), build: ["echo ran"], network: network({ mode: "host", note: HOST_NETWORK_NOTE }) }), { onLine: host.onLine });
    expect(ok.status).toBe("succeeded");
    expect(host.text()).toContain("network isolation is off (OPS_SANDBOX_NETWORK=host)");
  });

  test("secret values are masked whole, longest first, multi-line ones line by line", () => {
    const mask = secretMasker(["abc", "token-1234", "token-1234-extended", "-----BEGIN X-----\nAAAABBBBCCCC\n-----END X-----"]);
    expect(mask("a token-1234-extended and token-1234 abc")).toBe("a *** and *** abc");
    expect(mask("AAAABBBBCCCC")).toBe("***");
  });
});

describe("failures", () => {
  test("a failing check fails the build with checks and the build commands never run", async () => {
    const ctx = context({});
    const log = collect();
    const res = await runNativeBuild(spec({ ...ctx, checks: ["echo checking", "exit 3"], build: ["touch ran"] }), { onLine: log.onLine });
    expect(res).toMatchObject({ status: "failed", failureKind: "checks", failedStep: "checks", failedCommand: "exit 3", error: '"exit 3" exited with code 3' });
    expect(existsSync(path.join(ctx.contextDir, "ran"))).toBe(false);
    expect(res.timings).toEqual([expect.objectContaining({ step: "checks", ok: false })]);
  });

  test("a failing build command fails with build and names the command", async () => {
    const ctx = context({});
    const log = collect();
    const res = await runNativeBuild(spec({ ...ctx, checks: ["true"], build: ["echo one", "no-such-tool --flag"] }), { onLine: log.onLine });
    expect(res).toMatchObject({ status: "failed", failureKind: "build", failedStep: "building", failedCommand: "no-such-tool --flag" });
    expect(res.error).toContain("exited with code 127");
    // The log points to the recipes that work (issue 27).
    expect(log.text()).toContain("docs/guide/recipes.md");
  });

  test("a build over its memory limit fails with memory, read from the kernel's OOM counter", async () => {
    const ctx = context({});
    const log = collect();
    const res = await runNativeBuild(
      spec({ ...ctx, memoryMb: 64, build: ["node -e 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))'"] }),
      { onLine: log.onLine },
    );
    expect(res).toMatchObject({ status: "failed", failureKind: "memory", failedStep: "building" });
    expect(res.error).toContain("ran out of memory (limit 64 MiB)");
  });

  test("a step over its time limit fails as that step, marked timed out", async () => {
    const ctx = context({});
    const started = Date.now();
    const res = await runNativeBuild(spec({ ...ctx, stepTimeoutSecs: 1, build: ["sleep 30"] }), { onLine: () => {} });
    expect(res).toMatchObject({ status: "failed", failureKind: "build", timedOut: true });
    expect(res.error).toContain("timed out after 1s");
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  test("cancel kills the whole process tree, background children included", async () => {
    const ctx = context({});
    const ac = new AbortController();
    const res = runNativeBuild(spec({ ...ctx, build: ["(while true; do date +%s%N > tick; sleep 0.1; done) & echo started; sleep 300"] }), {
      onLine: (l) => {
        if (l.line === "started") setTimeout(() => ac.abort(), 300);
      },
      signal: ac.signal,
    });
    const out = await res;
    expect(out).toMatchObject({ status: "cancelled", failedStep: "building", failureKind: null });
    const tick = path.join(ctx.contextDir, "tick");
    const first = readFileSync(tick, "utf8");
    await Bun.sleep(500);
    expect(readFileSync(tick, "utf8")).toBe(first);
  });

  test("the output directory must exist and stay inside the context", async () => {
    const a = context({});
    const missing = await runNativeBuild(spec({ ...a, build: ["true"], output: "dist" }), { onLine: () => {} });
    expect(missing).toMatchObject({ status: "failed", failureKind: "build", error: 'the output directory "dist" does not exist after the build' });
    const b = context({});
    symlinkSync("/etc", path.join(b.contextDir, "out"));
    const escaping = await runNativeBuild(spec({ ...b, build: ["true"], output: "out" }), { onLine: () => {} });
    expect(escaping.error).toContain("leads outside the build context");
    const dotdot = await runNativeBuild(spec({ ...b, build: ["true"], output: "../x" }), { onLine: () => {} });
    expect(dotdot).toMatchObject({ status: "failed", failureKind: "build" });
    expect(dotdot.error).toContain("must be a relative path inside the build context");
  });

  test("a command joins the build's memory group before it runs, and what it forks is in the group too; the group goes afterwards", async () => {
    const attempt = createMemoryCgroup(`ops-build-join-test-${process.pid}`, 1 << 28);
    if (!attempt.cgroup) return; // No writable memory controller here: the memory test above says so.
    const cg = attempt.cgroup;
    const groupOf = (text: string) => text.split("\n").find((l) => (cg.version === 1 ? /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l) : l.startsWith("0::")))?.replace(/^\d+:[^:]*:/, "");
    const proc = Bun.spawn([...builderJoinArgv(cg), "/bin/sh", "-c", "cat /proc/self/cgroup; echo --; /bin/sh -c 'cat /proc/self/cgroup'"], { stdout: "pipe", stderr: "pipe" });
    const out = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    const [own, child] = out.split("--\n");
    expect(cg.dir.endsWith(groupOf(own)!)).toBe(true);
    expect(cg.dir.endsWith(groupOf(child)!)).toBe(true);
    await releaseLimit(cg);
    expect(existsSync(cg.dir)).toBe(false);
  });

  test("a cgroup that cannot be created is reported with the reason, not ignored", () => {
    const attempt = createMemoryCgroup("ops-build-probe", 1 << 26, [{ version: 1, own: "/proc/self" }]);
    expect(attempt.cgroup).toBeNull();
    expect(attempt.reason).toContain("cgroup v1: cannot create /proc/self/ops-build-probe");
  });
});

describe("dependency cache", () => {
  test("npm ci from a cold cache is a miss, the next build of the same lockfile a hit with no download", async () => {
    const tgz = await tarGz({ "package/package.json": JSON.stringify({ name: "tiny-dep", version: "1.0.0", main: "index.js" }), "package/index.js": "module.exports = 42;\n" });
    let downloads = 0;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        if (new URL(req.url).pathname !== "/tiny-dep-1.0.0.tgz") return new Response("not found", { status: 404 });
        downloads++;
        return new Response(tgz, { headers: { "content-type": "application/octet-stream" } });
      },
    });
    try {
      const url = `http://127.0.0.1:${server.port}/tiny-dep-1.0.0.tgz`;
      const integrity = `sha512-${createHash("sha512").update(tgz).digest("base64")}`;
      const files = {
        "package.json": JSON.stringify({ name: "app", version: "1.0.0", dependencies: { "tiny-dep": url }, scripts: { build: "node -e \"require('fs').writeFileSync('answer', String(require('tiny-dep')))\"" } }),
        "package-lock.json": JSON.stringify({
          name: "app",
          version: "1.0.0",
          lockfileVersion: 3,
          requires: true,
          packages: { "": { name: "app", version: "1.0.0", dependencies: { "tiny-dep": url } }, "node_modules/tiny-dep": { version: "1.0.0", resolved: url, integrity } },
        }),
      };
      const cacheDir = path.join(root, "cache-web");
      const build = ["npm ci --no-audit --no-fund", "npm run build"];
      const cold = context(files);
      const first = await runNativeBuild(spec({ ...cold, cacheDir, build }), { onLine: () => {} });
      expect(first.status).toBe("succeeded");
      expect(readFileSync(path.join(cold.contextDir, "answer"), "utf8")).toBe("42");
      expect(first.cacheHit).toBe(0);
      expect(downloads).toBe(1);
      const warm = context(files);
      const second = await runNativeBuild(spec({ ...warm, cacheDir, build }), { onLine: () => {} });
      expect(second.status).toBe("succeeded");
      expect(readFileSync(path.join(warm.contextDir, "answer"), "utf8")).toBe("42");
      expect(second.cacheHit).toBe(1);
      expect(downloads).toBe(1);
      const none = context({});
      const third = await runNativeBuild(spec({ ...none, cacheDir: path.join(root, "cache-empty"), build: ["true"] }), { onLine: () => {} });
      expect(third.cacheHit).toBeNull();
    } finally {
      server.stop(true);
    }
  });
});
