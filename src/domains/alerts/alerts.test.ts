/**
 * Alerts end to end on a real app: metric points through OTLP/HTTP, the rule evaluated by its
 * scheduler task, messages to receivers this test runs on 127.0.0.1 (a signed webhook, a Slack
 * and a Discord format), a failing receiver retried with backoff until its failure shows in the
 * deliveries, firing and resolving once each, silences; and the hostile side: private targets
 * refused unless the estate allows them, another project's members shut out, the URL never shown.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createHmac } from "node:crypto";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeMachine, type Person } from "../../../test/fixtures";
import { tx } from "../../core/db/client";
import { notify } from "../notifications/service";
import { appendPlatformLogs } from "../observability/service";
import { EVALUATE_TASK } from "./service";
import { CLIENT_COMMANDS } from "../../cli";
import { connectHttp, call, ok } from "../../../test/mcp-fixtures";

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

let t: TestApp;
let owner: Person;
let member: Person;
let stranger: Person;
let ingest: string;
let receiver: ReturnType<typeof Bun.serve>;
const received: Received[] = [];
let failing = true;
const base = () => `http://127.0.0.1:${receiver.port}`;
/** The secret-bearing part of each receiver URL: must never come back from the API. */
const SECRET_PATH = "T000/B000/very-secret-token-3f9c";

beforeAll(async () => {
  t = await createTestApp();
  t.clock.set(Date.now());
  makeProject(t, "shop");
  makeProject(t, "rival");
  owner = await makeOwner(t);
  member = await makePerson(t, [{ role: "maintainer", project: "shop" }]);
  stranger = await makePerson(t, [{ role: "maintainer", project: "rival" }]);
  ingest = (await makeMachine(t, [{ role: "developer", project: "shop" }])).token;
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      received.push({ path, headers: Object.fromEntries(req.headers), body: await req.text() });
      if (path.startsWith("/fail") && failing) return new Response("receiver down", { status: 500 });
      return new Response("ok");
    },
  });
});
afterAll(async () => {
  receiver.stop(true);
  await t.close();
});

const api = (method: string, path: string, who: Person | null, body?: unknown) => t.request(method, path, { token: who?.session, body });
const shop = (rest: string) => `/api/v1/projects/shop/${rest}`;
const at = (path: string) => received.filter((r) => r.path.startsWith(path));

/** One gauge point through OTLP/HTTP JSON, stamped with the app's clock. */
async function gauge(name: string, value: number, service = "api") {
  const body = {
    resourceMetrics: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: service } }, { key: "deployment.environment.name", value: { stringValue: "production" } }] },
        scopeMetrics: [{ metrics: [{ name, gauge: { dataPoints: [{ asDouble: value, timeUnixNano: `${BigInt(t.clock.now()) * 1_000_000n}` } ] } }] }],
      },
    ],
  };
  const res = await t.request("POST", "/otlp/v1/metrics", { token: ingest, raw: JSON.stringify(body), headers: { "content-type": "application/json", "x-ops-project": "shop" } });
  await expectStatus(res, 200);
}

async function evaluate() {
  await t.core.scheduler.runNow(EVALUATE_TASK);
  await t.core.scheduler.runDue({ tasks: false });
}

const channels: Record<string, string> = {};
let webhookSecret = "";
let ruleId = "";

describe("channels: targets and secrecy", () => {
  test("private, loopback, link-local and malformed targets are refused with 422 until the estate allows them", async () => {
    for (const url of [
      "http://169.254.169.254/latest/meta-data/",
      "http://10.1.2.3/hook",
      "http://192.168.1.1/hook",
      `${base()}/hook/${SECRET_PATH}`,
      `http://localhost:${receiver.port}/hook`,
      "http://[::1]/hook",
      "http://[::ffff:127.0.0.1]/hook",
      "ftp://example.com/hook",
      "http://user:pass@example.com/hook",
      "not a url at all",
    ]) {
      const res = await api("POST", shop("alert-channels"), owner, { name: "probe", kind: "webhook", url });
      expect(res.status, url).toBe(422);
      expect(await res.text()).not.toContain(SECRET_PATH);
    }
    // Only the estate may open a private target; a member of the project may not.
    await expectStatus(await api("PUT", "/api/v1/estate/alert-settings", member, { allow_private_targets: ["127.0.0.1"] }), 403);
    await expectStatus(await api("PUT", "/api/v1/estate/alert-settings", owner, { allow_private_targets: ["not-an-ip"] }), 422);
    expect(await expectStatus(await api("PUT", "/api/v1/estate/alert-settings", owner, { allow_private_targets: ["127.0.0.1"] }), 200)).toEqual({ allow_private_targets: ["127.0.0.1"] });
    // The metadata endpoint and other private addresses stay closed.
    await expectStatus(await api("POST", shop("alert-channels"), owner, { name: "meta", kind: "webhook", url: "http://169.254.169.254/latest/meta-data/" }), 422);
    await expectStatus(await api("POST", shop("alert-channels"), owner, { name: "lan", kind: "slack", url: "http://10.1.2.3/hook" }), 422);
  });

  test("channels are made with the URL sealed: only scheme and host come back, the webhook's key once", async () => {
    for (const [name, kind, path] of [
      ["hook", "webhook", "/hook"],
      ["slack", "slack", "/slack"],
      ["discord", "discord", "/discord"],
      ["broken", "webhook", "/fail"],
    ] as const) {
      const res = await api("POST", shop("alert-channels"), member, { name, kind, url: `${base()}${path}/${SECRET_PATH}`, notice_kinds: name === "hook" ? ["build.failed"] : [] });
      const text = await res.clone().text();
      const body = await expectStatus(res, 201);
      expect(text).not.toContain(SECRET_PATH);
      expect(body.url_hint).toBe(`http://127.0.0.1:${receiver.port}/…`);
      if (kind === "webhook") expect(body.signing_secret).toMatch(/^whsec_/);
      else expect(body.signing_secret).toBeNull();
      channels[name] = body.id;
      if (name === "hook") webhookSecret = body.signing_secret;
    }
    const list = await api("GET", shop("alert-channels"), member);
    const text = await list.text();
    expect(list.status).toBe(200);
    expect(text).not.toContain(SECRET_PATH);
    expect(text).not.toContain(webhookSecret);
    expect(JSON.parse(text).map((c: { name: string }) => c.name)).toEqual(["broken", "discord", "hook", "slack"]);
    // The URL is not in ops.db in clear either.
    const row = t.core.sqlite.query("SELECT * FROM alert_channels WHERE id = ?").get(channels.hook);
    expect(JSON.stringify(row)).not.toContain(SECRET_PATH);
    await expectStatus(await api("POST", shop("alert-channels"), member, { name: "hook", kind: "webhook", url: `${base()}/hook` }), 409);
  });

  test("a member of another project can neither see nor use the channels", async () => {
    await expectStatus(await api("GET", shop("alert-channels"), stranger), 403);
    await expectStatus(await api("GET", shop("alert-deliveries"), stranger), 403);
    await expectStatus(await api("DELETE", shop(`alert-channels/${channels.hook}`), stranger), 403);
    // Naming shop's channel from its own project: no such channel there.
    const res = await api("POST", "/api/v1/projects/rival/alert-rules", stranger, { name: "steal", kind: "metric", metric: "x", threshold: 1, channels: [channels.hook] });
    await expectStatus(res, 422);
    await expectStatus(await api("GET", `/api/v1/projects/rival/alert-deliveries?channel=${channels.hook}`, stranger), 404);
    expect(await expectStatus(await api("GET", "/api/v1/projects/rival/alert-channels", stranger), 200)).toEqual([]);
  });
});

describe("a metric rule fires, retries, resolves and is silenced", () => {
  test("over the threshold for its duration it fires once, to every channel, in each one's format", async () => {
    const rule = await expectStatus(
      await api("POST", shop("alert-rules"), member, { name: "5xx-rate", kind: "metric", metric: "http.server.5xx_ratio", service: "api", environment: "production", threshold: 0.05, for_seconds: 60, channels: Object.values(channels) }),
      201,
    );
    ruleId = rule.id;
    expect(rule.state).toBe("ok");
    await gauge("http.server.5xx_ratio", 0.01);
    await evaluate();
    expect((await expectStatus(await api("GET", shop("alert-rules"), member), 200))[0]).toMatchObject({ state: "ok", last_value: 0.01 });

    await gauge("http.server.5xx_ratio", 0.4);
    await evaluate();
    expect((await expectStatus(await api("GET", shop("alert-rules"), member), 200))[0].state).toBe("pending");
    expect(received).toHaveLength(0);

    t.clock.advance(61_000);
    await gauge("http.server.5xx_ratio", 0.5);
    await evaluate();
    expect((await expectStatus(await api("GET", shop("alert-rules"), member), 200))[0]).toMatchObject({ state: "firing", last_value: 0.5 });

    const [hook] = at("/hook");
    expect(at("/hook")).toHaveLength(1);
    // The signature: HMAC-SHA256 with the channel's key over "<timestamp>.<body>".
    const ts = hook.headers["x-ops-timestamp"];
    expect(Math.abs(Number(ts) * 1000 - t.clock.now())).toBeLessThan(2000);
    expect(hook.headers["x-ops-signature"]).toBe(`sha256=${createHmac("sha256", webhookSecret).update(`${ts}.${hook.body}`).digest("hex")}`);
    expect(hook.headers["x-ops-signature"]).not.toBe(`sha256=${createHmac("sha256", "wrong").update(`${ts}.${hook.body}`).digest("hex")}`);
    const payload = JSON.parse(hook.body);
    expect(payload).toMatchObject({ type: "alert.firing", project: "shop", rule: { id: ruleId, name: "5xx-rate", value: 0.5, threshold: 0.05 } });

    const slack = JSON.parse(at("/slack")[0].body);
    expect(slack.text).toContain("[FIRING] 5xx-rate");
    expect(slack.blocks[0]).toMatchObject({ type: "section", text: { type: "mrkdwn" } });
    expect(at("/slack")[0].headers["x-ops-signature"]).toBeUndefined();
    const discord = JSON.parse(at("/discord")[0].body);
    expect(discord.content).toContain("[FIRING] 5xx-rate");
    expect(discord.embeds[0]).toMatchObject({ title: "[FIRING] 5xx-rate" });
    expect(discord.embeds[0].description).toContain("http.server.5xx_ratio is 0.5");

    // Still firing a little later: nothing more is sent.
    t.clock.advance(20_000);
    await gauge("http.server.5xx_ratio", 0.6);
    await evaluate();
    expect(at("/hook")).toHaveLength(1);
    expect(at("/slack")).toHaveLength(1);
  });

  test("a failing receiver is retried with backoff and its failure shows in the deliveries", async () => {
    expect(at("/fail")).toHaveLength(1);
    let [d] = await expectStatus(await api("GET", shop("alert-deliveries?channel=broken"), member), 200);
    expect(d).toMatchObject({ channel: "broken", event: "alert.firing", state: "pending", attempts: 1, status_code: 500 });
    expect(d.error).toContain("500");
    expect(d.next_attempt_at).not.toBeNull();
    // Not before its time.
    await t.core.scheduler.runDue({ tasks: false });
    expect(at("/fail")).toHaveLength(1);
    for (const wait of [30_000, 60_000, 120_000, 240_000]) {
      t.clock.advance(wait);
      await t.core.scheduler.runDue({ tasks: false });
    }
    expect(at("/fail")).toHaveLength(5);
    [d] = await expectStatus(await api("GET", shop("alert-deliveries?channel=broken"), member), 200);
    expect(d).toMatchObject({ state: "failed", attempts: 5, status_code: 500, next_attempt_at: null });
    expect(d.error).toContain("receiver down");
    const failed = await expectStatus(await api("GET", shop("alert-deliveries?state=failed"), member), 200);
    expect(failed.map((x: { channel: string }) => x.channel)).toEqual(["broken"]);
    const delivered = await expectStatus(await api("GET", shop("alert-deliveries?state=delivered"), member), 200);
    expect(delivered.map((x: { channel: string }) => x.channel).sort()).toEqual(["discord", "hook", "slack"]);
    const text = await (await api("GET", shop("alert-deliveries"), member)).text();
    expect(text).not.toContain(SECRET_PATH);
  });

  test("back under the threshold it resolves once", async () => {
    failing = false;
    await gauge("http.server.5xx_ratio", 0.0);
    await evaluate();
    expect((await expectStatus(await api("GET", shop("alert-rules"), member), 200))[0].state).toBe("ok");
    expect(at("/hook").map((r) => JSON.parse(r.body).type)).toEqual(["alert.firing", "alert.resolved"]);
    expect(JSON.parse(at("/slack")[1].body).text).toContain("[RESOLVED] 5xx-rate");
    expect(JSON.parse(at("/discord")[1].body).embeds[0].title).toBe("[RESOLVED] 5xx-rate");
    t.clock.advance(60_000);
    await gauge("http.server.5xx_ratio", 0.0);
    await evaluate();
    expect(at("/hook")).toHaveLength(2);
  });

  test("a silence stops it: the rule fires but nothing is sent until the silence ends", async () => {
    const silence = await expectStatus(await api("POST", shop("alert-silences"), member, { rule_id: ruleId, minutes: 30, reason: "deploying a fix" }), 201);
    expect(silence.active).toBe(true);
    await expectStatus(await api("POST", shop("alert-silences"), stranger, { rule_id: ruleId, minutes: 30 }), 403);
    const before = received.length;
    await gauge("http.server.5xx_ratio", 0.9);
    await evaluate();
    t.clock.advance(61_000);
    await gauge("http.server.5xx_ratio", 0.9);
    await evaluate();
    const [rule] = await expectStatus(await api("GET", shop("alert-rules"), member), 200);
    expect(rule.state).toBe("firing");
    expect(rule.silenced_until).toBe(silence.ends_at);
    expect(received.length).toBe(before);
    // Ending the silence while it still fires sends the firing then.
    await expectStatus(await api("DELETE", shop(`alert-silences/${silence.id}`), member), 204);
    await gauge("http.server.5xx_ratio", 0.9);
    await evaluate();
    expect(at("/hook").map((r) => JSON.parse(r.body).type)).toEqual(["alert.firing", "alert.resolved", "alert.firing"]);
  });
});

describe("log rules and notices", () => {
  test("a log query matching N times in its window fires", async () => {
    const now = t.clock.now();
    const project = t.core.access.findProject("shop")!;
    await appendPlatformLogs(
      t.core,
      [1, 2, 3].map((i) => ({ project: project.id, environment: "production", service: "api", level: "error" as const, message: `payment gateway timeout #${i}`, target: "stdout", timestamp: now - i * 1000 })),
    );
    const rule = await expectStatus(await api("POST", shop("alert-rules"), member, { name: "gateway", kind: "log", query: "gateway timeout", level: "error", threshold: 3, window_seconds: 300, channels: [channels.slack] }), 201);
    await expectStatus(await api("POST", shop("alert-rules"), member, { name: "bad-log", kind: "log", threshold: 2.5, query: "x", channels: [] }), 422);
    const before = at("/slack").length;
    await evaluate();
    const rules = await expectStatus(await api("GET", shop("alert-rules"), member), 200);
    expect(rules.find((r: { id: string }) => r.id === rule.id)).toMatchObject({ state: "firing", last_value: 3 });
    expect(at("/slack")).toHaveLength(before + 1);
    expect(JSON.parse(at("/slack")[before].body).text).toContain("[FIRING] gateway");
  });

  test("a notification kind a channel takes is sent there too", async () => {
    const project = t.core.access.findProject("shop")!;
    const before = at("/hook").length;
    tx(t.core.db, (q) => notify(t.core, q, { kind: "build.failed", projectId: project.id, params: { project: "shop", service: "api", build: 7 }, link: "/projects/shop/builds/7" }));
    await t.core.scheduler.runDue({ tasks: false });
    expect(at("/hook")).toHaveLength(before + 1);
    const body = JSON.parse(at("/hook")[before].body);
    expect(body).toMatchObject({ type: "build.failed", project: "shop", params: { service: "api", build: 7 } });
    expect(body.url).toBe(`${t.url}/projects/shop/builds/7`);
    // Slack did not ask for build.failed.
    const kinds = (await expectStatus(await api("GET", shop("alert-deliveries?channel=slack"), member), 200)).map((d: { event: string }) => d.event);
    expect(kinds).not.toContain("build.failed");
  });
});

describe("ops alerts", () => {
  async function ops(args: string[], flags: Record<string, string | boolean> = {}) {
    let out = "";
    let err = "";
    const code = await CLIENT_COMMANDS.find((c) => c.name === "alerts")!.run({ args, flags: { project: "shop", ...flags }, env: { OPS_SERVER: t.url, OPS_TOKEN: member.session, HOME: t.dataDir }, cwd: t.dataDir, stdout: (s) => (out += s), stderr: (s) => (err += s) });
    return { code, out, err };
  }

  test("lists rules with their state, channels without their URL, and deliveries with their failures", async () => {
    const rules = await ops([]);
    expect(rules.code).toBe(0);
    expect(rules.out).toMatch(/^NAME\s+KIND\s+STATE/);
    expect(rules.out).toMatch(/5xx-rate\s+metric\s+firing\s+0\.9/);
    const channels = await ops(["channels"]);
    expect(channels.out).toMatch(new RegExp(`hook\\s+webhook\\s+http://127\\.0\\.0\\.1:${receiver.port}/…\\s+build\\.failed`));
    expect(channels.out).not.toContain(SECRET_PATH);
    const failed = await ops(["deliveries"], { channel: "broken", state: "failed" });
    expect(failed.out).toMatch(/broken\s+alert\.firing\s+failed\s+5\s+500\s+the receiver answered 500: receiver down/);
    const json = JSON.parse((await ops(["deliveries"], { json: true, limit: "2" })).out);
    expect(json).toHaveLength(2);
    expect((await ops(["nonsense"])).code).toBe(2);
  });
});

describe("MCP tools", () => {
  test("list_alert_rules and list_alert_deliveries answer what the API does; another project's member is refused", async () => {
    const client = await connectHttp(t, member.session);
    try {
      const rules = await ok(client, "list_alert_rules", { project: "shop" });
      expect(rules.items.map((r: { name: string }) => r.name).sort()).toEqual(["5xx-rate", "gateway"]);
      const failed = await ok(client, "list_alert_deliveries", { project: "shop", state: "failed" });
      expect(failed.items).toHaveLength(1);
      expect(failed.items[0]).toMatchObject({ channel: "broken", state: "failed", status_code: 500 });
      expect(JSON.stringify(await call(client, "list_alert_deliveries", { project: "shop" }))).not.toContain(SECRET_PATH);
    } finally {
      await client.close();
    }
    const other = await connectHttp(t, stranger.session);
    try {
      const denied = await call(other, "list_alert_rules", { project: "shop" });
      expect(denied.isError).toBe(true);
    } finally {
      await other.close();
    }
  });
});
