/**
 * `/mcp` against hostile requests, before and after a session exists: no credential, the console
 * cookie, another credential presenting a session id, a page of another origin (DNS rebinding),
 * malformed and oversized bodies, a revoked token, and the session bounds (per credential, per
 * person, in all: nobody's sessions make room for another person's). Requests are sent by hand
 * where the SDK's client would refuse to send them.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeMachine, makePerson, makeProject, mintToken, type Person } from "../../../test/fixtures";
import { connectHttp, ok } from "../../../test/mcp-fixtures";
import { tx } from "../../core/db/client";
import { fixedRole, insertToken } from "../access/service";
import { closeAllSessions, MAX_SESSIONS, MAX_SESSIONS_PER_CREDENTIAL, MAX_SESSIONS_PER_OPERATOR, SESSION_IDLE_MS, sessionsOf } from "./sessions";

let t: TestApp;
let dev: Person;
let project: string;

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const initialize = (id = 1) => JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
const listTools = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });

/** Open a session by hand; returns its id. */
async function open(token: string): Promise<string> {
  const res = await fetch(`${t.url}/mcp`, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${token}` }, body: initialize() });
  expect(res.status).toBe(200);
  await res.text();
  const id = res.headers.get("mcp-session-id");
  expect(id).toBeTruthy();
  return id as string;
}

/** `n` more viewer tokens of the machine `operatorId`, pinned to the test's project. */
function extraTokens(operatorId: string, n: number): string[] {
  const projectId = t.core.access.findProject(project)!.id;
  return Array.from({ length: n }, (_, i) => tx(t.core.db, (q) => insertToken(t.core, q, { operatorId, name: `extra ${i}`, kind: "mcp", role: fixedRole(t.core, "viewer"), projectId, expiresAt: null }).secret));
}

function post(token: string | null, body: BodyInit, extra: Record<string, string> = {}) {
  return fetch(`${t.url}/mcp`, { method: "POST", headers: { ...HEADERS, ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra }, body });
}

beforeAll(async () => {
  t = await createTestApp();
  project = makeProject(t).slug;
  dev = await makePerson(t, [{ role: "developer", project }]);
});
afterAll(() => t.close());

describe("who may open and use a session", () => {
  test("no credential: 401 with a JSON-RPC error and WWW-Authenticate", async () => {
    const res = await post(null, initialize());
    const body = await expectStatus(res, 401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="ops"');
    expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { data: { error: "unauthorized" } } });
  });

  test("the console's cookie opens nothing, even with a matching Origin", async () => {
    const res = await fetch(`${t.url}/mcp`, { method: "POST", headers: { ...HEADERS, cookie: `ops_session=${dev.session}`, origin: t.url }, body: initialize() });
    expect(res.status).toBe(401);
    expect(sessionsOf(t.core).size).toBe(0);
  });

  test("a session id is worth nothing to another credential, even the same person's", async () => {
    const id = await open(dev.session);
    const token = mintToken(t, dev.principal, { role: "developer", project, kind: "mcp" });
    const other = await makePerson(t, [{ role: "developer", project }]);
    for (const bearer of [token, other.session]) {
      const res = await post(bearer, listTools, { "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" });
      expect((await expectStatus(res, 404)).error.data.error).toBe("not_found");
    }
    const mine = await post(dev.session, listTools, { "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" });
    expect(mine.status).toBe(200);
    expect(await mine.text()).toContain("list_builds");
  });

  test("a browser Origin other than ops's own is refused (403, audited), a rebinding Host included; no Origin and ops's own pass", async () => {
    const before = sessionsOf(t.core).size;
    const denied = () => (t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE operator_id = ? AND outcome = 'denied' AND action = 'mcp.request'").get(dev.operator.id) as { n: number }).n;
    const rows = denied();
    // DNS rebinding: the attacker's name resolves to ops, so the page's Origin and the Host agree.
    const origins: Array<Record<string, string>> = [{ origin: "http://evil.example" }, { origin: "http://evil.example", host: "evil.example" }, { origin: "null" }, { origin: t.url.replace("127.0.0.1", "localhost") }];
    for (const extra of origins) {
      const res = await post(dev.session, initialize(), extra);
      const body = await expectStatus(res, 403);
      expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { data: { error: "forbidden", status: 403 } } });
    }
    expect(sessionsOf(t.core).size).toBe(before);
    expect(denied()).toBe(rows + 4);
    // A session opened without an Origin (a CLI client) is not usable from a page either.
    const id = await open(dev.session);
    const hostile = await post(dev.session, listTools, { "mcp-session-id": id, origin: "http://evil.example" });
    expect(hostile.status).toBe(403);
    await hostile.text();
    const stream = await fetch(`${t.url}/mcp`, { headers: { accept: "text/event-stream", authorization: `Bearer ${dev.session}`, "mcp-session-id": id, origin: "http://evil.example" } });
    expect(stream.status).toBe(403);
    await stream.text();
    const end = await fetch(`${t.url}/mcp`, { method: "DELETE", headers: { authorization: `Bearer ${dev.session}`, "mcp-session-id": id, origin: "http://evil.example" } });
    expect(end.status).toBe(403);
    await end.text();
    expect(sessionsOf(t.core).has(id)).toBe(true);
    const own = await post(dev.session, listTools, { "mcp-session-id": id, origin: t.url });
    expect(own.status).toBe(200);
    await own.text();
  });

  test("without a session, only an initialize is taken", async () => {
    expect((await post(dev.session, listTools)).status).toBe(400);
    const get = await fetch(`${t.url}/mcp`, { headers: { accept: "text/event-stream", authorization: `Bearer ${dev.session}` } });
    expect(get.status).toBe(400);
    await get.text();
  });

  test("a revoked token is refused at once, in its session too", async () => {
    const token = mintToken(t, dev.principal, { role: "developer", project, kind: "mcp", name: "to revoke" });
    const client = await connectHttp(t, token);
    expect((await ok(client, "whoami")).via).toBe("token");
    const id = (await expectStatus(await t.request("GET", "/api/v1/tokens", { token: dev.session }), 200)).find((x: { name: string }) => x.name === "to revoke").id;
    await expectStatus(await t.request("DELETE", `/api/v1/tokens/${id}`, { token: dev.session }), 204);
    await expect(client.callTool({ name: "whoami", arguments: {} })).rejects.toThrow(/401/);
    await client.close().catch(() => {});
  });
});

describe("hostile bodies", () => {
  test("malformed JSON is a JSON-RPC parse error (400, -32700), and opens no session", async () => {
    const before = sessionsOf(t.core).size;
    const body = await expectStatus(await post(dev.session, "{not json"), 400);
    expect(body.error.code).toBe(-32700);
    expect(sessionsOf(t.core).size).toBe(before);
  });

  test("a body past OPS_MAX_BODY_BYTES is 413 before it is read whole", async () => {
    const huge = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { pad: "x".repeat(t.core.config.maxBodyBytes + 10) } });
    const res = await post(dev.session, huge);
    expect(res.status).toBe(413);
    await res.text();
  });

  test("another content type is 415; an Accept without event streams is 406", async () => {
    const id = await open(dev.session);
    const text = await post(dev.session, listTools, { "content-type": "text/plain", "mcp-session-id": id });
    expect(text.status).toBe(415);
    await text.text();
    const accept = await post(dev.session, listTools, { accept: "application/json", "mcp-session-id": id });
    expect(accept.status).toBe(406);
    await accept.text();
  });

  test("a second initialize in a session, and a batch of initializes, are refused", async () => {
    const id = await open(dev.session);
    const again = await post(dev.session, initialize(5), { "mcp-session-id": id });
    expect(again.status).toBe(400);
    await again.text();
    const batch = await post(dev.session, `[${initialize(1)},${initialize(2)}]`);
    expect(batch.status).toBe(400);
    await batch.text();
  });
});

describe("bounds", () => {
  test(`one credential keeps at most ${MAX_SESSIONS_PER_CREDENTIAL} sessions: the oldest is closed`, async () => {
    const person = await makePerson(t, [{ role: "viewer", project }]);
    const ids: string[] = [];
    for (let i = 0; i < MAX_SESSIONS_PER_CREDENTIAL + 2; i++) {
      ids.push(await open(person.session));
      t.clock.advance(1);
    }
    const live = [...sessionsOf(t.core).values()].filter((s) => ids.includes(s.id)).map((s) => s.id);
    expect(live.sort()).toEqual(ids.slice(2).sort());
    const first = await post(person.session, listTools, { "mcp-session-id": ids[0] });
    expect(first.status).toBe(404);
    await first.text();
  });

  test("a member with many tokens never closes another person's session: past their own bound they close only their own", async () => {
    const victim = await makePerson(t, [{ role: "viewer", project }]);
    const kept = await open(victim.session);
    const hostile = await makePerson(t, [{ role: "viewer", project }]);
    const tokens = Array.from({ length: MAX_SESSIONS / MAX_SESSIONS_PER_CREDENTIAL + 1 }, (_, i) => mintToken(t, hostile.principal, { role: "viewer", project, kind: "mcp", name: `flood ${i}` }));
    for (const token of tokens) {
      for (let i = 0; i < MAX_SESSIONS_PER_CREDENTIAL; i++) {
        await open(token);
        t.clock.advance(1);
      }
    }
    expect(sessionsOf(t.core).has(kept)).toBe(true);
    const still = await post(victim.session, listTools, { "mcp-session-id": kept });
    expect(still.status).toBe(200);
    await still.text();
    const held = [...sessionsOf(t.core).values()].filter((s) => s.operatorId === hostile.operator.id).length;
    expect(held).toBe(MAX_SESSIONS_PER_OPERATOR);
  }, 60_000);

  test(`at ${MAX_SESSIONS} sessions in all a new one is refused (503, audited), and nobody's session is closed for it`, async () => {
    await closeAllSessions(t.core);
    const filler = Math.ceil(MAX_SESSIONS / MAX_SESSIONS_PER_OPERATOR);
    const opened: string[] = [];
    for (let m = 0; m < filler; m++) {
      const machine = await makeMachine(t, [{ role: "viewer", project }]);
      for (const token of [machine.token, ...extraTokens(machine.operator.id, MAX_SESSIONS_PER_OPERATOR / MAX_SESSIONS_PER_CREDENTIAL - 1)]) {
        for (let i = 0; i < MAX_SESSIONS_PER_CREDENTIAL && opened.length < MAX_SESSIONS; i++) {
          opened.push(await open(token));
          t.clock.advance(1);
        }
      }
    }
    expect(sessionsOf(t.core).size).toBe(MAX_SESSIONS);
    const late = await makePerson(t, [{ role: "viewer", project }]);
    const res = await post(late.session, initialize());
    const body = await expectStatus(res, 503);
    expect(body.error.data.error).toBe("unavailable");
    expect(res.headers.get("retry-after")).toBeTruthy();
    expect([...sessionsOf(t.core).keys()].sort()).toEqual(opened.sort());
    const audit = t.core.sqlite.query("SELECT reason FROM audit_log WHERE operator_id = ? AND outcome = 'denied' AND action = 'mcp.request'").all(late.operator.id) as Array<{ reason: string }>;
    expect(audit.map((a) => a.reason)).toEqual([`ops holds ${MAX_SESSIONS} MCP sessions, its maximum`]);
    // An idle hour frees the room again.
    t.clock.advance(SESSION_IDLE_MS + 1);
    await open(late.session);
    expect(sessionsOf(t.core).size).toBe(1);
  }, 60_000);

  test("an hour without a request ends a session", async () => {
    const id = await open(dev.session);
    t.clock.advance(SESSION_IDLE_MS + 1);
    const res = await post(dev.session, listTools, { "mcp-session-id": id });
    expect(res.status).toBe(404);
    await res.text();
    expect(sessionsOf(t.core).has(id)).toBe(false);
  });

  test("DELETE ends a session", async () => {
    const id = await open(dev.session);
    const res = await fetch(`${t.url}/mcp`, { method: "DELETE", headers: { authorization: `Bearer ${dev.session}`, "mcp-session-id": id } });
    expect(res.status).toBe(200);
    expect(sessionsOf(t.core).has(id)).toBe(false);
  });
});
