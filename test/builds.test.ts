/**
 * Builds end to end on one server and one repository: the sample Node app pushed with the real
 * `git` CLI to the built-in host builds on its own (push trigger), the image is inspected with
 * real `skopeo` from the embedded registry and its signature verified with `openssl dgst -verify`
 * against the PEM `/signing/public-key` serves. Then, on branches of the same repository, built by
 * hand: a failing check, a failing build command, a build over its memory limit, a secret in the
 * output, secret build variables masked, cancel while queued and while running, retry.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { and, eq } from "drizzle-orm";
import { expectStatus, tempDir, type TestApp } from "./harness";
import { buildsApp, buildWorld, drain, ENV_GROUP, getBuild, logText, manualBuild, opsToml, SAMPLE_APP, until, type BuildWorld } from "./builds-fixtures";
import { databaseText, projectWithOwner } from "./resources-helpers";
import { sources } from "../src/domains/sources/tables";
import { existingWriter } from "../src/domains/observability/writer";
import { run } from "./support/registries";
import { skopeo } from "./support/builds";
import { SIGNATURE_ANNOTATION, SIMPLE_SIGNING } from "../src/domains/builds/signing";
import { gitRecords } from "../src/adapters/codehost/builtin/tables";
import { notices } from "../src/domains/notifications/tables";
import { auditLog } from "../src/core/tables";

let t: TestApp;
let w: BuildWorld;
let host: string;
let pushed: { sha: string; id: number };

beforeAll(async () => {
  t = await buildsApp();
  host = new URL(t.url).host;
  w = await buildWorld(t, { envGroup: true });
}, 120_000);
afterAll(async () => {
  w?.local.remove();
  await t?.close();
});

describe("push to a signed image", () => {
  test("a git push of the service's branch queues a build (push, requested by host) with the commit's author and message", async () => {
    const sha = await w.local.commit(SAMPLE_APP, "Sample app: hello over HTTP\n\nWith a body line.");
    await w.local.push("main");
    const list = await expectStatus<Array<{ id: number; status: string }>>(await w.ctx.req("GET", "/builds"), 200);
    expect(list).toHaveLength(1);
    const b = await getBuild(w, list[0].id);
    expect(b).toMatchObject({ commit_sha: sha, trigger: "push", requested_by: "host", author: "Test Author", message: "Sample app: hello over HTTP", branch: "main", service: "web", environment: "production", project: w.ctx.slug, repo: w.repo, kind: "image", source_id: w.sourceId });
    expect(["queued", "cloning"]).toContain(b.status);
    pushed = { sha, id: b.id };
  });

  test("the build runs its steps in order and ends healthy (no deployer installed: not deployed, said so)", async () => {
    await drain(t);
    const b = await getBuild(w, pushed.id);
    expect(b.status).toBe("healthy");
    expect(b.failure_kind ?? null).toBeNull();
    expect(b.step_timings.map((s) => s.step)).toEqual(["clone", "checks", "build", "scan", "push", "sign", "deploy"]);
    expect(b.step_timings.slice(0, 6).every((s) => s.ok === true && s.finished_at)).toBe(true);
    expect(b.step_timings[6]).toMatchObject({ note: "not deployed: no deployer is installed in this server" });
    expect(b.step_timings[6].ok ?? null).toBeNull();
    expect(b.image_ref).toBe(`${host}/${w.ctx.slug}/web:${pushed.sha}`);
    expect(b.image_digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(b.image_size_bytes).toBeGreaterThan(0);
    // No package manager ran: no dependency cache was used (bench/build-push.bench.ts sees 0 cold, 1 warm).
    expect(b.cache_hit ?? null).toBeNull();
    expect(b.started_at).toBeTruthy();
    expect(b.finished_at).toBeTruthy();
    const log = await logText(w, pushed.id);
    expect(log).toContain("checks passed");
    expect(log).toContain(`built dist/ for web at ${pushed.sha.slice(0, 7)}`);
    expect(log).toContain("no secrets");
    expect(log).toContain("build variables: GREETING, DEPLOY_TOKEN (secret)");
  });

  test("secret build variables reach the build but are masked in the log and stored nowhere in clear", async () => {
    const log = await logText(w, pushed.id);
    expect(log).toContain("deploy token: ***");
    expect(log).not.toContain(ENV_GROUP.DEPLOY_TOKEN);
    expect(await databaseText(t)).not.toContain(ENV_GROUP.DEPLOY_TOKEN);
  });

  test("the build's lines are also in the log store: one search finds them beside the service's own, masked", async () => {
    await existingWriter(t.core)?.flush();
    const entries = await expectStatus<Array<{ message: string; service: string; environment: string; target: string; level: string }>>(
      await t.request("GET", `/api/v1/obs/logs?project=${w.ctx.slug}&service=web&q=${encodeURIComponent(`ops.build/${pushed.id}`)}&limit=500`, { token: w.token }),
      200,
    );
    expect(entries.length).toBeGreaterThan(5);
    expect(entries.every((e) => e.target === `ops.build/${pushed.id}` && e.service === "web" && e.environment === "production")).toBe(true);
    const messages = entries.map((e) => e.message);
    expect(messages).toContain("checks passed");
    // Masked by the build (***), then scrubbed again by the log store's own rules.
    expect(messages.some((m) => m.startsWith("deploy token: "))).toBe(true);
    expect(JSON.stringify(entries)).not.toContain(ENV_GROUP.DEPLOY_TOKEN);
  });

  test("skopeo inspects the image: entrypoint, command, exposed port, labels", async () => {
    const ref = `docker://${host}/${w.ctx.slug}/web:${pushed.sha}`;
    const cfg = await skopeo(["inspect", "--config", "--tls-verify=false", "--creds", `x:${w.token}`, ref]);
    expect(cfg.code).toBe(0);
    const config = JSON.parse(cfg.stdout).config;
    expect(config.Entrypoint).toEqual(["/bin/sh", "-c"]);
    expect(config.Cmd).toEqual(["node dist/server.js"]);
    expect(config.WorkingDir).toBe("/app");
    expect(Object.keys(config.ExposedPorts)).toEqual(["3000/tcp"]);
    expect(config.Env).toContain("PORT=3000");
    expect(config.Labels).toMatchObject({ "org.opencontainers.image.revision": pushed.sha, "org.opencontainers.image.source": w.repo, "dev.ops.runtime": "process" });
    const info = await skopeo(["inspect", "--tls-verify=false", "--creds", `x:${w.token}`, ref]);
    expect(info.code).toBe(0);
    expect(JSON.parse(info.stdout).Digest).toBe((await getBuild(w, pushed.id)).image_digest);
  });

  test("the signature verifies with openssl against the served PEM, independently of ops's code", async () => {
    const digest = (await getBuild(w, pushed.id)).image_digest!;
    const dir = tempDir("ops-builds-sig-");
    try {
      await t.core.scheduler.runDue();
      const pem = await expectStatus<string>(await t.request("GET", "/api/v1/signing/public-key"), 200);
      writeFileSync(path.join(dir, "pub.pem"), pem);
      const ref = `docker://${host}/${w.ctx.slug}/web:sha256-${digest.slice(7)}.sig`;
      const raw = await skopeo(["inspect", "--raw", "--tls-verify=false", "--creds", `x:${w.token}`, ref]);
      expect(raw.code).toBe(0);
      const layer = JSON.parse(raw.stdout).layers[0];
      expect(layer.mediaType).toBe(SIMPLE_SIGNING);
      const copy = await skopeo(["copy", "--src-tls-verify=false", "--src-creds", `x:${w.token}`, ref, `oci:${path.join(dir, "layout")}:sig`]);
      expect(copy.code).toBe(0);
      const payloadFile = path.join(dir, "layout", "blobs", "sha256", layer.digest.slice(7));
      const payload = JSON.parse(readFileSync(payloadFile, "utf8"));
      expect(payload.critical.image["docker-manifest-digest"]).toBe(digest);
      expect(payload.critical.identity["docker-reference"]).toBe(`${host}/${w.ctx.slug}/web`);
      writeFileSync(path.join(dir, "sig.der"), Buffer.from(layer.annotations[SIGNATURE_ANNOTATION], "base64"));
      const ok = await run(["openssl", "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", payloadFile], { cwd: dir });
      expect(ok.stdout.trim()).toBe("Verified OK");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the code host has a check run for the build, concluded success, and a commit status", async () => {
    const detail = await expectStatus<any>(await w.ctx.req("GET", `/builds/${pushed.id}`), 200);
    expect(detail.host.check_run_id).toBe(detail.build.host_check_run_id);
    expect(detail.timings).toEqual(detail.build.step_timings);
    expect(detail.deployment ?? null).toBeNull();
    const check = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, detail.host.check_run_id)).get()!;
    expect(check).toMatchObject({ kind: "check_run", repo: w.repo, sha: pushed.sha, name: "ops/production/web", state: "completed", conclusion: "success" });
    const status = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, detail.host.status_id)).get()!;
    expect(status).toMatchObject({ kind: "status", sha: pushed.sha, name: "ops/production/web", state: "success" });
  });

  test("each state of the build got its own commit status, in order, beside the one check run", async () => {
    const statuses = t.core.db.select().from(gitRecords).where(and(eq(gitRecords.kind, "status"), eq(gitRecords.sha, pushed.sha), eq(gitRecords.name, "ops/production/web"))).all();
    expect(statuses.at(-1)!.state).toBe("success");
    expect(statuses.slice(0, -1).every((s) => s.state === "pending")).toBe(true);
    expect(statuses.length).toBeGreaterThanOrEqual(5);
    const checks = t.core.db.select().from(gitRecords).where(and(eq(gitRecords.kind, "check_run"), eq(gitRecords.sha, pushed.sha), eq(gitRecords.name, "ops/production/web"))).all();
    expect(checks.length).toBe(1);
  });

  test("a report whose check run is gone from the built-in host still sets the commit status (and keeps the build's check run id)", async () => {
    const { reportToHost } = await import("../src/domains/builds/host");
    const { builds } = await import("../src/domains/builds/tables");
    const before = t.core.db.select().from(builds).where(eq(builds.id, pushed.id)).get()!;
    const saved = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, before.hostCheckRunId!)).get()!;
    t.core.db.delete(gitRecords).where(eq(gitRecords.id, saved.id)).run();
    try {
      await reportToHost(t.core, pushed.id);
      const after = t.core.db.select().from(builds).where(eq(builds.id, pushed.id)).get()!;
      expect(after.hostCheckRunId).toBe(before.hostCheckRunId);
      expect(after.hostStatusId).toBeGreaterThan(before.hostStatusId!);
      expect(t.core.db.select().from(gitRecords).where(eq(gitRecords.id, after.hostStatusId!)).get()).toMatchObject({ kind: "status", sha: pushed.sha, state: "success" });
    } finally {
      t.core.db.insert(gitRecords).values(saved).run();
    }
  });

  test("the work dir is gone; the log pages by after/limit with next and live", async () => {
    const { existsSync } = await import("node:fs");
    expect(existsSync(path.join(t.dataDir, "run", "builds", String(pushed.id)))).toBe(false);
    const first = await expectStatus<any>(await w.ctx.req("GET", `/builds/${pushed.id}/log?limit=2`), 200);
    expect(first.lines.map((l: any) => l.seq)).toEqual([1, 2]);
    expect(first.next).toBe(2);
    expect(first.live).toBe(false);
    expect(first.lines[0]).toMatchObject({ step: "queue", level: "info" });
    const second = await expectStatus<any>(await w.ctx.req("GET", `/builds/${pushed.id}/log?after=2&limit=1`), 200);
    expect(second.lines.map((l: any) => l.seq)).toEqual([3]);
    const end = await expectStatus<any>(await w.ctx.req("GET", `/builds/${pushed.id}/log?after=100000`), 200);
    expect(end).toEqual({ lines: [], live: false, next: 100000 });
    const steps = new Set((await expectStatus<any>(await w.ctx.req("GET", `/builds/${pushed.id}/log?limit=5000`), 200)).lines.map((l: any) => l.step));
    expect([...steps]).toEqual(expect.arrayContaining(["queue", "clone", "checks", "build", "scan", "push", "sign"]));
  });
});

describe("failures, cancel and retry (branches of the same repository, built by hand)", () => {
  const app = { "server.js": SAMPLE_APP["server.js"], "build.js": SAMPLE_APP["build.js"], "check.js": SAMPLE_APP["check.js"] };
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    await w.local.commit({ ...app, "ops.toml": opsToml({ check: ["node check.js", "node -e 'console.log(\"a failing check\"); process.exit(3)'"], build: ["node build.js"] }) }, "A failing check", "fail-checks");
    await w.local.commit({ ...app, "ops.toml": opsToml({ build: ["node -e 'console.error(\"boom\"); process.exit(2)'"] }) }, "A failing build", "fail-build");
    await w.local.commit({ ...app, "ops.toml": opsToml({ build: ["node -e 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))'"] }) }, "A build over its memory", "memory");
    await w.local.commit({ ...app, "dotenv.txt": "API_KEY=supersecretvalue123\n", "ops.toml": opsToml({ build: ["node build.js", "cp dotenv.txt dist/.env"], output: "dist" }) }, "A secret in the output", "leak");
    await w.local.commit({ ...app, "ops.toml": opsToml({ build: ["sleep 347"] }) }, "A slow build", "slow");
    await w.local.commit(
      {
        ...app,
        "ops.toml": '[services.web]\ndockerfile = "docker/Dockerfile"\ncheck = ["node check.js"]\nport = 3000\n',
        "docker/Dockerfile": 'FROM scratch\nARG GREETING\nCOPY server.js /app/server.js\nLABEL greeting="$GREETING"\nEXPOSE 3000\nCMD ["node", "/app/server.js"]\n',
      },
      "A Dockerfile",
      "container",
    );
    await w.local.push("fail-checks", "fail-build", "memory", "leak", "slow", "container");
    // Pushes of other branches than the service's queue nothing.
    expect(await expectStatus<unknown[]>(await w.ctx.req("GET", "/builds"), 200)).toHaveLength(1);
    for (const branch of ["fail-checks", "fail-build", "memory", "leak", "container"]) ids[branch] = (await manualBuild(w, branch)).id;
    await drain(t);
  }, 240_000);

  test("a failing check fails the build at checks, naming the command; build.failed reaches the members", async () => {
    const b = await getBuild(w, ids["fail-checks"]);
    expect(b).toMatchObject({ status: "failed", failure_kind: "checks", trigger: "manual", requested_by: w.ctx.owner.email, branch: "fail-checks" });
    expect(b.error).toContain("exited with code 3");
    expect(b.step_timings.map((s) => [s.step, s.ok])).toEqual([
      ["clone", true],
      ["checks", false],
    ]);
    expect(b.image_digest ?? null).toBeNull();
    expect(await logText(w, b.id)).toContain("a failing check");
    const notice = t.core.db.select().from(notices).where(and(eq(notices.operatorId, w.ctx.owner.operator.id), eq(notices.kind, "build.failed"))).all().map((n) => JSON.parse(n.params));
    expect(notice).toContainEqual({ project: w.ctx.slug, environment: "production", service: "web", build: b.id, failure_kind: "checks", commit: b.commit_sha.slice(0, 12) });
  });

  test("a failing build command fails at build", async () => {
    const b = await getBuild(w, ids["fail-build"]);
    expect(b).toMatchObject({ status: "failed", failure_kind: "build" });
    expect(b.error).toContain("exited with code 2");
    expect(b.step_timings.map((s) => s.step)).toEqual(["clone", "checks", "build"]);
    expect(b.step_timings[1]).toMatchObject({ note: "no check commands declared" });
    expect(await logText(w, b.id)).toContain("boom");
  });

  test("a build over its memory limit fails with memory", async () => {
    const b = await getBuild(w, ids.memory);
    expect(b).toMatchObject({ status: "failed", failure_kind: "memory" });
    expect(b.error).toContain("ran out of memory (limit 192 MiB)");
  });

  test("a secret in the output fails the build at scan, naming the file and never the secret", async () => {
    const b = await getBuild(w, ids.leak);
    expect(b).toMatchObject({ status: "failed", failure_kind: "scan" });
    expect(b.error).toContain(".env:1");
    expect(b.error).not.toContain("supersecretvalue123");
    const log = await logText(w, b.id);
    expect(log).toContain(".env:1");
    expect(log).not.toContain("supersecretvalue123");
    expect(b.step_timings.map((s) => [s.step, s.ok])).toEqual([
      ["clone", true],
      ["checks", undefined],
      ["build", true],
      ["scan", false],
    ]);
  });

  test("a service with a dockerfile builds with the container builder (checks run natively); skopeo reads the image", async () => {
    const b = await getBuild(w, ids.container);
    expect(b.status).toBe("healthy");
    expect(b.step_timings.map((s) => [s.step, s.ok])).toEqual([
      ["clone", true],
      ["checks", true],
      ["build", true],
      ["scan", true],
      ["push", true],
      ["sign", true],
      ["deploy", undefined],
    ]);
    const log = await logText(w, b.id);
    expect(log).toContain("container build of docker/Dockerfile");
    expect(log).toContain("$ buildah bud -f docker/Dockerfile");
    const cfg = await skopeo(["inspect", "--config", "--tls-verify=false", "--creds", `x:${w.token}`, `docker://${host}/${w.ctx.slug}/web:${b.commit_sha}`]);
    expect(cfg.code).toBe(0);
    const config = JSON.parse(cfg.stdout).config;
    expect(config.Labels).toMatchObject({ "org.opencontainers.image.revision": b.commit_sha, "dev.ops.runtime": "container", greeting: ENV_GROUP.GREETING });
    expect(Object.keys(config.ExposedPorts)).toEqual(["3000/tcp"]);
  });

  test("failed builds report a concluded check run: failure", async () => {
    const b = await getBuild(w, ids["fail-build"]);
    const check = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, b.host_check_run_id!)).get()!;
    expect(check).toMatchObject({ state: "completed", conclusion: "failure" });
  });

  test("retry: a new build of the same commit, service and kind (201), audited; it fails the same way", async () => {
    const old = await getBuild(w, ids["fail-checks"]);
    const retry = await expectStatus<any>(await w.ctx.req("POST", `/builds/${old.id}/retry`), 201);
    expect(retry).toMatchObject({ trigger: "retry", status: "queued", commit_sha: old.commit_sha, service: "web", kind: "image", branch: "fail-checks", requested_by: w.ctx.owner.email });
    expect(retry.id).toBeGreaterThan(old.id);
    const audit = t.core.db.select().from(auditLog).where(eq(auditLog.target, `build:${retry.id}`)).all();
    expect(audit.map((a) => [a.action, JSON.parse(a.context!).op])).toEqual([["builds.run", "retry"]]);
    await drain(t);
    expect(await getBuild(w, retry.id)).toMatchObject({ status: "failed", failure_kind: "checks" });
    await expectStatus(await w.ctx.req("POST", "/builds/999999/retry"), 404);
  });

  test("cancel while queued: 200 cancelled at once; the running one 202, cancelled at its step boundary; 409 once finished", async () => {
    const first = await manualBuild(w, "fail-build");
    const second = await manualBuild(w, "fail-build");
    // Both answered as created (queued); the builder took the first at once.
    expect([first.status, second.status]).toEqual(["queued", "queued"]);
    expect((await getBuild(w, first.id)).status).toBe("cloning");
    expect((await getBuild(w, second.id)).status).toBe("queued");
    const queued = await expectStatus<any>(await w.ctx.req("POST", `/builds/${second.id}/cancel`), 200);
    expect(queued.status).toBe("cancelled");
    expect(queued.finished_at).toBeTruthy();
    const running = await expectStatus<any>(await w.ctx.req("POST", `/builds/${first.id}/cancel`), 202);
    expect(running.status).toBe("cloning");
    await drain(t);
    const cancelled = await getBuild(w, first.id);
    expect(cancelled.status).toBe("cancelled");
    // Cancelled before its first step ran: the timing dispatch opened ends as cancelled, not left open.
    expect(cancelled.step_timings).toEqual([expect.objectContaining({ step: "clone", ok: false, note: "cancelled", finished_at: expect.any(String) })]);
    const again = await expectStatus<any>(await w.ctx.req("POST", `/builds/${second.id}/cancel`), 409);
    expect(again.message).toContain("already finished");
    const audit = t.core.db.select().from(auditLog).where(eq(auditLog.target, `build:${second.id}`)).all();
    expect(audit.map((a) => JSON.parse(a.context!))).toContainEqual(expect.objectContaining({ op: "cancel", was: "queued" }));
    await expectStatus(await w.ctx.req("POST", "/builds/999999/cancel"), 404);
  });

  test("cancel while running kills the step's process tree: 202, then cancelled", async () => {
    const b = await manualBuild(w, "slow");
    const running = drain(t);
    await until("the slow build command to run", async () => (await logText(w, b.id)).includes("$ sleep 347"));
    const res = await expectStatus<any>(await w.ctx.req("POST", `/builds/${b.id}/cancel`), 202);
    expect(res.status).toBe("building");
    await running;
    const done = await getBuild(w, b.id);
    expect(done.status).toBe("cancelled");
    expect(done.failure_kind ?? null).toBeNull();
    expect(done.step_timings.at(-1)).toMatchObject({ step: "build", ok: false, note: "cancelled" });
    const check = t.core.db.select().from(gitRecords).where(eq(gitRecords.id, done.host_check_run_id!)).get()!;
    expect(check).toMatchObject({ state: "completed", conclusion: "cancelled" });
  }, 60_000);
});

describe("the builds routes' other answers", () => {
  test("POST /builds: 404 unknown branch or environment; 422 unknown service or one without a source; 409 not installed", async () => {
    const branch = await expectStatus<any>(await w.ctx.req("POST", "/builds", { service: "web", ref: "no-such-branch" }), 404);
    expect(branch.message).toContain('No branch "no-such-branch"');
    await expectStatus(await w.ctx.req("POST", "/builds?environment=nope", { service: "web" }), 404);
    const unknown = await expectStatus<any>(await w.ctx.req("POST", "/builds", { service: "ghost" }), 422);
    expect(unknown.message).toContain('No service "ghost"');
    await expectStatus(await w.ctx.req("PUT", "/resources/service/prebuilt", { spec: { image: "registry.example/prebuilt:1", replicas: 0 } }), 201);
    const image = await expectStatus<any>(await w.ctx.req("POST", "/builds", { service: "prebuilt" }), 422);
    expect(image.message).toContain("has no source");
    // A source the host no longer reaches (installation gone, as a GitHub App uninstalled).
    const other = await expectStatus<{ id: string; repo: string }>(await w.ctx.req("POST", "/sources", { repo: `${w.ctx.slug}/other` }), 201);
    await expectStatus(await w.ctx.req("PUT", "/resources/service/other", { spec: { source: { repo: other.repo }, replicas: 0 } }), 201);
    t.core.db.update(sources).set({ installationId: 0 }).where(eq(sources.id, other.id)).run();
    const conflict = await expectStatus<any>(await w.ctx.req("POST", "/builds", { service: "other" }), 409);
    expect(conflict.message).toContain("not installed");
    const bad = await expectStatus<any>(await w.ctx.req("POST", "/builds", { ref: "main" }), 422);
    expect(bad.error).toBe("validation_failed");
  });

  test("POST /builds: 503 when the code host is not configured", async () => {
    const github = await buildsApp({ OPS_CODE_HOST: "github" });
    try {
      const ctx = await projectWithOwner(github);
      await expectStatus(await ctx.req("PUT", "/resources/service/web", { spec: { source: { repo: "acme/web" }, replicas: 0 } }), 201);
      const res = await expectStatus<any>(await ctx.req("POST", "/builds", { service: "web" }), 503);
      expect(res.error).toBe("unavailable");
    } finally {
      await github.close();
    }
  });

  test("GET /builds: newest first, by service, limit 1 to 500; 404 unknown environment", async () => {
    const all = await expectStatus<any[]>(await w.ctx.req("GET", "/builds?limit=500"), 200);
    expect(all.length).toBeGreaterThan(5);
    expect(all.map((b) => b.id)).toEqual([...all.map((b) => b.id)].sort((a, b) => b - a));
    expect(await expectStatus<any[]>(await w.ctx.req("GET", "/builds?limit=2"), 200)).toHaveLength(2);
    expect(await expectStatus<any[]>(await w.ctx.req("GET", "/builds?service=other"), 200)).toEqual([]);
    expect(await expectStatus<any[]>(await w.ctx.req("GET", "/builds?environment=staging"), 200)).toEqual([]);
    await expectStatus(await w.ctx.req("GET", "/builds?environment=nope"), 404);
    await expectStatus(await w.ctx.req("GET", "/builds?limit=0"), 422);
    await expectStatus(await w.ctx.req("GET", "/builds?limit=501"), 422);
  });

  test("GET /builds/{id} and its log: 404 for a build that is not the project's", async () => {
    await expectStatus(await w.ctx.req("GET", "/builds/999999"), 404);
    await expectStatus(await w.ctx.req("GET", "/builds/999999/log"), 404);
    await expectStatus(await w.ctx.req("GET", `/builds/${pushed.id}/log?limit=5001`), 422);
    const elsewhere = await projectWithOwner(t);
    await expectStatus(await elsewhere.req("GET", `/builds/${pushed.id}`), 404);
    await expectStatus(await elsewhere.req("POST", `/builds/${pushed.id}/cancel`), 404);
  });

  test("every builds route is in OpenAPI with the spec's schemas and every status it lists", async () => {
    const doc = await expectStatus<any>(await t.request("GET", "/api/docs/json"), 200);
    const SPEC: Array<[string, string, number[], string?, string?]> = [
      ["get", "/api/v1/projects/{slug}/builds", [200, 401, 403, 404], undefined, "BuildResponse"],
      ["post", "/api/v1/projects/{slug}/builds", [201, 401, 403, 404, 409, 422, 503], "CreateBuildRequest", "BuildResponse"],
      ["get", "/api/v1/projects/{slug}/builds/{id}", [200, 401, 403, 404], undefined, "BuildDetailResponse"],
      ["post", "/api/v1/projects/{slug}/builds/{id}/cancel", [200, 202, 401, 403, 404, 409], undefined, "BuildResponse"],
      ["get", "/api/v1/projects/{slug}/builds/{id}/log", [200, 401, 403, 404], undefined, "LogResponse"],
      ["post", "/api/v1/projects/{slug}/builds/{id}/retry", [201, 401, 403, 404], undefined, "BuildResponse"],
      ["get", "/api/v1/signing/public-key", [200, 404]],
    ];
    for (const [method, p, statuses, body, ok] of SPEC) {
      const op = doc.paths[p]?.[method];
      expect(op).toBeDefined();
      for (const s of statuses) expect(Object.keys(op.responses)).toContain(String(s));
      if (body) expect(JSON.stringify(op.requestBody?.content["application/json"]?.schema)).toContain(`#/components/schemas/${body}`);
      if (ok) expect(JSON.stringify(op.responses[String(statuses[0])].content?.["application/json"]?.schema)).toContain(`#/components/schemas/${ok}`);
    }
    const fields = Object.keys(doc.components.schemas.BuildResponse.properties).sort();
    expect(fields).toEqual(["author", "branch", "cache_hit", "commit_sha", "environment", "error", "failure_kind", "finished_at", "host_check_run_id", "id", "image_digest", "image_ref", "image_size_bytes", "kind", "message", "project", "queued_at", "repo", "requested_by", "service", "source_id", "started_at", "status", "step_timings", "trigger"]);
  });
});
