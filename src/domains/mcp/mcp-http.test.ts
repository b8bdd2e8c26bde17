/**
 * ops's MCP server over Streamable HTTP with the SDK's own client: the tool list, every tool
 * called as an owner, and permissions exactly as the API — a viewer's deploy refused as a tool
 * error and audited as denied, an environment policy honoured, a pinned token kept to its
 * project — and set_secret leaving its value nowhere.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeProject, makeRole, mintToken, type Person } from "../../../test/fixtures";
import { databaseText } from "../../../test/resources-helpers";
import { call, callEveryTool, connectHttp, mcpWorld, ok, type McpWorld, type ToolResult } from "../../../test/mcp-fixtures";
import { environmentPolicies } from "../access/tables";
import { TOOL_SPECS, toolsOf } from "./tools";

const NAMED = [
  "whoami", "list_projects", "list_services", "service_status", "list_builds", "get_build", "get_build_log", "start_build", "cancel_build", "deploy", "rollback", "timeline",
  "search_logs", "list_traces", "get_trace", "metric_series", "list_resources", "get_resource", "set_secret", "list_secret_variables", "translations_get", "translations_set", "list_packages", "audit_log",
];
const SECRET = "sk_live_mcp-7f3a9c1e5b2d8046";

let t: TestApp;
let w: McpWorld;
let owner: Client;
let results: Map<string, ToolResult>;

const auditRows = (where: string, ...args: string[]) => t.core.sqlite.query(`SELECT * FROM audit_log WHERE ${where} ORDER BY id`).all(...args) as Array<Record<string, any>>;

beforeAll(async () => {
  t = await createTestApp();
  w = await mcpWorld(t);
  owner = await connectHttp(t, w.ctx.owner.session);
  results = await callEveryTool(owner, w, SECRET);
}, 60_000);
afterAll(async () => {
  await owner?.close();
  w?.local.remove();
  await t?.close();
});

describe("tools/list", () => {
  test("at least the 24 tools the issue names, each with an object input schema, a title and annotations", async () => {
    const { tools } = await owner.listTools();
    const names = tools.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(NAMED));
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.title).toBeTruthy();
      expect(JSON.stringify(tool.inputSchema)).not.toContain('"format":"numeric"');
      expect(tool.annotations?.readOnlyHint === true || (typeof tool.annotations?.destructiveHint === "boolean" && typeof tool.annotations?.idempotentHint === "boolean")).toBe(true);
    }
    const deploy = tools.find((x) => x.name === "deploy")!;
    expect(deploy.inputSchema.required).toEqual(["project", "service"]);
    expect(Object.keys(deploy.inputSchema.properties ?? {}).sort()).toEqual(["build_id", "digest", "environment", "project", "service"]);
    expect(deploy.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false });
    // Integer path and query fields (URL text on the API) are offered as integers.
    const log = tools.find((x) => x.name === "get_build_log")!.inputSchema.properties as Record<string, { type?: string }>;
    expect([log.build_id.type, log.after.type, log.limit.type]).toEqual(["integer", "integer", "integer"]);
  });

  test("each tool declares its route's permission key (the route's own x-permission), and the full app has every tool", () => {
    expect([...toolsOf(t.core).keys()].sort()).toEqual(TOOL_SPECS.map((s) => s.name).sort());
    for (const tool of toolsOf(t.core).values()) {
      const route = t.app.routes.find((r) => `${r.method} ${r.path}` === tool.spec.route)!;
      const declared = (route.hooks as { detail?: Record<string, unknown> }).detail?.["x-permission"];
      const key = typeof tool.permission === "string" ? tool.permission : tool.permission.key;
      expect(`${tool.spec.name}: ${key}`).toBe(`${tool.spec.name}: ${declared}`);
    }
  });
});

describe("every tool, as an owner", () => {
  test("each answers without an error, with short text and structured content", () => {
    expect([...results.keys()].sort()).toEqual([...NAMED].sort());
    for (const [name, r] of results) {
      expect(`${name}: ${r.isError ? r.content[0]?.text : "ok"}`).toBe(`${name}: ok`);
      expect(r.content[0].type).toBe("text");
      expect(r.content[0].text!.length).toBeLessThan(600);
      expect(typeof r.structuredContent).toBe("object");
    }
  });

  test("they did what their routes do", async () => {
    expect(results.get("whoami")!.structuredContent!.actor).toBe(w.ctx.owner.email);
    expect(results.get("list_services")!.structuredContent!.items.map((s: { name: string }) => s.name)).toEqual(["web"]);
    expect(results.get("cancel_build")!.structuredContent!.status).toBe("cancelled");
    expect(results.get("deploy")!.structuredContent).toMatchObject({ service: "web", environment: "production", image_digest: w.digest, trigger: "manual" });
    expect(results.get("rollback")!.structuredContent).toMatchObject({ environment: "staging", trigger: "rollback" });
    expect(results.get("search_logs")!.structuredContent!.items[0].message).toBe("checkout failed: card declined");
    expect(results.get("get_trace")!.structuredContent!.items.map((s: { name: string }) => s.name).sort()).toEqual(["POST /checkout", "charge card"]);
    expect(results.get("metric_series")!.structuredContent!.series[0].service).toBe("web");
    expect(results.get("translations_get")!.structuredContent!.items.length).toBe(1);
    // The API sees what the tools did.
    const timeline = await expectStatus(await w.ctx.req("GET", "/deployments?service=web"), 200);
    expect(timeline.some((r: { deployment?: { trigger: string } | null }) => r.deployment?.trigger === "manual")).toBe(true);
    // Audited as the API calls they stand for, by the owner, through their token kind's via.
    const deployed = auditRows("action = 'deployments.deploy' AND outcome = 'allowed' AND project = ? AND environment = 'production'", w.slug).at(-1)!;
    expect(deployed).toMatchObject({ actor: w.ctx.owner.email, via: "console", target: "service:web" });
  });

  test("a build log read through a tool is the API's", async () => {
    const api = await expectStatus(await w.ctx.req("GET", `/builds/${w.buildId}/log`), 200);
    expect(results.get("get_build_log")!.structuredContent).toEqual(api);
  });
});

describe("permissions and audit exactly as the API", () => {
  let viewer: Person;
  let viewerClient: Client;
  beforeAll(async () => {
    viewer = await makePerson(t, [{ role: "viewer", project: w.slug }]);
    viewerClient = await connectHttp(t, viewer.session);
  });
  afterAll(() => viewerClient?.close());

  test("a viewer's deploy is a tool error with the reason, audited as denied, and nothing rolls out", async () => {
    const before = (await expectStatus(await w.ctx.req("GET", "/deployments?environment=staging&service=web"), 200)).length;
    const r = await call(viewerClient, "deploy", { project: w.slug, service: "web", environment: "staging", digest: w.digest });
    expect(r.isError).toBe(true);
    expect(r.content[0].text).toContain("deployments.deploy");
    expect(r.structuredContent).toMatchObject({ error: "forbidden", status: 403 });
    const denied = auditRows("action = 'deployments.deploy' AND outcome = 'denied' AND actor = ?", viewer.email);
    expect(denied).toHaveLength(1);
    expect(denied[0]).toMatchObject({ project: w.slug, environment: "staging", target: `/api/v1/projects/${w.slug}/resources/service/web/deploy` });
    expect(denied[0].reason).toContain("deployments.deploy");
    expect((await expectStatus(await w.ctx.req("GET", "/deployments?environment=staging&service=web"), 200)).length).toBe(before);
    // The same request to the API is refused the same way.
    const res = await t.request("POST", `/api/v1/projects/${w.slug}/resources/service/web/deploy?environment=staging`, { token: viewer.session, body: { digest: w.digest } });
    expect((await expectStatus(res, 403)).message).toBe(r.content[0].text);
  });

  test("a viewer reads what a viewer reads", async () => {
    expect((await ok(viewerClient, "list_services", { project: w.slug })).items).toHaveLength(1);
    const r = await call(viewerClient, "audit_log", { project: w.slug });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ error: "forbidden" });
  });

  test("an environment policy that removes deployments.deploy in production is honoured; staging is not touched", async () => {
    const roleId = makeRole(t, w.slug, "releaser-mcp", ["project.read", "deployments.read", "deployments.deploy", "resources.read"]);
    t.core.db.insert(environmentPolicies).values({ projectId: t.core.access.findProject(w.slug)!.id, environment: "production", roleId, allowed: JSON.stringify(["project.read", "deployments.read", "resources.read"]), updatedAt: t.clock.now() }).run();
    const releaser = await makePerson(t, [{ role: roleId, project: w.slug }]);
    const client = await connectHttp(t, releaser.session);
    try {
      const prod = await call(client, "rollback", { project: w.slug, service: "web", environment: "production", digest: w.digest });
      expect(prod.isError).toBe(true);
      expect(prod.structuredContent).toMatchObject({ error: "forbidden" });
      const row = auditRows("action = 'deployments.deploy' AND outcome = 'denied' AND actor = ?", releaser.email)[0];
      expect(row).toMatchObject({ environment: "production" });
      expect(row.reason).toContain("policy");
      // In staging the role keeps deployments.deploy: the tool reaches the service (which refuses: a rollout is in flight).
      const staging = await call(client, "rollback", { project: w.slug, service: "web", environment: "staging", digest: w.digest });
      expect(staging.structuredContent).toMatchObject({ error: "conflict" });
    } finally {
      await client.close();
    }
  });

  test("a token pinned to another project reaches nothing here, as on the API", async () => {
    const other = makeProject(t);
    const both = await makePerson(t, [{ role: "maintainer", project: w.slug }, { role: "maintainer", project: other.slug }]);
    const pinned = mintToken(t, both.principal, { role: "maintainer", project: other.slug, kind: "mcp" });
    const client = await connectHttp(t, pinned);
    try {
      const r = await call(client, "list_builds", { project: w.slug });
      expect(r.structuredContent).toMatchObject({ error: "forbidden" });
      expect((await ok(client, "list_projects")).items.map((p: { slug: string }) => p.slug)).toEqual((await expectStatus(await t.request("GET", "/api/v1/projects", { token: pinned }), 200)).map((p: { slug: string }) => p.slug));
      const me = await ok(client, "whoami");
      expect(me).toMatchObject({ via: "token", token_project: other.slug });
    } finally {
      await client.close();
    }
  });

  test("arguments are the route's: unknown ones, a missing project and wrong types are refused before anything runs", async () => {
    const unknown = await call(owner, "list_builds", { project: w.slug, evil: "1" });
    expect(unknown.structuredContent).toMatchObject({ error: "validation_failed" });
    const missing = await call(owner, "deploy", { service: "web", digest: w.digest });
    expect(missing.structuredContent).toMatchObject({ error: "validation_failed" });
    const wrong = await call(owner, "get_build", { project: w.slug, build_id: "seven" });
    expect(wrong.isError).toBe(true);
    const tooMany = await call(owner, "list_builds", { project: w.slug, limit: 100000 });
    expect(tooMany.structuredContent).toMatchObject({ error: "validation_failed" });
    await expect(owner.callTool({ name: "mint_token", arguments: {} })).rejects.toThrow(/No tool named/);
  });
});

describe("set_secret is write-only", () => {
  test("the value is stored, and no tool result, audit row or log line holds it", async () => {
    const vars = results.get("list_secret_variables")!.structuredContent!.items as Array<Record<string, unknown>>;
    expect(vars.find((v) => v.name === "PAYMENT_KEY")).toMatchObject({ kind: "secret", has_value: true });
    // Even a text variable's value, which an owner may reveal through the API, stays out of the tool's answer.
    expect(vars.find((v) => v.name === "GREETING")).toMatchObject({ kind: "text", has_value: true });
    for (const v of vars) expect("value" in v).toBe(false);
    expect(auditRows("action = 'secrets.reveal' AND actor = ?", w.ctx.owner.email)).toHaveLength(0);
    const everything = JSON.stringify([...results.values()]);
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain("the build");
    expect(JSON.stringify(auditRows("1 = 1"))).not.toContain(SECRET);
    expect(t.logs.join("\n")).not.toContain(SECRET);
    expect(await databaseText(t)).not.toContain(SECRET);
    // The store has it: the dotenv export (secrets.reveal, the only value egress) shows it.
    const group = await expectStatus(await w.ctx.req("GET", "/resources/secret-group/web-env/variables"), 200);
    expect(group.find((v: { name: string }) => v.name === "PAYMENT_KEY").has_value).toBe(true);
  });
});
