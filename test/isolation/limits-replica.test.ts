/**
 * A replica's limits (DESIGN §6 "Limits"; issue 19 finding 5): a service deployed without
 * `limits.memory_mb` still runs under OPS_REPLICA_MEMORY_MB, an app allocating past it is killed
 * by the kernel and the service's status says so; its /tmp is a tmpfs of OPS_SANDBOX_TMP_MB, a
 * write past it fails with ENOSPC. Real sandboxed replicas behind the ingress, ops as root.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../harness";
import { makePerson, makeProject, mintToken } from "../fixtures";
import { defaultHostOf, listenIngress, pushApp, viaIngress } from "../deploy-fixtures";
import { until } from "../runtime-fixtures";
import { readFileSync } from "node:fs";
import { descendants } from "../../src/adapters/runtime/process";
import { serviceLogLines } from "../../src/domains/deployments/service";

const MEMORY_MB = 128;
const TMP_MB = 8;
let t: TestApp;
let slug: string;
let token: string;
let base: string;

const req = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/${slug}${p}`, { token, body });
const service = async () => expectStatus<any>(await req("GET", "/resources/service/web"), 200);

beforeAll(async () => {
  t = await createTestApp({ dataDir: tempDir("ops-limits-replica-"), env: { OPS_REPLICA_MEMORY_MB: String(MEMORY_MB), OPS_SANDBOX_TMP_MB: String(TMP_MB), OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "20", OPS_SHUTDOWN_GRACE_MS: "2000" } });
  base = listenIngress(t);
  slug = makeProject(t).slug;
  const owner = await makePerson(t, [{ role: "maintainer", project: slug }]);
  token = mintToken(t, owner.principal, { role: "maintainer", project: slug });
  const digest = await pushApp(t, slug, "web", { version: "v1" });
  await expectStatus(await req("POST", "/resources/service", { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz" } }), 201);
  await expectStatus(await req("POST", "/resources/service/web/deploy", { digest }), 201);
  await t.core.scheduler.runDue();
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe("a replica without limits.memory_mb", () => {
  test("runs under the default memory limit, and nothing is named as not enforced on this host", async () => {
    const s = await service();
    expect(s.status.state).toBe("ready");
    const [replica] = s.status.detail.replicas;
    expect(replica.memory).toMatchObject({ limit_mb: MEMORY_MB, enforced: true });
    expect(replica.memory.how).toMatch(/^cgroup-v[12]$/);
    expect(replica.not_enforced).toEqual([]);
    expect(s.status.detail.not_enforced).toEqual([]);
  });

  test("it runs with no_new_privs under the seccomp filter", async () => {
    const [replica] = (await service()).status.detail.replicas;
    const app = descendants(replica.pid).find((p) => p.comm === "node");
    expect(app).toBeDefined();
    const status = readFileSync(`/proc/${app!.pid}/status`, "utf8");
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(status).toMatch(/^Seccomp:\s+2$/m);
  });

  test("its /tmp is a sized tmpfs: writing past it fails with ENOSPC", async () => {
    const r = (await (await viaIngress(base, defaultHostOf(slug, "web"), `/tmp-fill?mb=${TMP_MB * 4}`)).json()) as { written: number; code: string | null };
    expect(r.code).toBe("ENOSPC");
    expect(r.written).toBeLessThanOrEqual(TMP_MB * 1024 * 1024);
    const small = (await (await viaIngress(base, defaultHostOf(slug, "web"), `/tmp-fill?mb=${TMP_MB / 2}`)).json()) as { written: number; code: string | null };
    expect(small).toEqual({ written: (TMP_MB / 2) * 1024 * 1024, code: null });
  });

  test("allocating past the default limit gets it killed, and the service's status says so", async () => {
    await viaIngress(base, defaultHostOf(slug, "web"), "/hog");
    const s = await until("the OOM kill in the status", async () => {
      const st = await service();
      return st.status.detail.replicas[0]?.last_exit?.oom_killed === true && st;
    }, 30_000);
    expect(s.status.detail.replicas[0].last_exit).toMatchObject({ oom_killed: true });
    const lines = serviceLogLines(t.core, { project: slug, environment: "production", service: "web" });
    expect(lines.some((l) => l.line.startsWith(`was killed: over its memory limit of ${MEMORY_MB} MiB`))).toBe(true);
  }, 40_000);
});

test("the defaults: 512 MiB per replica, 256 MiB of /tmp", async () => {
  const { loadConfig } = await import("../../src/core/config");
  const c = loadConfig({}, {}, "/");
  expect([c.replicaMemoryMb, c.sandboxTmpMb]).toEqual([512, 256]);
});
