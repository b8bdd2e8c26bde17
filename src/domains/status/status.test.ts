import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, mintToken } from "../../../test/fixtures";
import { checkSchedulerHeartbeat, setComponentState, PROBE_TASK } from "./service";

let t: TestApp;
let owner: string;
beforeAll(async () => {
  t = await createTestApp();
  // A token without expiry: these tests move the clock by weeks, past any session's idle limit.
  const o = await makeOwner(t);
  owner = mintToken(t, o.principal, { role: "owner", expiresInDays: 0 });
});
afterAll(() => t.close());

const MIN = 60_000;
const DAY = 86_400_000;

function transition(component: string, state: string, reason = "") {
  return t.request("POST", `/api/v1/status/components/${component}/transitions`, { token: owner, body: { state, reason } });
}

describe("GET /api/v1/status/public", () => {
  test("200 without a credential: the platform's components, all operational, shallow", async () => {
    const res = await t.request("GET", "/api/v1/status/public");
    const body = await expectStatus(res, 200);
    expect(Object.keys(body).sort()).toEqual(["components", "generated_at", "incidents", "state"]);
    expect(body.state).toBe("operational");
    expect(body.components.map((c: { slug: string }) => c.slug)).toEqual(["api", "database", "scheduler", "registry", "builds", "ingest"]);
    for (const c of body.components) expect(Object.keys(c).sort()).toEqual(["name", "since", "slug", "state"]);
    expect(body.incidents).toEqual([]);
  });

  test("the overall state is the worst component state; incidents fold transitions, reasons stay private", async () => {
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: owner, body: { slug: "mail", name: "Mail" } }), 201);
    t.clock.advance(MIN);
    const started = new Date(t.clock.now()).toISOString();
    await expectStatus(await transition("mail", "degraded", "secret internal reason"), 201);
    t.clock.advance(MIN);
    await expectStatus(await transition("mail", "down"), 201);
    let body = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(body.state).toBe("down");
    expect(body.incidents[0]).toEqual({ name: "Mail", slug: "mail", started_at: started, resolved_at: null, state: "down" });
    expect(JSON.stringify(body)).not.toContain("secret internal reason");
    t.clock.advance(MIN);
    await expectStatus(await transition("mail", "degraded"), 201);
    t.clock.advance(MIN);
    const resolved = new Date(t.clock.now()).toISOString();
    await expectStatus(await transition("mail", "operational"), 201);
    body = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(body.state).toBe("operational");
    expect(body.incidents[0]).toEqual({ name: "Mail", slug: "mail", started_at: started, resolved_at: resolved, state: "down" });
    const mail = body.components.find((c: { slug: string }) => c.slug === "mail");
    expect(mail).toEqual({ name: "Mail", slug: "mail", state: "operational", since: resolved });
  });

  test("incidents older than about 30 days drop out; one still open at the window's start keeps its start", async () => {
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: owner, body: { slug: "cdn", name: "CDN" } }), 201);
    await expectStatus(await transition("cdn", "degraded"), 201);
    t.clock.advance(MIN);
    await expectStatus(await transition("cdn", "operational"), 201);
    t.clock.advance(MIN);
    const longStart = new Date(t.clock.now()).toISOString();
    await expectStatus(await transition("cdn", "degraded"), 201);
    t.clock.advance(2 * DAY);
    await expectStatus(await transition("cdn", "down"), 201);
    t.clock.advance(31 * DAY);
    const body = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    const cdn = body.incidents.filter((i: { slug: string }) => i.slug === "cdn");
    expect(cdn).toEqual([{ name: "CDN", slug: "cdn", started_at: longStart, resolved_at: null, state: "down" }]);
    await expectStatus(await transition("cdn", "operational"), 201);
    t.clock.advance(31 * DAY);
    const later = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(later.incidents.filter((i: { slug: string }) => i.slug === "cdn")).toEqual([]);
  });
});

describe("the public document's cache", () => {
  test("folded once per 5 s while nothing changes; any change shows at once", async () => {
    t.clock.advance(10_000);
    const a = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    t.clock.advance(2_000);
    const b = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(b.generated_at).toBe(a.generated_at);
    await expectStatus(await transition("api", "degraded"), 201);
    const c = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(c.state).toBe("degraded");
    await expectStatus(await transition("api", "operational"), 201);
    t.clock.advance(5_000);
    const d = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(d.generated_at).not.toBe(c.generated_at);
    expect(d.state).toBe("operational");
  });
});

describe("status.probe and the scheduler heartbeat", () => {
  test("the probe keeps healthy components operational and marks late scheduled work as degraded", async () => {
    await t.core.scheduler.runDue();
    await t.core.scheduler.runNow(PROBE_TASK);
    let body = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(body.components.find((c: { slug: string }) => c.slug === "database").state).toBe("operational");
    t.core.sqlite.run("UPDATE scheduler_tasks SET next_run_at = ? WHERE id = 'device.expire-grants'", [t.clock.now() - 10 * MIN]);
    await t.core.scheduler.runNow(PROBE_TASK);
    body = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(body.components.find((c: { slug: string }) => c.slug === "scheduler").state).toBe("degraded");
    await t.core.scheduler.runNow("device.expire-grants");
    await t.core.scheduler.runNow(PROBE_TASK);
    body = await expectStatus(await t.request("GET", "/api/v1/status/public"), 200);
    expect(body.components.find((c: { slug: string }) => c.slug === "scheduler").state).toBe("operational");
  });

  test("no heartbeat for 3 minutes while the scheduler should run: scheduler down, until the probe runs again", async () => {
    await t.core.scheduler.runNow(PROBE_TASK);
    t.clock.advance(4 * MIN);
    await t.core.scheduler.runNow("device.expire-grants");
    await t.core.scheduler.runNow("access.flush-last-used");
    checkSchedulerHeartbeat(t.core, true);
    const row = t.core.sqlite.query("SELECT state FROM status_components WHERE slug = 'scheduler'").get() as { state: string };
    expect(row.state).toBe("down");
    const tr = t.core.sqlite.query("SELECT reason FROM status_transitions WHERE component = 'scheduler' ORDER BY id DESC").get() as { reason: string };
    expect(tr.reason).toContain("heartbeat");
    await t.core.scheduler.runDue();
    await t.core.scheduler.runNow(PROBE_TASK);
    expect((t.core.sqlite.query("SELECT state FROM status_components WHERE slug = 'scheduler'").get() as { state: string }).state).toBe("operational");
  });

  test("an unchanged state stores no transition", () => {
    const before = (t.core.sqlite.query("SELECT count(*) AS n FROM status_transitions").get() as { n: number }).n;
    expect(setComponentState(t.core, "builds", "operational")).toBeNull();
    expect((t.core.sqlite.query("SELECT count(*) AS n FROM status_transitions").get() as { n: number }).n).toBe(before);
  });
});

describe("status administration", () => {
  test("GET /api/v1/status/components: 200 for estate.manage, 401, 403", async () => {
    const list = await expectStatus(await t.request("GET", "/api/v1/status/components", { token: owner }), 200);
    expect(list.find((c: { slug: string }) => c.slug === "api")).toMatchObject({ platform: true, state: "operational" });
    await expectStatus(await t.request("GET", "/api/v1/status/components"), 401);
    const p = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: p.slug }]);
    await expectStatus(await t.request("GET", "/api/v1/status/components", { token: m.session }), 403);
  });

  test("POST /api/v1/status/components: 201, 401, 403, 409, 422; audited", async () => {
    const c = await expectStatus(await t.request("POST", "/api/v1/status/components", { token: owner, body: { slug: "dns", name: "DNS", state: "degraded" } }), 201);
    expect(c).toMatchObject({ slug: "dns", name: "DNS", state: "degraded", platform: false });
    const audit = t.core.sqlite.query("SELECT action FROM audit_log WHERE target = 'status-component:dns'").get() as { action: string };
    expect(audit.action).toBe("estate.manage");
    await expectStatus(await t.request("POST", "/api/v1/status/components", { body: { slug: "x", name: "X" } }), 401);
    const p = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: p.slug }]);
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: m.session, body: { slug: "x", name: "X" } }), 403);
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: owner, body: { slug: "dns", name: "DNS again" } }), 409);
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: owner, body: { slug: "Not A Slug", name: "X" } }), 422);
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: owner, body: { slug: "ok", name: "X", state: "on-fire" } }), 422);
  });

  test("POST /api/v1/status/components/{component}/transitions: 201, 401, 403, 404, 409, 422", async () => {
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: owner, body: { slug: "queue", name: "Queue" } }), 201);
    const tr = await expectStatus(await transition("queue", "down", "broker lost"), 201);
    expect(tr).toMatchObject({ component: "queue", from: "operational", to: "down", reason: "broker lost", source: "manual" });
    await expectStatus(await t.request("POST", "/api/v1/status/components/queue/transitions", { body: { state: "operational" } }), 401);
    const p = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: p.slug }]);
    await expectStatus(await t.request("POST", "/api/v1/status/components/queue/transitions", { token: m.session, body: { state: "operational" } }), 403);
    await expectStatus(await transition("nothing-here", "down"), 404);
    await expectStatus(await transition("queue", "down"), 409);
    await expectStatus(await transition("queue", "sideways"), 422);
  });

  test("DELETE /api/v1/status/components/{component}: 204 (history goes too), 401, 403, 404, 409 for a platform component", async () => {
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: owner, body: { slug: "tmp", name: "Temp" } }), 201);
    await expectStatus(await transition("tmp", "down"), 201);
    await expectStatus(await t.request("DELETE", "/api/v1/status/components/tmp"), 401);
    const p = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: p.slug }]);
    await expectStatus(await t.request("DELETE", "/api/v1/status/components/tmp", { token: m.session }), 403);
    await expectStatus(await t.request("DELETE", "/api/v1/status/components/tmp", { token: owner }), 204);
    expect((t.core.sqlite.query("SELECT count(*) AS n FROM status_transitions WHERE component = 'tmp'").get() as { n: number }).n).toBe(0);
    await expectStatus(await t.request("DELETE", "/api/v1/status/components/tmp", { token: owner }), 404);
    await expectStatus(await t.request("DELETE", "/api/v1/status/components/api", { token: owner }), 409);
  });
});

describe("health probes", () => {
  test("GET /health: 200", async () => {
    const body = await expectStatus(await t.request("GET", "/health"), 200);
    expect(body.status).toBe("ok");
  });

  test("GET /readyz: 503 until ready, 200 when ready, 503 while draining", async () => {
    t.core.state.ready = false;
    await expectStatus(await t.request("GET", "/readyz"), 503);
    t.core.state.ready = true;
    await expectStatus(await t.request("GET", "/readyz"), 200);
    t.core.state.draining = true;
    await expectStatus(await t.request("GET", "/readyz"), 503);
    t.core.state.draining = false;
  });
});
