/**
 * The hostile repository, output (DESIGN §6 "Files"): build commands that leave in the output
 * directory what a root-run packer must not turn into image content: a hard link to a file outside
 * the output, a FIFO, a Unix socket, a setuid file and a setgid folder. Pushed with the real `git`
 * CLI, built for real with ops as root; the pushed layer is read back with real `skopeo` and GNU
 * tar. (Devices cannot be made by the sandbox user: src/domains/builds/image.test.ts packs them.)
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { tempDir, type TestApp } from "../harness";
import { buildsApp, buildWorld, drain, getBuild, logText, manualBuild, SAMPLE_APP, type BuildWorld } from "../builds-fixtures";
import { run } from "../support/registries";
import { skopeo } from "../support/builds";
import { pushTree } from "./files-support";

let t: TestApp;
let w: BuildWorld;
const ids: Record<string, number> = {};

const toml = (build: string[]) => `[services.web]\nbuild = ${JSON.stringify(build)}\noutput = "dist"\nstart = "node server.js"\nport = 3000\n`;
const BRANCHES: Record<string, string[]> = {
  "hardlink-inside": ["mkdir -p dist", "cp server.js dist/server.js", "ln dist/server.js dist/same.js"],
  "hardlink-outside": ["mkdir -p dist", "ln server.js dist/server.js"],
  fifo: ["mkdir -p dist", "cp server.js dist/", "mkfifo dist/pipe"],
  socket: ["mkdir -p dist", "cp server.js dist/", `node -e "require('net').createServer().listen('dist/app.sock', () => process.exit(0))"`],
  setuid: ["mkdir -p dist/shared", "cp server.js dist/server.js", "chmod 4755 dist/server.js", "chmod 2775 dist/shared", "stat -c 'mode %a %n' dist/server.js dist/shared"],
};

beforeAll(async () => {
  t = await buildsApp();
  w = await buildWorld(t);
  for (const [branch, build] of Object.entries(BRANCHES)) {
    await pushTree(w.local.remote, branch, { "server.js": SAMPLE_APP["server.js"], "ops.toml": toml(build) });
    ids[branch] = (await manualBuild(w, branch)).id;
  }
  await drain(t);
}, 300_000);

afterAll(async () => {
  w?.local.remove();
  await t?.close();
});

/** `tar -tv` of the image's one layer, pulled with skopeo: path → [mode, rest of the line]. */
async function layerListing(sha: string): Promise<Map<string, [string, string]>> {
  const dir = tempDir("ops-iso-layer-");
  try {
    const ref = `docker://${new URL(t.url).host}/${w.ctx.slug}/web:${sha}`;
    const copy = await skopeo(["copy", "--src-tls-verify=false", "--src-creds", `x:${w.token}`, ref, `dir:${dir}`]);
    expect(copy.code).toBe(0);
    const manifest = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8")) as { layers: Array<{ digest: string }> };
    expect(manifest.layers).toHaveLength(1);
    const layer = path.join(dir, manifest.layers[0]!.digest.slice("sha256:".length));
    expect(statSync(layer).size).toBeGreaterThan(0);
    const listing = await run(["tar", "--numeric-owner", "-tvzf", layer], { cwd: dir });
    expect(listing.code).toBe(0);
    const rows = listing.stdout.trim().split("\n").map((l) => l.split(/\s+/));
    return new Map(rows.map((r) => [r[5]!, [r[0]!, r.slice(6).join(" ")]]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function failedAtPush(branch: string, error: string): Promise<void> {
  const b = await getBuild(w, ids[branch]!);
  expect({ status: b.status, failure_kind: b.failure_kind, error: b.error }).toEqual({ status: "failed", failure_kind: "build", error });
  expect(b.step_timings.map((s) => [s.step, s.ok ?? null])).toEqual([
    ["clone", true],
    ["checks", null],
    ["build", true],
    ["scan", true],
    ["push", false],
  ]);
  expect(b.image_digest ?? null).toBeNull();
}

describe("what a build leaves in its output", () => {
  test("a hard link to a file outside the output is refused: the packer never reaches a file through a name outside it", async () => {
    await failedAtPush("hardlink-outside", "server.js is a hard link to a file outside the output directory (2 links, 1 inside it); only hard links inside the output can be packed");
  });

  test("hard links inside the output are packed as tar hard links", async () => {
    const b = await getBuild(w, ids["hardlink-inside"]!);
    expect(b.status).toBe("healthy");
    const layer = await layerListing(b.commit_sha);
    expect(layer.get("app/server.js")![0]).toStartWith("h");
    expect(layer.get("app/server.js")![1]).toBe("link to app/same.js");
    expect(layer.get("app/same.js")![0]).toStartWith("-");
  });

  test("a FIFO is refused naming it (and the scan before the packer does not wait on it)", async () => {
    await failedAtPush("fifo", "pipe is a FIFO; only files, directories and symlinks can be packed");
  });

  test("a Unix socket is refused naming it", async () => {
    await failedAtPush("socket", "app.sock is a socket; only files, directories and symlinks can be packed");
  });

  test("setuid and setgid bits the build set are not in the image", async () => {
    const b = await getBuild(w, ids.setuid!);
    expect(b.status).toBe("healthy");
    const log = await logText(w, b.id);
    expect(log).toContain("mode 4755 dist/server.js");
    expect(log).toContain("mode 2775 dist/shared");
    const layer = await layerListing(b.commit_sha);
    expect(layer.get("app/server.js")![0]).toBe("-rwxr-xr-x");
    expect(layer.get("app/shared/")![0]).toBe("drwxrwxr-x");
  });
});
