/**
 * The container builder with the real, rootless buildah: a Dockerfile built into an OCI layout,
 * pushed into the embedded registry in-process and inspected with real skopeo (labels, exposed
 * port, command); build args for plain variables and no secret value anywhere in the image;
 * failures named (a broken Dockerfile, a missing one); and, with buildah off the PATH, the
 * `build` failure that says what to install.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, tempDir, type TestApp } from "./harness";
import { SYSTEM_ACTOR } from "../src/core/audit";
import { registryCast, type RegistryCast } from "./support/registries";
import { pushImage } from "../src/domains/registries/service";
import { runContainerBuild, INSTALL_BUILDAH, type ContainerBuildSpec } from "../src/adapters/builder/container";
import type { BuildLine } from "../src/adapters/builder/types";
import { runsAsRoot } from "../src/adapters/builder/sandbox";
import { skopeo } from "./support/builds";

let t: TestApp;
let cast: RegistryCast;
let root: string;
let n = 0;

function spec(files: Record<string, string>, over: Partial<ContainerBuildSpec> = {}): ContainerBuildSpec {
  const dir = path.join(root, `c${++n}`);
  const contextDir = path.join(dir, "src");
  mkdirSync(contextDir, { recursive: true });
  for (const [rel, text] of Object.entries(files)) writeFileSync(path.join(contextDir, rel), text);
  return {
    contextDir,
    dockerfile: "Dockerfile",
    workDir: path.join(dir, "work"),
    cacheDir: null,
    variables: [],
    memoryMb: 1024,
    stepTimeoutSecs: 300,
    commit: "abcdef0123456789abcdef0123456789abcdef01",
    commitTime: Date.UTC(2026, 3, 5),
    source: `${cast.project.slug}/api`,
    ...over,
  };
}


beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  root = tempDir("ops-container-");
  chmodSync(root, 0o755);
});
afterAll(async () => {
  await t.close();
  rmSync(root, { recursive: true, force: true });
});

describe("container builder", () => {
  test("without buildah on the PATH: failure_kind build, saying what to install", async () => {
    const lines: BuildLine[] = [];
    const res = await runContainerBuild(spec({ Dockerfile: "FROM scratch\n" }, { toolPath: "/usr/sbin:/sbin" }), { onLine: (l) => lines.push(l) });
    expect(res).toMatchObject({ status: "failed", failureKind: "build", error: INSTALL_BUILDAH, image: null });
    expect(INSTALL_BUILDAH).toBe("install buildah to build Dockerfiles");
    expect(lines.at(-1)).toMatchObject({ stream: "ops", level: "error", line: INSTALL_BUILDAH });
  });

  test("buildah builds the Dockerfile rootless; the pushed image carries labels, port and command; no secret in it", async () => {
    const lines: BuildLine[] = [];
    const s = spec(
      {
        Dockerfile: 'FROM scratch\nARG GREETING\nCOPY hello.txt /srv/hello.txt\nLABEL greeting="$GREETING"\nEXPOSE 9090\nCMD ["/srv/run"]\n',
        "hello.txt": "hello\n",
      },
      {
        variables: [
          { name: "GREETING", value: "bonjour", secret: false },
          { name: "NPM_TOKEN", value: "very-secret-npm-token", secret: true },
        ],
      },
    );
    const res = await runContainerBuild(s, { onLine: (l) => lines.push(l) });
    if (res.status !== "succeeded") throw new Error(`${res.error}\n${lines.map((l) => l.line).join("\n")}`);
    expect(res.image!.blobs).toHaveLength(2);
    const pushed = await pushImage(t.core, {
      repository: `${cast.project.slug}/api`,
      blobs: res.image!.blobs.map((b) => ({ digest: b.digest, size: b.size, source: { file: b.file } })),
      manifest: res.image!.manifest.bytes,
      mediaType: res.image!.manifest.mediaType,
      tag: s.commit,
      pusher: { subject: "ops", audit: SYSTEM_ACTOR },
    });
    expect(pushed.digest).toBe(res.image!.manifest.digest);
    const ref = `docker://${new URL(t.url).host}/${cast.project.slug}/api:${s.commit}`;
    const info = await skopeo(["inspect", "--tls-verify=false", "--creds", `ci:${cast.readerToken}`, ref]);
    expect(info.code).toBe(0);
    const parsed = JSON.parse(info.stdout);
    expect(parsed.Digest).toBe(pushed.digest);
    expect(parsed.Labels).toMatchObject({ "org.opencontainers.image.revision": s.commit, "org.opencontainers.image.source": `${cast.project.slug}/api`, greeting: "bonjour" });
    expect(parsed.Created).toBe("2026-04-05T00:00:00Z");
    const cfg = JSON.parse((await skopeo(["inspect", "--config", "--tls-verify=false", "--creds", `ci:${cast.readerToken}`, ref])).stdout);
    expect(cfg.config.ExposedPorts).toEqual({ "9090/tcp": {} });
    expect(cfg.config.Cmd).toEqual(["/srv/run"]);
    for (const b of res.image!.blobs) expect(readFileSync(b.file).toString("latin1")).not.toContain("very-secret-npm-token");
    expect(lines.map((l) => l.line).join("\n")).not.toContain("very-secret-npm-token");
    expect(res.memory === "cgroup1" || res.memory === "cgroup2").toBe(true);
    expect(res.timings).toEqual([expect.objectContaining({ step: "building", ok: true })]);
    // RUN steps of a rootless buildah need a subordinate uid range; when there is none the log says so up front.
    const subuid = (() => {
      try {
        return readFileSync("/etc/subuid", "utf8");
      } catch {
        return "";
      }
    })();
    const warned = lines.some((l) => l.stream === "ops" && l.line.startsWith("no subordinate uid range"));
    const names = runsAsRoot() ? ["nobody", "65534"] : [process.env.USER, String(process.getuid?.())];
    expect(warned).toBe(!subuid.split("\n").some((l) => names.includes(l.split(":")[0])));
  });

  test("a broken Dockerfile fails the build naming buildah's step; a missing one is refused before buildah runs", async () => {
    const lines: BuildLine[] = [];
    const broken = await runContainerBuild(spec({ Dockerfile: "FROM scratch\nCOPY missing.txt /x\n" }), { onLine: (l) => lines.push(l) });
    expect(broken).toMatchObject({ status: "failed", failureKind: "build", failedCommand: "buildah bud -f Dockerfile" });
    expect(broken.error).toContain("exited with code");
    expect(lines.some((l) => l.stream !== "ops" && l.line.includes("missing.txt"))).toBe(true);
    const missing = await runContainerBuild(spec({ "README.md": "no dockerfile\n" }), { onLine: () => {} });
    expect(missing).toMatchObject({ status: "failed", failureKind: "build", error: 'the Dockerfile "Dockerfile" is not a file in the build context' });
  });

  test("a data dir only root may enter (0700, as ops install makes it) builds: buildah's folders are staged for the project's user; the layer cache is reused", async () => {
    const closed = tempDir("ops-container-closed-");
    chmodSync(closed, 0o700);
    try {
      const contextDir = path.join(closed, "data", "src");
      mkdirSync(contextDir, { recursive: true });
      writeFileSync(path.join(contextDir, "Dockerfile"), "FROM scratch\nCOPY hello.txt /srv/hello.txt\nCOPY again.txt /srv/again.txt\n");
      writeFileSync(path.join(contextDir, "hello.txt"), "hello\n");
      writeFileSync(path.join(contextDir, "again.txt"), "again\n");
      const cacheDir = path.join(closed, "data", "cache");
      const build = async (n: number) => {
        const lines: BuildLine[] = [];
        const res = await runContainerBuild(spec({}, { contextDir, cacheDir, workDir: path.join(closed, "data", `work${n}`), variables: [{ name: "TOKEN", value: "staged-secret-value", secret: true }] }), { onLine: (l) => lines.push(l) });
        if (res.status !== "succeeded") throw new Error(`${res.error}\n${lines.map((l) => l.line).join("\n")}`);
        return { res, text: lines.map((l) => l.line).join("\n") };
      };
      const first = await build(1);
      expect(first.res.image!.blobs.length).toBeGreaterThanOrEqual(2);
      if (runsAsRoot()) expect(first.text).not.toContain(closed);
      const second = await build(2);
      expect(second.text).toMatch(/Using cache/);
      expect(second.res.image!.manifest.digest).toBe(first.res.image!.manifest.digest);
      // The parent is still closed: nothing loosened its mode.
      expect(statSync(closed).mode & 0o777).toBe(0o700);
    } finally {
      rmSync(closed, { recursive: true, force: true });
    }
  });
});
