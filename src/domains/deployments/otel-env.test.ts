/**
 * The OTEL_* variables a replica gets (otel-env.ts, decision 0651), against a real app's core: what
 * the service sets itself wins, any endpoint or headers of its own keeps the credential out, each
 * call mints a different credential that the intake accepts, and the resource attributes carry the
 * deployment's commit and build.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/harness";
import { makeProject } from "../../../test/fixtures";
import { withOtelEnv } from "./otel-env";
import { deployments } from "./tables";

let t: TestApp;
let project: { id: string; slug: string };
let deploymentId: number;

beforeAll(async () => {
  t = await createTestApp();
  project = makeProject(t);
  deploymentId = t.core.db
    .insert(deployments)
    .values({ projectId: project.id, environment: "production", service: "web", repository: `${project.slug}/web`, imageDigest: `sha256:${"a".repeat(64)}`, buildId: 42, commitSha: "c0ffee", message: "m", author: "a@ops.test", trigger: "build", rollout: "healthy", createdAt: t.clock.now(), createdBy: "a@ops.test" })
    .returning({ id: deployments.id })
    .get().id;
});
afterAll(() => t.close());

const addr = () => ({ project, environment: "production", service: "web" });
const names = (env: Array<[string, string]>) => env.map(([k]) => k);
const export1 = (bearer: string) =>
  fetch(`${t.url}/otlp/v1/traces`, { method: "POST", headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" }, body: "{}" });

describe("withOtelEnv", () => {
  test("adds the five variables first (the service's own come later and win), and masks the credential", async () => {
    const out = await withOtelEnv(t.core, addr(), deploymentId, { env: [["DATABASE_URL", "x"]], masked: ["s3cret"] }, ["PATH=/usr/bin"]);
    expect(names(out.env)).toEqual(["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "DATABASE_URL"]);
    const env = Object.fromEntries(out.env);
    expect(env.OTEL_RESOURCE_ATTRIBUTES).toBe("deployment.environment.name=production,service.version=c0ffee,ops.build=42");
    const token = decodeURIComponent(env.OTEL_EXPORTER_OTLP_HEADERS).replace("Authorization=Bearer ", "");
    expect(out.masked).toEqual(["s3cret", token]);
    expect((await export1(token)).status).toBe(200);
  });

  test("each replica start mints a credential of its own", async () => {
    const a = Object.fromEntries((await withOtelEnv(t.core, addr(), deploymentId, { env: [], masked: [] }, [])).env);
    const b = Object.fromEntries((await withOtelEnv(t.core, addr(), deploymentId, { env: [], masked: [] }, [])).env);
    expect(a.OTEL_EXPORTER_OTLP_HEADERS).not.toBe(b.OTEL_EXPORTER_OTLP_HEADERS);
  });

  test("an endpoint or headers of the service's own (env group or image) keep ops's endpoint and credential out", async () => {
    for (const [own, image] of [
      [[["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://collector.example/v1/traces"]], []],
      [[["OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k"]], []],
      [[], ["OTEL_EXPORTER_OTLP_ENDPOINT=https://collector.example"]],
    ] as Array<[Array<[string, string]>, string[]]>) {
      const out = await withOtelEnv(t.core, addr(), deploymentId, { env: own, masked: [] }, image);
      expect(names(out.env)).not.toContain("OTEL_EXPORTER_OTLP_ENDPOINT");
      expect(out.env.filter(([k]) => k === "OTEL_EXPORTER_OTLP_HEADERS")).toEqual(own.filter(([k]) => k === "OTEL_EXPORTER_OTLP_HEADERS"));
      expect(out.masked).toEqual([]);
      expect(names(out.env)).toContain("OTEL_SERVICE_NAME");
    }
  });

  test("a service name, attributes or protocol the service sets is not added again", async () => {
    const out = await withOtelEnv(t.core, addr(), deploymentId, { env: [["OTEL_SERVICE_NAME", "checkout"], ["OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"]], masked: [] }, ["OTEL_RESOURCE_ATTRIBUTES=team=shop"]);
    expect(names(out.env).sort()).toEqual(["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"]);
    expect(Object.fromEntries(out.env)).toMatchObject({ OTEL_SERVICE_NAME: "checkout", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" });
  });
});
