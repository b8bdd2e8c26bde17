/**
 * The MCP deploy tool answers with the rollout's verdict where ops serve's scheduler runs
 * (issue 36: the reason where the failure is shown): a version that crashes at start comes back
 * `rolled_back`, with what its replica printed last (secrets masked) in the answer and its error
 * line in the text; a healthy one comes back `healthy`. The test app's scheduler runs by itself
 * here, as under ops serve.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject } from "./fixtures";
import { pushApp } from "./deploy-fixtures";
import { WallClock } from "./chromium";
import { call, connectHttp } from "./mcp-fixtures";

let t: TestApp;
let slug: string;
let session: string;
const req = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/${slug}${p}`, { token: session, body });

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock(), env: { OPS_SCHEDULER_TICK_MS: "100", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "10" } });
  slug = makeProject(t).slug;
  session = (await makePerson(t, [{ role: "owner", project: slug }])).session;
  await expectStatus(await req("POST", "/resources/service", { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz" } }), 201);
  await expectStatus(await req("PUT", "/secrets/web/API_TOKEN", { value: "tok-mcp-1a2b3c4d5e" }), 204);
  t.core.scheduler.start();
}, 60_000);

afterAll(async () => {
  await t?.core.scheduler.stop(5000);
  await t?.close();
});

describe("the MCP deploy tool answers with the verdict", () => {
  test("a crash at start: rolled_back, with the replica's last lines masked and its error line in the text", async () => {
    const digest = await pushApp(t, slug, "web", { version: "v1", start: `echo starting with $API_TOKEN; node -e 'throw new Error("QUEUE_URL is not set")'` });
    const client = await connectHttp(t, session);
    try {
      const r = await call(client, "deploy", { project: slug, service: "web", digest });
      expect(r.isError).toBeFalsy();
      const d = r.structuredContent as { rollout: string; failure_output?: Array<{ process: string; lines: string[] }> };
      expect(d.rollout).toBe("rolled_back");
      expect(d.failure_output![0]!.lines).toContain("starting with ***");
      const text = r.content.map((c) => c.text).join(" ");
      expect(text).toContain(": rolled_back: the new replicas were not healthy");
      expect(text).toContain("printed: Error: QUEUE_URL is not set");
      expect(JSON.stringify(r)).not.toContain("tok-mcp-1a2b3c4d5e");
    } finally {
      await client.close();
    }
  }, 60_000);

  test("a healthy version: healthy", async () => {
    const digest = await pushApp(t, slug, "web", { version: "v2" });
    const client = await connectHttp(t, session);
    try {
      const r = await call(client, "deploy", { project: slug, service: "web", digest });
      expect((r.structuredContent as { rollout: string }).rollout).toBe("healthy");
      expect(r.content[0]!.text).toMatch(/: healthy\.$/);
    } finally {
      await client.close();
    }
  }, 60_000);
});
