/**
 * The hostile repository, disks beside the build dir (DESIGN §6 "Limits"; issue 32 items 3, 4 and
 * 6): build commands that fill the dependency caches (`~/.npm`, `~/.cargo/registry`,
 * `~/.cache/pip`, which outlive the build) or `/dev/shm`, or write elsewhere under `/dev`. A
 * project's caches share OPS_CACHE_MAX_MB: a write past it fails with ENOSPC while the build runs,
 * and after it the caches are trimmed least recently used first to three quarters of it. Pushed
 * with the real `git` CLI, built for real with ops as root (as CI runs), one build after another.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import type { TestApp } from "../harness";
import { buildsApp, buildWorld, drain, getBuild, logText, manualBuild, SAMPLE_APP, type BuildWorld } from "../builds-fixtures";
import { pushTree } from "./files-support";
import { mountsUnder } from "../../src/adapters/sandbox/disk";
import { openCache, projectCache } from "../../src/adapters/builder/cache";

const CACHE_MB = 48;
const TMP_MB = 16;
const DISK_MB = 64;
const ENTRY_MB = 13;

let t: TestApp;
let w: BuildWorld;
const ids: Record<string, number> = {};

const toml = (build: string[]) => `[services.web]\nbuild = ${JSON.stringify(build)}\noutput = "dist"\nstart = "node server.js"\nport = 3000\n`;
const dist = ["mkdir -p dist", "cp server.js dist/"];
const fill = (file: string, mb: number) => `head -c ${mb * 1024 * 1024} /dev/zero > ${file} || { echo "write failed"; exit 7; }`;

/** Each branch's build commands, built in this order. */
const BRANCHES: Array<[string, string[]]> = [
  // Twice the project's cap into ~/.npm, which outlives the build.
  ["cache-flood", [...dist, fill("$HOME/.npm/flood.bin", CACHE_MB * 2)]],
  // Three entries, one build each; the third build reads the first, so the second is the least recently used.
  ["cache-a", [...dist, fill("$HOME/.npm/a.bin", ENTRY_MB)]],
  ["cache-b", [...dist, fill("$HOME/.cargo/registry/b.bin", ENTRY_MB)]],
  ["cache-c", [...dist, "cat $HOME/.npm/a.bin > /dev/null", fill("$HOME/.cache/pip/c.bin", ENTRY_MB)]],
  ["cache-list", [...dist, "ls $HOME/.npm $HOME/.cargo/registry $HOME/.cache/pip | grep bin$ | sed 's/^/kept /'"]],
  // Four times OPS_SANDBOX_TMP_MB into /dev/shm, then a file and a folder elsewhere under /dev.
  ["shm-full", [...dist, fill("/dev/shm/fill.bin", TMP_MB * 4)]],
  ["dev-write", [...dist, "echo x > /dev/null && echo null=ok", "touch /dev/evil || echo dev refused", "mkdir /dev/more || echo mkdir refused"]],
  // A container build: buildah's layers are the service's cache too.
  ["container", []],
];

const CONTAINER = {
  "ops.toml": '[services.web]\ndockerfile = "Dockerfile"\nport = 3000\n',
  Dockerfile: 'FROM scratch\nCOPY server.js /app/server.js\nCMD ["node", "/app/server.js"]\n',
};

beforeAll(async () => {
  t = await buildsApp({ OPS_CACHE_MAX_MB: String(CACHE_MB), OPS_SANDBOX_TMP_MB: String(TMP_MB), OPS_BUILD_MAX_DISK_MB: String(DISK_MB) });
  w = await buildWorld(t);
  for (const [branch, build] of BRANCHES) {
    await pushTree(w.local.remote, branch, { "server.js": SAMPLE_APP["server.js"]!, ...(branch === "container" ? CONTAINER : { "ops.toml": toml(build) }) });
    ids[branch] = (await manualBuild(w, branch)).id;
    await drain(t);
  }
}, 600_000);

afterAll(async () => {
  w?.local.remove();
  await t?.close();
});

/** The build's log lines (a command's echo is a line of its own, `$ …`, so a word it prints is matched whole). */
async function logLines(id: number): Promise<string[]> {
  return (await logText(w, id)).split("\n");
}

/** KiB the data dir's `cache/` takes on the disk (sparse images count what they hold). */
function cacheKib(): number {
  const p = Bun.spawnSync(["du", "-sk", path.join(t.dataDir, "cache")]);
  return Number(p.stdout.toString().split(/\s/)[0]);
}

describe("dependency caches (OPS_CACHE_MAX_MB)", () => {
  test("a build writing past the project's cap into ~/.npm gets ENOSPC, and the data disk keeps less than the cap", async () => {
    const b = await getBuild(w, ids["cache-flood"]!);
    const log = await logLines(b.id);
    expect(b.status).toBe("failed");
    expect(log.some((l) => l.endsWith("No space left on device"))).toBe(true);
    expect(log).toContain("write failed");
    expect(cacheKib()).toBeLessThan(CACHE_MB * 1024);
  });

  test("after a build the caches are trimmed least recently used first to three quarters of the cap", async () => {
    for (const branch of ["cache-a", "cache-b", "cache-c"]) expect((await getBuild(w, ids[branch]!)).status).toBe("healthy");
    const log = await logText(w, ids["cache-list"]!);
    expect(log.split("\n").filter((l) => l.startsWith("kept ")).sort()).toEqual(["kept a.bin", "kept c.bin"]);
  });

  test("the build log names the cap, and nothing stays mounted once the builds ended", async () => {
    const log = await logText(w, ids["cache-a"]!);
    expect(log).toContain(`dependency caches (npm, cargo, pip, buildah's layers): ${CACHE_MB} MiB for the project (an ext4 image on a loop device), trimmed to ${CACHE_MB * 0.75} MiB after its builds`);
    expect(mountsUnder(path.join(t.dataDir, "cache"))).toEqual([]);
    expect(mountsUnder(path.join(t.dataDir, "run"))).toEqual([]);
    // The project's image is kept for its next build.
    expect(readdirSync(path.join(t.dataDir, "cache", "deps")).filter((n) => n.endsWith(".img"))).toHaveLength(1);
  });
});

test("a container build keeps buildah's layers inside the project's capped caches, not beside them", async () => {
  const b = await getBuild(w, ids.container!);
  expect(b.status).toBe("healthy");
  expect(await logLines(b.id)).toContain(`dependency caches (npm, cargo, pip, buildah's layers): ${CACHE_MB} MiB for the project (an ext4 image on a loop device), trimmed to ${CACHE_MB * 0.75} MiB after its builds`);
  const project = t.core.access.findProject(w.ctx.slug)!;
  expect(existsSync(path.join(t.dataDir, "cache", "builds", project.id))).toBe(false);
  const { cacheDir, cacheCap } = projectCache(t.dataDir, project.id, "production", "web", CACHE_MB);
  const open = await openCache(cacheDir, cacheCap);
  try {
    expect(readdirSync(path.join(cacheDir, "buildah")).length).toBeGreaterThan(0);
  } finally {
    await open.close();
  }
});

describe("/dev in a build", () => {
  test("/dev/shm is a tmpfs of OPS_SANDBOX_TMP_MB: writing past it fails with ENOSPC", async () => {
    const b = await getBuild(w, ids["shm-full"]!);
    const log = await logLines(b.id);
    expect(b.status).toBe("failed");
    expect(log.some((l) => l.endsWith("No space left on device"))).toBe(true);
    expect(log).toContain("write failed");
  });

  test("nothing else under /dev can be written; /dev/null still takes writes", async () => {
    const b = await getBuild(w, ids["dev-write"]!);
    const log = await logLines(b.id);
    expect(b.status).toBe("healthy");
    expect(log).toContain("null=ok");
    expect(log).toContain("dev refused");
    expect(log).toContain("mkdir refused");
  });

  test("the build log names /tmp and /dev/shm and the seccomp filter beside the other limits", async () => {
    const log = await logText(w, ids["dev-write"]!);
    expect(log).toContain(`/tmp and /dev/shm: ${TMP_MB} MiB tmpfs each, the rest of /dev read-only`);
    expect(log).toMatch(/^seccomp filter \((x64|arm64)\) and no_new_privs$/m);
    expect(log).toContain(`disk cap ${DISK_MB} MiB on the build dir (an ext4 image on a loop device)`);
  });
});
