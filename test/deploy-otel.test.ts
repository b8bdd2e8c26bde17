/**
 * OpenTelemetry wired into every replica (docs/decisions/0651), against a real app: a Node app
 * whose only telemetry is `node --require @opentelemetry/auto-instrumentations-node/register`
 * (the SDK from the npm registry, copied into the image as an app ships its node_modules) is
 * deployed as a sandboxed replica, answers requests through the ingress, and its spans show in
 * Traces with nothing configured. Its credential, read from its own environment as a hostile app
 * would, is refused everywhere but the OTLP export routes, cannot send into another project, is
 * stored as its own service and environment whatever its resource says, and expires. A service
 * whose env group names its own OTLP endpoint and service name gets none of ops's variables.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { copyFileSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { defaultHostOf, listenIngress, viaIngress } from "./deploy-fixtures";
import { registryCast, run, type RegistryCast } from "./support/registries";
import { pushPacked } from "./support/builds";
import { packImage, type PackedImage } from "../src/domains/builds/image";
import { ensureSigningKey, signImage } from "../src/domains/builds/signing";
import { INGEST_CREDENTIAL_TTL_MS } from "../src/domains/observability/service";

const ROOT = path.resolve(import.meta.dir, "..");
const REGISTER = "@opentelemetry/auto-instrumentations-node/register";

const SERVER_JS = String.raw`
const http = require("http");
// An app that prints its environment at start, as many do by mistake.
console.log("OTEL headers: " + process.env.OTEL_EXPORTER_OTLP_HEADERS);
http.createServer((req, res) => {
  if (req.url === "/healthz") return res.end("ok");
  // What a hostile app can read: its own environment, credential included.
  if (req.url === "/otel-env") {
    res.setHeader("content-type", "application/json");
    return res.end(JSON.stringify(Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("OTEL_")))));
  }
  res.setHeader("content-type", "text/plain");
  res.end("hello from " + req.url);
}).listen(Number(process.env.PORT), "0.0.0.0");
`;

/**
 * The package folders `register` loads (found by running it on the host, one request and a few
 * export attempts long), copied without their ESM builds, maps and typings: the app's node_modules.
 */
async function copyRegisterModules(out: string): Promise<void> {
  const probe = tempDir("ops-otel-probe-");
  const script = path.join(probe, "probe.js");
  writeFileSync(
    script,
    String.raw`
const http = require("http");
const s = http.createServer((q, r) => r.end("x")).listen(0, "127.0.0.1", () => {
  http.get("http://127.0.0.1:" + s.address().port + "/", (r) => { r.resume(); r.on("end", () => setTimeout(() => {
    const roots = new Set();
    for (const f of Object.keys(require.cache)) { const m = /^(.*\/node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(f); if (m) roots.add(m[1]); }
    process.stdout.write(JSON.stringify([...roots]));
    process.exit(0);
  }, 2500)); });
});
`,
  );
  const nm = path.join(ROOT, "node_modules");
  const r = await run(["node", "--require", REGISTER, script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", NODE_PATH: nm, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9/otlp", OTEL_BSP_SCHEDULE_DELAY: "100", OTEL_METRIC_EXPORT_INTERVAL: "500", OTEL_NODE_RESOURCE_DETECTORS: "env,host,os,process" },
    timeoutMs: 60_000,
  });
  const roots = JSON.parse(r.stdout.slice(r.stdout.indexOf("["))) as string[];
  expect(roots.some((p) => p.endsWith("/auto-instrumentations-node"))).toBe(true);
  const skip = (rel: string) => rel === "node_modules" || rel === "build/esm" || rel === "build/esnext" || /\.(map|d\.ts|md)$/.test(rel);
  const copyTree = (from: string, to: string, rel = "") => {
    for (const name of readdirSync(path.join(from, rel))) {
      const r2 = rel ? `${rel}/${name}` : name;
      if (skip(r2)) continue;
      const st = statSync(path.join(from, r2));
      if (st.isDirectory()) copyTree(from, to, r2);
      else {
        mkdirSync(path.dirname(path.join(to, r2)), { recursive: true });
        copyFileSync(path.join(from, r2), path.join(to, r2));
      }
    }
  };
  for (const root of roots) copyTree(root, path.join(out, path.relative(ROOT, root)));
}

let t: TestApp;
let cast: RegistryCast;
let slug: string;
let base: string;
let image: PackedImage;
let credential = "";
const otelEnv: Record<string, Record<string, string>> = {};

const P = () => `/api/v1/projects/${slug}`;
const req = (method: string, p: string, body?: unknown) => t.request(method, `${P()}${p}`, { token: cast.publisher.session, body });

async function deploy(service: string, extra: Record<string, unknown> = {}): Promise<void> {
  const pushed = await pushPacked(t.core, image, `${slug}/${service}`, "v1");
  await signImage(t.core, `${slug}/${service}`, pushed.digest);
  await expectStatus(await req("POST", "/resources/service", { name: service, spec: { image: `${slug}/${service}`, health_check_path: "/healthz", ...extra } }), 201);
  await expectStatus(await req("POST", `/resources/service/${service}/deploy`, { digest: pushed.digest }), 201);
  await t.core.scheduler.runDue();
  const res = await viaIngress(base, defaultHostOf(slug, service), "/otel-env");
  otelEnv[service] = await expectStatus(res, 200);
}

/** An OTLP-JSON trace export of one span, its resource naming `service` and `environment`. */
function spanExport(name: string, service: string, environment: string): string {
  const now = BigInt(t.core.clock.now()) * 1_000_000n;
  const hex = (n: number) => [...crypto.getRandomValues(new Uint8Array(n))].map((b) => b.toString(16).padStart(2, "0")).join("");
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: service } }, { key: "deployment.environment.name", value: { stringValue: environment } }] },
        scopeSpans: [{ scope: { name: "hostile" }, spans: [{ traceId: hex(16), spanId: hex(8), name, kind: 2, startTimeUnixNano: String(now), endTimeUnixNano: String(now + 1_000_000n) }] }],
      },
    ],
  });
}

const sendAs = (bearer: string, body: string, headers: Record<string, string> = {}, p = "/otlp/v1/traces") =>
  fetch(t.url + p, { method: "POST", headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json", ...headers }, body });

const traces = async (who: string, project: string, q = "") =>
  expectStatus<Array<{ service: string; environment: string; name: string }>>(await t.request("GET", `/api/v1/obs/traces?project=${project}&from=1h&limit=500${q}`, { token: who }), 200);

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "30", OPS_SHUTDOWN_GRACE_MS: "2000" } });
  cast = await registryCast(t);
  slug = cast.project.slug;
  base = listenIngress(t);
  const work = tempDir("ops-otel-image-");
  const out = path.join(work, "out");
  mkdirSync(out);
  writeFileSync(path.join(out, "server.js"), SERVER_JS);
  await copyRegisterModules(out);
  image = await packImage({
    outputDir: out,
    layerFile: path.join(work, "layer.tar.gz"),
    start: `exec node --require ${REGISTER} server.js`,
    port: 8080,
    commit: "0123456789abcdef0123456789abcdef01234567",
    commitTime: Date.UTC(2026, 2, 4),
    source: `${slug}/web`,
  });
  ensureSigningKey(t.core);
  await deploy("web");
}, 240_000);

afterAll(async () => {
  await t.close();
});

describe("OpenTelemetry wired into every replica", () => {
  test("the replica gets the endpoint, a credential, its service name and resource attributes", () => {
    const env = otelEnv.web;
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe(`${t.url}/otlp`);
    expect(env.OTEL_EXPORTER_OTLP_PROTOCOL).toBe("http/protobuf");
    expect(env.OTEL_SERVICE_NAME).toBe("web");
    expect(env.OTEL_RESOURCE_ATTRIBUTES).toBe("deployment.environment.name=production,service.version=0123456789abcdef0123456789abcdef01234567");
    const m = /^Authorization=Bearer%20(eyJ[\w-]+\.[\w-]+\.[\w-]+)$/.exec(env.OTEL_EXPORTER_OTLP_HEADERS);
    expect(m).not.toBeNull();
    credential = m![1];
  });

  test("requests to the app show as its spans in Traces, sent by the zero-code SDK alone", async () => {
    for (let i = 0; i < 3; i++) await expectStatus(await viaIngress(base, defaultHostOf(slug, "web"), `/orders/${i}`), 200);
    let spans: Array<{ service: string; environment: string; name: string }> = [];
    for (let i = 0; i < 60 && spans.length === 0; i++) {
      spans = (await traces(cast.publisher.session, slug, "&service=web")).filter((s) => s.name.startsWith("GET"));
      if (spans.length === 0) await Bun.sleep(500);
    }
    expect(spans.length).toBeGreaterThan(0);
    expect(spans[0]).toMatchObject({ service: "web", environment: "production" });
  }, 60_000);

  test("the credential reads nothing: every API answers 401 or 403", async () => {
    const paths = ["/api/v1/me", "/api/v1/projects", `${P()}`, `${P()}/resources/service/web`, `/api/v1/obs/traces?project=${slug}`, `/api/v1/obs/logs?project=${slug}`, `/api/v1/obs/services?project=${slug}`, "/api/v1/tokens", "/v2/", `/v2/${slug}/web/tags/list`];
    for (const p of paths) {
      const res = await fetch(t.url + p, { headers: { authorization: `Bearer ${credential}` } });
      expect({ p, status: res.status }).toEqual({ p, status: [401, 403].includes(res.status) ? res.status : -1 });
    }
    // Nor does it write anything else (a deploy, a resource).
    const post = await fetch(`${t.url}${P()}/resources/service/web/deploy`, { method: "POST", headers: { authorization: `Bearer ${credential}`, "content-type": "application/json" }, body: "{}" });
    expect([401, 403]).toContain(post.status);
  });

  test("naming another project is 403; its resource's service and environment are rewritten to its own", async () => {
    const other = cast.outsider.session;
    const otherSlug = (await expectStatus<Array<{ slug: string }>>(await t.request("GET", "/api/v1/projects", { token: other }), 200))[0].slug;
    expect(otherSlug).not.toBe(slug);
    const refused = await sendAs(credential, spanExport("smuggled-header", "web", "production"), { "x-ops-project": otherSlug });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 7 });
    expect((await sendAs(credential, spanExport("smuggled-query", "web", "production"), {}, `/otlp/v1/traces?project=${otherSlug}`)).status).toBe(403);

    const res = await sendAs(credential, spanExport("renamed", "billing", "staging"));
    expect(res.status).toBe(200);
    const mine = await traces(cast.publisher.session, slug, "&q=renamed");
    expect(mine.map((s) => [s.service, s.environment])).toEqual([["web", "production"]]);
    expect(await traces(cast.publisher.session, slug, "&service=billing")).toEqual([]);
    expect((await traces(other, otherSlug)).filter((s) => s.name.startsWith("smuggled"))).toEqual([]);
  });

  test("a tampered or foreign credential is 401 at the intake", async () => {
    const [h, p, s] = credential.split(".");
    const claims = JSON.parse(Buffer.from(p, "base64url").toString());
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, svc: "billing" })).toString("base64url")}.${s}`;
    expect((await sendAs(forged, spanExport("forged", "billing", "production"))).status).toBe(401);
    expect((await sendAs(`${credential.slice(0, -2)}xx`, spanExport("bad-signature", "web", "production"))).status).toBe(401);
  });

  test("a service whose env group sets OTEL_* keeps its own: no endpoint, no credential, its own name", async () => {
    await expectStatus(await req("POST", "/resources/secret-group", { name: "own-otel", spec: { variables: [{ name: "OTEL_EXPORTER_OTLP_ENDPOINT", kind: "text" }, { name: "OTEL_SERVICE_NAME", kind: "text" }] } }), 201);
    await expectStatus(await req("PUT", "/resources/secret-group/own-otel/variables/OTEL_EXPORTER_OTLP_ENDPOINT", { value: "http://127.0.0.1:9", kind: "text" }), 200);
    await expectStatus(await req("PUT", "/resources/secret-group/own-otel/variables/OTEL_SERVICE_NAME", { value: "checkout", kind: "text" }), 200);
    await deploy("shop", { env_group: "own-otel" });
    const env = otelEnv.shop;
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe("http://127.0.0.1:9");
    expect(env.OTEL_SERVICE_NAME).toBe("checkout");
    expect(env.OTEL_EXPORTER_OTLP_HEADERS).toBeUndefined();
    expect(env.OTEL_EXPORTER_OTLP_PROTOCOL).toBeUndefined();
    expect(env.OTEL_RESOURCE_ATTRIBUTES).toStartWith("deployment.environment.name=production");
  }, 120_000);

  test("the credential is never in the replica's logs: printed, it is masked", async () => {
    const logs = await expectStatus<Array<{ message: string }>>(await t.request("GET", `/api/v1/obs/logs?project=${slug}&from=1h&limit=500`, { token: cast.publisher.session }), 200);
    expect(logs.some((l) => l.message.startsWith("OTEL headers: Authorization="))).toBe(true);
    expect(logs.some((l) => l.message.includes(credential))).toBe(false);
    expect(t.logs.some((l) => l.includes(credential))).toBe(false);
  });

  test("the credential expires: past its lifetime the intake answers 401", async () => {
    expect((await sendAs(credential, spanExport("still-good", "web", "production"))).status).toBe(200);
    t.clock.advance(INGEST_CREDENTIAL_TTL_MS + 60_000);
    const res = await sendAs(credential, spanExport("too-late", "web", "production"));
    expect(res.status).toBe(401);
    expect((await res.json()).message).toContain("expired");
  });
});
