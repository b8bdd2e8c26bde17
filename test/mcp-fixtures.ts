/**
 * MCP test support: the SDK's own client over Streamable HTTP (to `/mcp`) or over stdio (starting
 * `ops mcp`), and a project with something for every tool to find: a service `web` in production
 * and staging mounting the secret group `web-env`, a repository on the built-in host with a pushed
 * commit (so a build is queued), a signed image of `web`, logs, a trace and a metric sent with the
 * OpenTelemetry exporters, and a translation bundle.
 */
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { expectStatus, type TestApp } from "./harness";
import { makeMachine } from "./fixtures";
import { buildWorld, type BuildWorld } from "./builds-fixtures";
import { pushApp } from "./deploy-fixtures";
import { makeLogs, exportLogs, makeSpans, exportSpans, meters, exportMetrics, SeverityNumber } from "./obs-clients";
import { createBundle } from "./support/translations";

export const ROOT = path.resolve(import.meta.dir, "..");

export type ToolResult = { content: Array<{ type: string; text?: string }>; structuredContent?: Record<string, any>; isError?: boolean };

/** An SDK client connected to `<t.url>/mcp` with `token` as the bearer. */
export async function connectHttp(t: TestApp, token: string, name = "ops-test"): Promise<Client> {
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/** An SDK client that starts `command mcp --server <t.url>` (the CLI from source by default) with `env`. */
export async function connectStdio(t: TestApp, env: Record<string, string>, command: string[] = [process.execPath, path.join(ROOT, "src/main.ts")]): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({ command: command[0], args: [...command.slice(1), "mcp", "--server", t.url], env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", ...env }, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
  const client = new Client({ name: "ops-test-stdio", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** A call that must succeed: its structured content (the failure text otherwise). */
export async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const r = await call(client, name, args);
  if (r.isError) throw new Error(`${name} failed: ${r.content.map((c) => c.text).join(" ")}`);
  return r.structuredContent as Record<string, any>;
}

export interface McpWorld extends BuildWorld {
  slug: string;
  /** A signed image of `web`. */
  digest: string;
  /** The build the push queued. */
  buildId: number;
  traceId: string;
  bundle: number;
  /** A token pinned to the project with obs.ingest (sends the telemetry). */
  ingest: string;
}

/** Everything the tools read (see the file's comment). The clock follows the wall clock's date, as the telemetry does. */
export async function mcpWorld(t: TestApp): Promise<McpWorld> {
  t.clock.set(Date.now());
  const w = await buildWorld(t, { environments: ["production", "staging"], envGroup: true });
  const slug = w.ctx.slug;
  await w.local.commit({ "README.md": "# app\n" }, "First commit");
  await w.local.push();
  const builds = await expectStatus<Array<{ id: number }>>(await w.ctx.req("GET", "/builds"), 200);
  if (builds.length === 0) throw new Error("the push queued no build");
  const digest = await pushApp(t, slug, "web", { version: "v1" });
  const ingest = (await makeMachine(t, [{ role: "developer", project: slug }])).token;
  const resource = { "service.name": "web", "deployment.environment.name": "production" };
  const now = Date.now();
  const sent = await exportLogs(t.url, makeLogs(resource, [{ body: "checkout failed: card declined", severityNumber: SeverityNumber.ERROR, timestamp: now - 1000 }]), { encoding: "proto", token: ingest });
  if (!sent.ok) throw new Error(`logs not sent: ${sent.message}`);
  const { spans, traceIds } = makeSpans(resource, [{ name: "POST /checkout", error: "declined", children: ["charge card"] }]);
  const traced = await exportSpans(t.url, spans, { encoding: "json", token: ingest });
  if (!traced.ok) throw new Error(`spans not sent: ${traced.message}`);
  const m = meters(resource);
  m.provider.getMeter("web").createCounter("checkout_requests").add(3);
  const measured = await exportMetrics(t.url, await m.collect(), { encoding: "proto", token: ingest });
  if (!measured.ok) throw new Error(`metrics not sent: ${measured.message}`);
  const bundle = await createBundle(t, slug, w.ctx.owner, { name: slug });
  return { ...w, slug, digest, buildId: builds[0].id, traceId: traceIds[0], bundle, ingest };
}

/**
 * Every tool called once as an owner, in an order that gives each what it needs (the build
 * start_build queues is the one cancel_build cancels). Returns each tool's result.
 */
export async function callEveryTool(client: Client, w: McpWorld, secretValue: string): Promise<Map<string, ToolResult>> {
  const project = w.slug;
  const results = new Map<string, ToolResult>();
  const run = async (name: string, args: Record<string, unknown>) => {
    const r = await call(client, name, args);
    results.set(name, r);
    return r;
  };
  await run("whoami", {});
  await run("list_projects", {});
  await run("list_services", { project });
  await run("service_status", { project, service: "web" });
  await run("list_resources", { project, environment: "staging" });
  await run("get_resource", { project, type: "secret-group", name: "web-env" });
  await run("list_builds", { project, service: "web" });
  await run("get_build", { project, build_id: w.buildId });
  await run("get_build_log", { project, build_id: w.buildId });
  const started = await run("start_build", { project, service: "web" });
  await run("cancel_build", { project, build_id: started.structuredContent?.id });
  await run("deploy", { project, service: "web", digest: w.digest });
  await run("rollback", { project, service: "web", environment: "staging", digest: w.digest });
  await run("timeline", { project, service: "web" });
  await run("search_logs", { project, q: "card declined" });
  await run("list_traces", { project, service: "web" });
  await run("get_trace", { project, trace_id: w.traceId });
  await run("metric_series", { project, name: "checkout_requests", from: "1h" });
  await run("set_secret", { project, group: "web-env", name: "PAYMENT_KEY", value: secretValue });
  await run("list_secret_variables", { project, group: "web-env" });
  await run("translations_set", { project, bundle: String(w.bundle), namespace: "checkout", key: "declined", locale: "en", value: "Your card was declined." });
  await run("translations_get", { project, bundle: String(w.bundle) });
  await run("list_packages", { project });
  await run("audit_log", { project, limit: 20 });
  return results;
}
