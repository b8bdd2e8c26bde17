/**
 * MCP resources with the SDK's client: the ops.toml format, a build's log and a service's recent
 * logs (authorized as the routes they read through), and a subscription that announces new log
 * lines sent with the OpenTelemetry exporter.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeRole } from "../../../test/fixtures";
import { connectHttp, mcpWorld, ok, type McpWorld } from "../../../test/mcp-fixtures";
import { makeLogs, exportLogs, SeverityNumber } from "../../../test/obs-clients";

let t: TestApp;
let w: McpWorld;
let client: Client;

beforeAll(async () => {
  t = await createTestApp();
  w = await mcpWorld(t);
  client = await connectHttp(t, w.ctx.owner.session);
}, 60_000);
afterAll(async () => {
  await client?.close();
  w?.local.remove();
  await t?.close();
});

const text = async (c: Client, uri: string) => {
  const r = await c.readResource({ uri });
  expect(r.contents).toHaveLength(1);
  return r.contents[0] as { uri: string; mimeType: string; text: string };
};

describe("resources", () => {
  test("listed: the ops.toml format, and the two log templates", async () => {
    expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(["ops://docs/ops-toml"]);
    expect((await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate)).toEqual([
      "ops://projects/{project}/builds/{build_id}/log",
      "ops://projects/{project}/environments/{environment}/services/{service}/logs",
    ]);
  });

  test("the ops.toml format is the design document's section", async () => {
    const doc = await text(client, "ops://docs/ops-toml");
    expect(doc.mimeType).toBe("text/markdown");
    expect(doc.text).toStartWith("# `ops.toml`");
    for (const key of ["[services.web]", "build =", "start =", "[steps.migrate]", "[hooks]", "[domains]", "[operational.production.web]"]) expect(doc.text).toContain(key);
  });

  test("a build's log reads what get_build_log reads", async () => {
    const cancelled = await ok(client, "start_build", { project: w.slug, service: "web" });
    await ok(client, "cancel_build", { project: w.slug, build_id: cancelled.id });
    const api = await expectStatus(await w.ctx.req("GET", `/builds/${cancelled.id}/log?limit=5000`), 200);
    expect(api.lines.length).toBeGreaterThan(0);
    const log = await text(client, `ops://projects/${w.slug}/builds/${cancelled.id}/log`);
    expect(log.mimeType).toBe("text/plain");
    for (const l of api.lines) expect(log.text).toContain(l.line);
    expect(log.text.split("\n").filter(Boolean)).toHaveLength(api.lines.length);
  });

  test("a service's logs, oldest first", async () => {
    const logs = await text(client, `ops://projects/${w.slug}/environments/production/services/web/logs`);
    expect(logs.text).toContain("checkout failed: card declined");
  });

  test("refused as the routes refuse: a role without builds.read gets no build log; an unknown URI is not found", async () => {
    const roleId = makeRole(t, w.slug, "obs-only", ["project.read", "obs.read"]);
    const person = await makePerson(t, [{ role: roleId, project: w.slug }]);
    const other = await connectHttp(t, person.session);
    try {
      await expect(other.readResource({ uri: `ops://projects/${w.slug}/builds/${w.buildId}/log` })).rejects.toThrow(/builds\.read/);
      const denied = t.core.sqlite.query("SELECT action, target FROM audit_log WHERE outcome = 'denied' AND actor = ?").all(person.email) as Array<{ action: string; target: string }>;
      expect(denied).toEqual([{ action: "builds.read", target: `/api/v1/projects/${w.slug}/builds/${w.buildId}/log` }]);
      expect((await text(other, `ops://projects/${w.slug}/environments/production/services/web/logs`)).text).toContain("card declined");
      await expect(other.readResource({ uri: `ops://projects/${w.slug}/../../etc/passwd` })).rejects.toThrow(/No resource/);
      await expect(other.readResource({ uri: "file:///etc/passwd" })).rejects.toThrow(/No resource/);
    } finally {
      await other.close();
    }
  });

  test("a subscription to a service's logs announces new lines", async () => {
    const uri = `ops://projects/${w.slug}/environments/production/services/web/logs`;
    const updated = new Promise<string>((resolve) => client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
    await client.subscribeResource({ uri });
    const sent = await exportLogs(t.url, makeLogs({ "service.name": "web", "deployment.environment.name": "production" }, [{ body: "payment provider timed out", severityNumber: SeverityNumber.WARN, timestamp: Date.now() }]), { encoding: "json", token: w.ingest });
    expect(sent.ok).toBe(true);
    const got = await Promise.race([updated, Bun.sleep(15_000).then(() => "no notification within 15 s")]);
    expect(got).toBe(uri);
    expect((await text(client, uri)).text).toContain("payment provider timed out");
    await client.unsubscribeResource({ uri });
  });
});
