/**
 * A deployed service's life after its rollout, against real sandboxed replicas behind the
 * ingress: a secret-group rotate restarts it with the new value visible to the app (`rolled`
 * filled), a crashing replica restarts with backoff and its restarts show in the resource's
 * status, the health task drives `probe.down` and the service's status component, a WebSocket
 * through the ingress, domain resources changing the routes, `replicas: 0` stopping it and 2
 * bringing two replicas, `ImageRepoSummary.environments`, and a restart of the server starting it
 * again with the same digest.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { and, eq } from "drizzle-orm";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken } from "./fixtures";
import { defaultHostOf, listenIngress, pushApp, viaIngress } from "./deploy-fixtures";
import { until } from "./runtime-fixtures";
import { notices } from "../src/domains/notifications/tables";
import { deploymentsModule } from "../src/domains/deployments";
import { HEALTH_TASK } from "../src/domains/deployments/health";
import { serviceLogLines } from "../src/domains/deployments/service";
import { flushServiceLogs } from "../src/domains/deployments/logs";
import { existingWriter } from "../src/domains/observability/writer";

const dataDir = tempDir("ops-deploy-life-");
let t: TestApp;
let slug: string;
let token: string;
let base: string;
let v1: string;

const P = () => `/api/v1/projects/${slug}`;
const req = (method: string, p: string, body?: unknown) => t.request(method, `${P()}${p}`, { token, body });
const host = () => defaultHostOf(slug, "web");
const seen = async () => (await (await viaIngress(base, host(), "/")).json()) as { secret: string | null; env_keys: string[]; port: string; greeting: string };
const service = async () => expectStatus(await req("GET", "/resources/service/web"), 200);
const noticesOf = (kind: string) => t.core.db.select().from(notices).where(and(eq(notices.project, slug), eq(notices.kind, kind))).all();
const settle = () => t.core.scheduler.runDue();

async function boot(): Promise<void> {
  t = await createTestApp({ dataDir, env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5", OPS_SHUTDOWN_GRACE_MS: "2000" } });
  base = listenIngress(t);
}

beforeAll(async () => {
  await boot();
  const project = makeProject(t);
  slug = project.slug;
  const owner = await makePerson(t, [{ role: "maintainer", project: slug }]);
  token = mintToken(t, owner.principal, { role: "maintainer", project: slug });
  v1 = await pushApp(t, slug, "web", { version: "v1" });
  await expectStatus(await req("POST", "/resources/secret-group", { name: "web-env", spec: { variables: [{ name: "SECRET", kind: "secret" }] } }), 201);
  await expectStatus(await req("PUT", "/resources/secret-group/web-env/variables/SECRET", { value: "first-value" }), 200);
  await expectStatus(await req("POST", "/resources/service", { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz", env_group: "web-env", status_page: true } }), 201);
  await expectStatus(await req("PUT", "/secrets/web/UNIT_TOKEN", { value: "unit-secret-1" }), 204);
  await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: v1 }), 201);
  await settle();
}, 120_000);

afterAll(async () => {
  await t.close();
});

describe("a deployed service", () => {
  test("runs with the env group's values and the unit's secrets; its output is kept", async () => {
    const app = await seen();
    expect(app.secret).toBe("first-value");
    expect(app.env_keys).toContain("UNIT_TOKEN");
    expect(app.env_keys).toContain("PORT");
    const lines = serviceLogLines(t.core, { project: slug, environment: "production", service: "web" });
    expect(lines.some((l) => l.stream === "stdout" && l.line.startsWith("listening on "))).toBe(true);
    await flushServiceLogs(t.core);
    await existingWriter(t.core)?.flush();
    const stored = await expectStatus<any[]>(await t.request("GET", `/api/v1/obs/logs?project=${slug}&service=web&environment=production&q=listening`, { token }), 200);
    expect(stored[0]).toMatchObject({ service: "web", environment: "production", project: slug, target: "stdout", level: "info" });
    expect(stored[0].message).toStartWith("listening on ");
    expect(stored[0].host).toStartWith(`${slug}.production.web.`);
  });

  test("a secret-group rotate restarts it (rolled) and the app sees the new value", async () => {
    await expectStatus(await req("PUT", "/resources/secret-group/web-env/variables/SECRET", { value: "second-value" }), 200);
    const r = await expectStatus(await req("POST", "/resources/secret-group/web-env/rotate"), 200);
    expect(r).toMatchObject({ rolled: ["web"], skipped: [], reason: null, version: 1 });
    const before = (await seen()).port;
    await settle();
    const after = await seen();
    expect(after.secret).toBe("second-value");
    expect(after.port).not.toBe(before);
    const [row] = await expectStatus<any[]>(await req("GET", "/deployments"), 200);
    expect(row).toMatchObject({ state: "healthy", deployment: { trigger: "restart", image_digest: v1 } });
    expect(row.message).toBe("Restart: secret group web-env v1 was rendered");
  }, 60_000);

  test("a rotate during a rollout restarts the service once that rollout ends", async () => {
    await expectStatus(await req("PUT", "/resources/secret-group/web-env/variables/SECRET", { value: "third-value" }), 200);
    const d = await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: v1 }), 201);
    const r = await expectStatus(await req("POST", "/resources/secret-group/web-env/rotate"), 200);
    expect(r.rolled).toEqual(["web"]);
    await settle();
    const [restart, deploy] = await expectStatus<any[]>(await req("GET", "/deployments"), 200);
    expect(deploy.deployment).toMatchObject({ id: d.id, rollout: "healthy" });
    expect(restart).toMatchObject({ state: "healthy", message: "Restart: secret group web-env v2 was rendered", deployment: { trigger: "restart" } });
    expect((await seen()).secret).toBe("third-value");
  }, 60_000);

  test("a crashing replica restarts with backoff; the resource's status shows the crash, then the restart", async () => {
    await viaIngress(base, host(), "/crash");
    const crashed = await until("the crash in the status", async () => {
      const s = await service();
      return s.status.state === "error" && s;
    });
    expect(crashed.status.summary).toContain("crashed (it exited with code 3; restart 1 in");
    await t.core.scheduler.runNow(HEALTH_TASK);
    expect(noticesOf("probe.down").length).toBe(1);
    const component = (await expectStatus<any[]>(await t.request("GET", "/api/v1/status/public"), 200)) as any;
    expect(component.components.find((c: { slug: string }) => c.slug === `${slug}-web`)).toMatchObject({ state: "down" });
    // Back after the backoff; a replica back from a crash is probed at once, so health follows.
    const back = await until("the restart", async () => {
      const s = await service();
      return s.status.state === "ready" && s.status.detail.restarts === 1 && s;
    }, 10_000);
    expect(back.status.summary).toContain("(1 restart after crashes)");
    expect(back.status.detail.replicas[0]).toMatchObject({ state: "running", restarts: 1, last_exit: { code: 3, oom_killed: false } });
    expect(back.status.detail.health).toBe("up");
    const up = (await expectStatus<any>(await t.request("GET", "/api/v1/status/public"), 200)).components.find((c: { slug: string }) => c.slug === `${slug}-web`);
    expect(up.state).toBe("operational");
    expect(noticesOf("probe.down").length).toBe(1);
  }, 30_000);

  test("a WebSocket through the ingress reaches the service", async () => {
    const ws = new WebSocket(`${base.replace("http", "ws")}/socket`, { headers: { host: host() } } as never);
    const reply = await new Promise<string>((resolve, reject) => {
      ws.onopen = () => ws.send("hello");
      ws.onmessage = (m) => resolve(String(m.data));
      ws.onerror = () => reject(new Error("websocket error"));
    });
    ws.close();
    expect(reply).toBe("echo:hello");
  });

  test("domain resources added, changed and removed change the routes", async () => {
    expect((await viaIngress(base, "shop.example.com", "/version")).status).toBe(404);
    await expectStatus(await req("POST", "/resources/domain", { name: "shop", spec: { hosts: ["shop.example.com"], service: "web" } }), 201);
    await Bun.sleep(10);
    expect(await (await viaIngress(base, "shop.example.com", "/version")).text()).toBe("v1");
    await expectStatus(await req("PUT", "/resources/domain/shop", { spec: { hosts: ["shop.example.com"], service: "web", path_prefix: "/api" } }), 200);
    await Bun.sleep(10);
    expect((await viaIngress(base, "shop.example.com", "/version")).status).toBe(404);
    expect((await viaIngress(base, "shop.example.com", "/api/x")).status).toBe(200);
    // The service's status names where it answers: its default host, then the domain's.
    const port = new URL(base).port;
    const web = await expectStatus(await req("POST", "/resources/service/web/observe"), 200);
    expect(web.status.detail.urls).toEqual([`http://${host()}:${port}/`, `http://shop.example.com:${port}/api/`]);
    await expectStatus(await req("DELETE", "/resources/domain/shop"), 204);
    await Bun.sleep(10);
    expect((await viaIngress(base, "shop.example.com", "/api/x")).status).toBe(404);
  });

  test("replicas: 0 stops it (502 naming it, status stopped, no environment runs the digest); 2 brings two replicas", async () => {
    const images = async () => (await expectStatus(await req("GET", "/packages"), 200)).images.find((i: { service: string }) => i.service === "web");
    expect((await images()).environments).toEqual(["production"]);
    await expectStatus(await req("PUT", "/resources/service/web", { spec: { image: `${slug}/web`, health_check_path: "/healthz", env_group: "web-env", status_page: true, replicas: 0 } }), 200);
    await settle();
    const stopped = await viaIngress(base, host(), "/version");
    expect(stopped.status).toBe(502);
    expect(await stopped.text()).toContain("web");
    expect((await service()).status).toMatchObject({ state: "pending" });
    expect((await service()).status.summary).toStartWith("stopped (replicas: 0)");
    expect((await images()).environments).toEqual([]);
    await expectStatus(await req("PUT", "/resources/service/web", { spec: { image: `${slug}/web`, health_check_path: "/healthz", env_group: "web-env", status_page: true, replicas: 2 } }), 200);
    await settle();
    const ports = new Set<string>();
    for (let i = 0; i < 6; i++) ports.add((await seen()).port);
    expect(ports.size).toBe(2);
    expect((await service()).status.summary).toStartWith("2 replicas of sha256:");
    expect((await images()).environments).toEqual(["production"]);
  }, 60_000);

  test("after the server restarts, the service runs again with the same digest", async () => {
    const before = await service();
    await t.close();
    await boot();
    await deploymentsModule.onServe!(t.core);
    await settle();
    const app = await seen();
    expect(app.secret).toBe("third-value");
    expect(await (await viaIngress(base, host(), "/version")).text()).toBe("v1");
    const after = await service();
    expect(after.status.detail.digest).toBe(before.status.detail.digest);
    expect(after.status.detail.replicas.length).toBe(2);
  }, 60_000);
});
