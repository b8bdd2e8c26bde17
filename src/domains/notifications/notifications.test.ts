import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeProject, makeMachine } from "../../../test/fixtures";
import { tx } from "../../core/db/client";
import { notify } from "./service";
import { NOTIFICATION_KINDS } from "./kinds";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

function emit(projectId: string, slug: string, kind: (typeof NOTIFICATION_KINDS)[number]["kind"] = "build.failed", extra: Record<string, string | number> = {}) {
  tx(t.core.db, (q) => notify(t.core, q, { kind, projectId, params: { project: slug, ...extra }, link: `/projects/${slug}/builds` }));
}

describe("notify", () => {
  test("one notice per person of the project (project and estate-wide members), none for others or machines", async () => {
    const a = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: a.slug }]);
    const estate = await makePerson(t, [{ role: "viewer", project: null }]);
    const outsider = await makePerson(t, []);
    await makeMachine(t, [{ role: "viewer", project: a.slug }]);
    emit(a.id, a.slug, "build.failed", { service: "web", build: 42 });
    const list = await expectStatus(await t.request("GET", "/api/v1/notifications", { token: dev.session }), 200);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ kind: "build.failed", read: false, link: `/projects/${a.slug}/builds`, params: { project: a.slug, service: "web", build: 42 } });
    expect(await expectStatus(await t.request("GET", "/api/v1/notifications", { token: estate.session }), 200)).toHaveLength(1);
    expect(await expectStatus(await t.request("GET", "/api/v1/notifications", { token: outsider.session }), 200)).toHaveLength(0);
  });

  test("params must carry the project's slug", () => {
    const a = makeProject(t);
    expect(() => tx(t.core.db, (q) => notify(t.core, q, { kind: "probe.down", projectId: a.id, params: { service: "x" } }))).toThrow();
  });

  test("in_app off: no notice for that person", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session, body: { settings: [{ kind: "probe.down", in_app: false, email: false }] } }), 204);
    emit(a.id, a.slug, "probe.down");
    emit(a.id, a.slug, "quota.high");
    const list = await expectStatus(await t.request("GET", "/api/v1/notifications", { token: p.session }), 200);
    expect(list.map((n: { kind: string }) => n.kind)).toEqual(["quota.high"]);
  });
});

describe("GET /api/v1/notifications", () => {
  test("200: newest first; unread and project filters; limit (default 50, capped at 200) and cursor", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }, { role: "viewer", project: b.slug }]);
    for (let i = 0; i < 60; i++) {
      t.clock.advance(1000);
      emit(i % 2 === 0 ? a.id : b.id, i % 2 === 0 ? a.slug : b.slug, "package.published", { n: i });
    }
    const first = await t.request("GET", "/api/v1/notifications", { token: p.session });
    const cursor = first.headers.get("x-next-cursor");
    const page = await expectStatus(first, 200);
    expect(page).toHaveLength(50);
    expect(page[0].params.n).toBe(59);
    expect(cursor).toBe(page[49].id);
    const rest = await expectStatus(await t.request("GET", `/api/v1/notifications?cursor=${cursor}`, { token: p.session }), 200);
    expect(rest.map((n: { params: { n: number } }) => n.params.n)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(await expectStatus(await t.request("GET", "/api/v1/notifications?limit=1000", { token: p.session }), 200)).toHaveLength(60);
    const onlyB = await expectStatus(await t.request("GET", `/api/v1/notifications?project=${b.slug}&limit=5`, { token: p.session }), 200);
    expect(onlyB.every((n: { params: { project: string } }) => n.params.project === b.slug)).toBe(true);
    expect(onlyB).toHaveLength(5);
    await expectStatus(await t.request("POST", `/api/v1/notifications/${page[0].id}/read`, { token: p.session }), 204);
    const unread = await expectStatus(await t.request("GET", "/api/v1/notifications?unread=true&limit=200", { token: p.session }), 200);
    expect(unread).toHaveLength(59);
    expect(unread.some((n: { id: string }) => n.id === page[0].id)).toBe(false);
  });

  test("401 without a credential; 422 for a bad limit", async () => {
    await expectStatus(await t.request("GET", "/api/v1/notifications"), 401);
    const p = await makePerson(t, []);
    await expectStatus(await t.request("GET", "/api/v1/notifications?limit=0", { token: p.session }), 422);
  });
});

describe("unread count, mark read, read-all", () => {
  test("unread-count is global; read marks one; read-all is idempotent and fine on an empty feed", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }, { role: "viewer", project: b.slug }]);
    await expectStatus(await t.request("POST", "/api/v1/notifications/read-all", { token: p.session }), 204);
    emit(a.id, a.slug);
    emit(b.id, b.slug);
    expect(await expectStatus(await t.request("GET", "/api/v1/notifications/unread-count", { token: p.session }), 200)).toEqual({ unread: 2 });
    const [n] = await expectStatus(await t.request("GET", "/api/v1/notifications", { token: p.session }), 200);
    await expectStatus(await t.request("POST", `/api/v1/notifications/${n.id}/read`, { token: p.session }), 204);
    await expectStatus(await t.request("POST", `/api/v1/notifications/${n.id}/read`, { token: p.session }), 204);
    expect((await expectStatus(await t.request("GET", "/api/v1/notifications/unread-count", { token: p.session }), 200)).unread).toBe(1);
    await expectStatus(await t.request("POST", "/api/v1/notifications/read-all", { token: p.session }), 204);
    await expectStatus(await t.request("POST", "/api/v1/notifications/read-all", { token: p.session }), 204);
    expect((await expectStatus(await t.request("GET", "/api/v1/notifications/unread-count", { token: p.session }), 200)).unread).toBe(0);
  });

  test("read: 404 for someone else's notice or an unknown id; 401 anonymous", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const q = await makePerson(t, []);
    emit(a.id, a.slug);
    const [n] = await expectStatus(await t.request("GET", "/api/v1/notifications", { token: p.session }), 200);
    await expectStatus(await t.request("POST", `/api/v1/notifications/${n.id}/read`, { token: q.session }), 404);
    await expectStatus(await t.request("POST", "/api/v1/notifications/0190a0a0-0000-7000-8000-000000000000/read", { token: p.session }), 404);
    await expectStatus(await t.request("POST", `/api/v1/notifications/${n.id}/read`), 401);
    await expectStatus(await t.request("POST", "/api/v1/notifications/read-all"), 401);
    await expectStatus(await t.request("GET", "/api/v1/notifications/unread-count"), 401);
  });
});

describe("notification settings", () => {
  test("GET 200: every kind with labels and defaults (in-app on, email off); PUT replaces; audited", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const got = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session }), 200);
    expect(got.map((s: { kind: string }) => s.kind)).toEqual(NOTIFICATION_KINDS.map((k) => k.kind));
    expect(got.every((s: { in_app: boolean; email: boolean; label: string }) => s.in_app && !s.email && s.label.length > 0)).toBe(true);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session, body: { settings: [{ kind: "build.failed", in_app: false, email: true, label: "ignored" }] } }), 204);
    let now = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session }), 200);
    expect(now.find((s: { kind: string }) => s.kind === "build.failed")).toEqual({ kind: "build.failed", label: "A build failed", in_app: false, email: true });
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session, body: { settings: [{ kind: "probe.down", in_app: true, email: true }] } }), 204);
    now = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session }), 200);
    expect(now.find((s: { kind: string }) => s.kind === "build.failed")).toMatchObject({ in_app: true, email: false });
    const audit = t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE action = 'notifications.settings' AND project = ?").get(a.slug) as { n: number };
    expect(audit.n).toBe(2);
  });

  test("PUT 422 for an unknown kind (nothing changes); 403 non-member; 404 no such project; 401 anonymous", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const other = await makePerson(t, []);
    const body = await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session, body: { settings: [{ kind: "probe.down", in_app: false, email: true }, { kind: "cat.fed", in_app: true, email: true }] } }), 422);
    expect(body.error).toBe("refused");
    const now = await expectStatus(await t.request("GET", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session }), 200);
    expect(now.find((s: { kind: string }) => s.kind === "probe.down").in_app).toBe(true);
    for (const m of ["GET", "PUT"]) {
      const b = m === "PUT" ? { settings: [] } : undefined;
      await expectStatus(await t.request(m, `/api/v1/projects/${a.slug}/notification-settings`, { token: other.session, body: b }), 403);
      await expectStatus(await t.request(m, "/api/v1/projects/no-such-project/notification-settings", { token: p.session, body: b }), 404);
      await expectStatus(await t.request(m, `/api/v1/projects/${a.slug}/notification-settings`, { body: b }), 401);
    }
  });
});

describe("a pinned token sees only its project's notices", () => {
  test("list, unread count and read marks are confined to the pin", async () => {
    const a = makeProject(t);
    const b = makeProject(t);
    const p = await makePerson(t, [{ role: "developer", project: a.slug }, { role: "developer", project: b.slug }]);
    emit(a.id, a.slug);
    emit(b.id, b.slug);
    const { mintToken } = await import("../../../test/fixtures");
    const pinned = mintToken(t, p.principal, { role: "viewer", project: a.slug });
    const list = await expectStatus(await t.request("GET", "/api/v1/notifications", { token: pinned }), 200);
    expect(list.map((n: { params: { project: string } }) => n.params.project)).toEqual([a.slug]);
    expect((await expectStatus(await t.request("GET", "/api/v1/notifications/unread-count", { token: pinned }), 200)).unread).toBe(1);
    const [other] = await expectStatus(await t.request("GET", `/api/v1/notifications?project=${b.slug}`, { token: p.session }), 200);
    await expectStatus(await t.request("POST", `/api/v1/notifications/${other.id}/read`, { token: pinned }), 404);
    await expectStatus(await t.request("POST", "/api/v1/notifications/read-all", { token: pinned }), 204);
    expect((await expectStatus(await t.request("GET", "/api/v1/notifications/unread-count", { token: p.session }), 200)).unread).toBe(1);
  });
});
