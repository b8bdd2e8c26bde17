/**
 * OTLP ingest end to end with the real OpenTelemetry JS exporters (protobuf and JSON, plain and
 * gzip) against a test app, read back through the API: logs, traces, scrubbing (checked in the
 * bytes of telemetry.db and its WAL), who may send (obs.ingest, the token's pin, a named project,
 * environment policies) and who may read (another project's telemetry is invisible).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeProject, makeMachine, makePerson, makeRole } from "../../../test/fixtures";
import { makeLogs, exportLogs, logThroughProvider, makeSpans, exportSpans, SeverityNumber, type Encoding } from "../../../test/obs-clients";
import { environmentPolicies } from "../access/tables";
import { existingWriter } from "./writer";

let t: TestApp;
let shop: { token: string };
let other: { token: string };
let unpinned: { token: string };
let viewer: { token: string };

beforeAll(async () => {
  t = await createTestApp();
  t.clock.set(Date.now());
  makeProject(t, "shop");
  makeProject(t, "other");
  shop = await makeMachine(t, [{ role: "developer", project: "shop" }]);
  other = await makeMachine(t, [{ role: "developer", project: "other" }]);
  unpinned = await makeMachine(t, [{ role: "developer", project: "shop" }], { project: null });
  viewer = await makeMachine(t, [{ role: "viewer", project: "shop" }]);
});
afterAll(() => t.close());

const get = async <T = any>(p: string, token: string, status = 200) => expectStatus<T>(await t.request("GET", p, { token }), status);

describe("logs from the real exporters", () => {
  for (const encoding of ["proto", "json"] as Encoding[]) {
    for (const gzip of [false, true]) {
      test(`${encoding}${gzip ? " + gzip" : ""}: stored with service, environment, host, level and attributes, read back newest first`, async () => {
        const tag = `line-${encoding}-${gzip ? "gz" : "plain"}`;
        const now = Date.now();
        const records = makeLogs({ "service.name": "checkout", "deployment.environment.name": "staging", "host.name": "web-7" }, [
          { body: `${tag} older`, severityNumber: SeverityNumber.INFO, timestamp: now - 2000 },
          { body: `${tag} newer`, severityNumber: SeverityNumber.WARN, severityText: "warning", timestamp: now - 1000, attributes: { "http.request.method": "POST", "http.route": "/pay", "http.response.status_code": 502, "client.address": "10.1.2.3" } },
        ]);
        const r = await exportLogs(t.url, records, { encoding, token: shop.token, gzip });
        expect(r).toEqual({ ok: true, status: null, message: "" });
        const entries = await get(`/api/v1/obs/logs?q=${tag}`, shop.token);
        expect(entries.map((e: { message: string }) => e.message)).toEqual([`${tag} newer`, `${tag} older`]);
        expect(entries[0]).toMatchObject({
          project: "shop",
          service: "checkout",
          environment: "staging",
          host: "web-7",
          level: "warning",
          target: "test-app",
          method: "POST",
          route: "/pay",
          status: "502",
          client: "10.1.2.3",
        });
        expect(entries[1].level).toBe("info");
        expect(Date.parse(entries[0].timestamp)).toBe(now - 1000);
        expect(entries[0].fingerprint).toMatch(/^[0-9a-f]{16}$/);
      });
    }
  }

  test("through a LoggerProvider with a batch processor, as applications do", async () => {
    await logThroughProvider(t.url, { "service.name": "worker", "deployment.environment": "production" }, [{ body: "provider-path line", severityNumber: SeverityNumber.ERROR }], { encoding: "proto", token: shop.token });
    const entries = await get("/api/v1/obs/logs?q=provider-path&service=worker", shop.token);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ service: "worker", environment: "production", level: "error", target: "provider-app" });
  });

  test("filters: service, level families, environment, time window, limit; q matches the target too", async () => {
    const now = Date.now();
    const records = makeLogs({ "service.name": "filters" }, [
      { body: "f-debug", severityNumber: SeverityNumber.DEBUG, timestamp: now - 50_000 },
      { body: "f-error", severityNumber: SeverityNumber.ERROR, timestamp: now - 40_000 },
      { body: "f-fatal", severityNumber: SeverityNumber.FATAL, timestamp: now - 30_000 },
    ], "billing.invoices");
    await exportLogs(t.url, records, { encoding: "proto", token: shop.token });
    const msgs = async (q: string) => (await get(`/api/v1/obs/logs?${q}`, shop.token)).map((e: { message: string }) => e.message);
    expect(await msgs("service=filters")).toEqual(["f-fatal", "f-error", "f-debug"]);
    expect(await msgs("service=filters&level=error,fatal")).toEqual(["f-fatal", "f-error"]);
    expect(await msgs("service=filters&level=debug")).toEqual(["f-debug"]);
    expect(await msgs("service=filters&limit=1")).toEqual(["f-fatal"]);
    expect(await msgs("service=filters&from=45s")).toEqual(["f-fatal", "f-error"]);
    expect(await msgs(`service=filters&to=${encodeURIComponent(new Date(now - 35_000).toISOString())}`)).toEqual(["f-error", "f-debug"]);
    expect(await msgs("service=filters&environment=staging")).toEqual([]);
    expect(await msgs("service=filters&environment=production")).toHaveLength(3);
    expect(await msgs("q=BILLING.INV&service=filters")).toHaveLength(3);
    expect(await msgs("q=F-ERR")).toEqual(["f-error"]);
  });

  test("bad parameters are 422; repeated project is refused", async () => {
    await get("/api/v1/obs/logs?limit=0", shop.token, 422);
    await get("/api/v1/obs/logs?limit=1001", shop.token, 422);
    await get("/api/v1/obs/logs?level=loud", shop.token, 422);
    await get("/api/v1/obs/logs?from=yesterday", shop.token, 422);
    await get("/api/v1/obs/logs?from=1h&to=2h", shop.token, 422);
    const body = await get("/api/v1/obs/logs?project=shop&project=other", shop.token, 422);
    expect(body.error).toBe("validation_failed");
  });

  test("401 Bad token without a valid credential", async () => {
    for (const p of ["/api/v1/obs/logs", "/api/v1/obs/traces", "/api/v1/obs/services", "/api/v1/obs/metrics/names", "/api/v1/obs/metrics/series?name=x", "/api/v1/obs/traces/0123456789abcdef0123456789abcdef"]) {
      const res = await t.request("GET", p, { token: "opst_notARealTokenAtAll0000000000000000000000000000" });
      expect(res.status).toBe(401);
      expect((await res.json()).message).toBe("Bad token");
      const anon = await t.request("GET", p);
      expect(anon.status).toBe(401);
      expect((await anon.json()).message).toBe("Bad token");
    }
  });
});

describe("who may send", () => {
  test("a token without obs.ingest gets 403 from both exporters, and nothing is stored", async () => {
    const records = makeLogs({ "service.name": "nosy" }, [{ body: "viewer-may-not-send" }]);
    for (const encoding of ["proto", "json"] as Encoding[]) {
      const r = await exportLogs(t.url, records, { encoding, token: viewer.token });
      expect(r.ok).toBe(false);
      expect(r.status).toBe(403);
    }
    const { spans } = makeSpans({ "service.name": "nosy" }, [{ name: "viewer-span" }]);
    expect((await exportSpans(t.url, spans, { encoding: "proto", token: viewer.token })).status).toBe(403);
    expect(await get("/api/v1/obs/logs?q=viewer-may-not-send", shop.token)).toEqual([]);
  });

  test("an unpinned token must name a project it may send to", async () => {
    const records = makeLogs({ "service.name": "unpinned" }, [{ body: "unpinned-line" }]);
    const none = await exportLogs(t.url, records, { encoding: "json", token: unpinned.token });
    expect(none.status).toBe(403);
    const elsewhere = await exportLogs(t.url, records, { encoding: "json", token: unpinned.token, headers: { "X-Ops-Project": "other" } });
    expect(elsewhere.status).toBe(403);
    const unknown = await exportLogs(t.url, records, { encoding: "json", token: unpinned.token, headers: { "X-Ops-Project": "no-such-project" } });
    expect(unknown.status).toBe(404);
    const named = await exportLogs(t.url, records, { encoding: "proto", token: unpinned.token, headers: { "X-Ops-Project": "shop" } });
    expect(named.ok).toBe(true);
    expect((await get("/api/v1/obs/logs?q=unpinned-line", shop.token))[0].project).toBe("shop");
  });

  test("a pinned token naming another project is refused (403)", async () => {
    const records = makeLogs({ "service.name": "x" }, [{ body: "pinned-elsewhere" }]);
    const r = await exportLogs(t.url, records, { encoding: "proto", token: shop.token, headers: { "X-Ops-Project": "other" } });
    expect(r.status).toBe(403);
  });

  test("an environment policy without obs.ingest refuses that environment's records in the partial success", async () => {
    const project = makeProject(t, "policed");
    const roleId = makeRole(t, "policed", "sender", ["project.read", "obs.read", "obs.ingest"]);
    t.core.db.insert(environmentPolicies).values({ projectId: project.id, environment: "production", roleId, allowed: JSON.stringify(["project.read", "obs.read"]), updatedAt: t.clock.now() }).run();
    const sender = await makeMachine(t, [{ role: roleId, project: "policed" }]);
    const body = {
      resourceLogs: [
        { resource: { attributes: [{ key: "service.name", value: { stringValue: "p" } }, { key: "deployment.environment.name", value: { stringValue: "production" } }] }, scopeLogs: [{ logRecords: [{ body: { stringValue: "prod-line" } }] }] },
        { resource: { attributes: [{ key: "service.name", value: { stringValue: "p" } }, { key: "deployment.environment.name", value: { stringValue: "staging" } }] }, scopeLogs: [{ logRecords: [{ body: { stringValue: "staging-line" } }] }] },
      ],
    };
    const res = await t.request("POST", "/otlp/v1/logs", { token: sender.token, body });
    const answer = await expectStatus(res, 200);
    expect(answer.partialSuccess.rejectedLogRecords).toBe("1");
    expect(answer.partialSuccess.errorMessage).toContain('environment "production"');
    const seen = (await get("/api/v1/obs/logs?project=policed", sender.token)).map((e: { message: string }) => e.message);
    expect(seen).toEqual(["staging-line"]);
  });
});

describe("who may read", () => {
  test("another project's telemetry is invisible", async () => {
    const logs = makeLogs({ "service.name": "secret-svc" }, [{ body: "other-project-line" }]);
    expect((await exportLogs(t.url, logs, { encoding: "proto", token: other.token })).ok).toBe(true);
    const { spans, traceIds } = makeSpans({ "service.name": "secret-svc" }, [{ name: "other-project-span" }]);
    expect((await exportSpans(t.url, spans, { encoding: "json", token: other.token })).ok).toBe(true);

    expect(await get("/api/v1/obs/logs?q=other-project-line", shop.token)).toEqual([]);
    expect(await get("/api/v1/obs/logs?q=other-project-line&project=other", shop.token)).toEqual([]);
    expect(await get("/api/v1/obs/traces?q=other-project-span", shop.token)).toEqual([]);
    expect(await get("/api/v1/obs/services", shop.token)).not.toContain("secret-svc");
    await get(`/api/v1/obs/traces/${traceIds[0]}`, shop.token, 404);

    expect((await get("/api/v1/obs/logs?q=other-project-line", other.token))[0].project).toBe("other");
    expect((await get(`/api/v1/obs/traces/${traceIds[0]}`, other.token))[0].name).toBe("other-project-span");
    expect(await get("/api/v1/obs/services", other.token)).toContain("secret-svc");
  });

  test("an estate-wide owner reads every project; project= narrows to one", async () => {
    const owner = await makePerson(t, [{ role: "owner", project: null }]);
    const all = await get("/api/v1/obs/logs?q=other-project-line", owner.session);
    expect(all.map((e: { project: string }) => e.project)).toContain("other");
    expect(await get("/api/v1/obs/logs?q=other-project-line&project=shop", owner.session)).toEqual([]);
  });
});

describe("traces from the real exporters", () => {
  test("root spans newest first with filters; a trace's spans in start order; 404 for an unknown trace", async () => {
    const first = makeSpans({ "service.name": "web", "deployment.environment.name": "production" }, [{ name: "GET /orders", attributes: { "http.request.method": "GET", "http.route": "/orders", "http.response.status_code": 200 }, children: ["SELECT orders", "GET inventory"] }]);
    await Bun.sleep(5);
    const second = makeSpans({ "service.name": "web", "deployment.environment.name": "production" }, [{ name: "POST /checkout", error: "card declined", children: ["charge"] }]);
    expect((await exportSpans(t.url, first.spans, { encoding: "proto", token: shop.token, gzip: true })).ok).toBe(true);
    expect((await exportSpans(t.url, second.spans, { encoding: "json", token: shop.token })).ok).toBe(true);

    const roots = await get("/api/v1/obs/traces?service=web", shop.token);
    expect(roots.map((s: { name: string }) => s.name)).toEqual(["POST /checkout", "GET /orders"]);
    expect(roots[1]).toMatchObject({ kind: "SERVER", status: "UNSET", method: "GET", route: "/orders", http_status: "200", parent_span_id: null, project: "shop", environment: "production" });
    expect(roots[1].duration_ms).toBeGreaterThanOrEqual(0);
    expect((await get("/api/v1/obs/traces?status=ERROR", shop.token)).map((s: { name: string }) => s.name)).toEqual(["POST /checkout"]);
    expect((await get("/api/v1/obs/traces?q=get%20/ORD", shop.token)).map((s: { name: string }) => s.name)).toEqual(["GET /orders"]);
    expect(await get("/api/v1/obs/traces?limit=1", shop.token)).toHaveLength(1);

    const spans = await get(`/api/v1/obs/traces/${first.traceIds[0]}`, shop.token);
    expect(spans).toHaveLength(3);
    const root = spans.find((s: { parent_span_id: string | null }) => s.parent_span_id === null);
    expect(spans.filter((s: { parent_span_id: string | null }) => s.parent_span_id === root.span_id)).toHaveLength(2);
    const times = spans.map((s: { timestamp: string }) => Date.parse(s.timestamp));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(spans.find((s: { name: string }) => s.name === "SELECT orders").kind).toBe("CLIENT");
    await get("/api/v1/obs/traces/0123456789abcdef0123456789abcdef", shop.token, 404);
    await get(`/api/v1/obs/traces/${first.traceIds[0].toUpperCase()}`, shop.token, 200);
  });
});

describe("scrubbing at ingest", () => {
  test("secrets, emails and card numbers never reach telemetry.db (its bytes and its WAL)", async () => {
    const secrets = {
      email: "jane.secret.doe@example.com",
      bearer: "eyJhbGciOiJIUzI1NiJ9.c2NydWJtZQ.Zm9vYmFyYmF6",
      token: "opst_Zq8hZk2LmN5pQr7sTv9wXy1zA3bC6dE8gH0jK2mN4xx",
      password: "hunter2-Sup3r",
      card: "4111 1111 1111 1111",
    };
    const message = `user ${secrets.email} paid with ${secrets.card}; Authorization: Bearer ${secrets.bearer}; token ${secrets.token}; password=${secrets.password}`;
    const logs = makeLogs({ "service.name": "leaky" }, [{ body: message, attributes: { "http.route": `/u/${secrets.email}` } }], `scope ${secrets.email}`);
    expect((await exportLogs(t.url, logs, { encoding: "proto", token: shop.token })).ok).toBe(true);
    expect((await exportLogs(t.url, logs, { encoding: "json", token: shop.token, gzip: true })).ok).toBe(true);
    const { spans } = makeSpans({ "service.name": "leaky" }, [{ name: `GET /reset?password=${secrets.password}` }]);
    expect((await exportSpans(t.url, spans, { encoding: "proto", token: shop.token })).ok).toBe(true);

    const [entry] = await get("/api/v1/obs/logs?service=leaky&limit=1", shop.token);
    expect(entry.message).toBe("user [email] paid with [card]; Authorization: Bearer [redacted]; token [redacted]; password=[redacted]");
    expect(entry.route).toBe("/u/[email]");
    expect(entry.target).toBe("scope [email]");
    const [root] = await get("/api/v1/obs/traces?service=leaky", shop.token);
    expect(root.name).toBe("GET /reset?password=[redacted]");

    await existingWriter(t.core)?.flush();
    const files = readdirSync(t.dataDir).filter((f) => f.startsWith("telemetry.db"));
    expect(files).toContain("telemetry.db-wal");
    for (const f of files) {
      const bytes = readFileSync(path.join(t.dataDir, f)).toString("latin1");
      for (const [what, value] of Object.entries(secrets)) expect(bytes.includes(value), `${what} in ${f}`).toBe(false);
    }
  });
});
