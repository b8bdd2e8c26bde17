/**
 * Release steps: `ops.toml` on the built-in git host declares steps and hooks; a rollout of an
 * image built from that commit runs the `pre-deploy` steps in the new image before any new
 * replica starts (their output kept with the service's), and `post-deploy` ones after the switch.
 * A failing pre-deploy step fails the rollout (`failure_kind: deploy`, the step's last line in the
 * note) and the previous version keeps answering.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject } from "./fixtures";
import { defaultHostOf, listenIngress, pushApp, viaIngress } from "./deploy-fixtures";
import { commitFiles } from "./sources-fixtures";
import { serviceLogLines } from "../src/domains/deployments/service";

let t: TestApp;
let slug: string;
let token: string;
let base: string;

const P = () => `/api/v1/projects/${slug}`;
const req = (method: string, p: string, body?: unknown) => t.request(method, `${P()}${p}`, { token, body });

const opsToml = (pre: string) => `[services.web]
start = "node wrap.js"
health = "/healthz"

[steps.migrate]
service = "web"
command = "echo migrating in $PWD"

[steps.announce]
service = "web"
command = "echo announced"

[steps.broken]
service = "web"
command = "echo 'migration 7 failed' >&2; exit 4"

[hooks]
pre-deploy = [${pre}]
post-deploy = ["announce"]
`;

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5" } });
  base = listenIngress(t);
  const project = makeProject(t);
  slug = project.slug;
  const owner = await makePerson(t, [{ role: "owner", project: slug }]);
  token = owner.session;
  await expectStatus(await req("POST", "/sources", { repo: `${slug}/app` }), 201);
  await expectStatus(await req("POST", "/resources/service", { name: "web", spec: { source: { repo: `${slug}/app` }, health_check_path: "/healthz" } }), 201);
}, 60_000);

afterAll(async () => {
  await t.close();
});

describe("release steps", () => {
  test("pre-deploy runs in the new image before the replicas start, post-deploy after the switch", async () => {
    const commit = await commitFiles(t, `${slug}/app`, { "ops.toml": opsToml('"migrate"') });
    const digest = await pushApp(t, slug, "web", { version: "v1", commit });
    await expectStatus(await req("POST", "/resources/service/web/deploy", { digest }), 201);
    await t.core.scheduler.runDue();
    expect(await (await viaIngress(base, defaultHostOf(slug, "web"), "/version")).text()).toBe("v1");
    const lines = serviceLogLines(t.core, { project: slug, environment: "production", service: "web" });
    const migrate = lines.findIndex((l) => l.line === "migrating in /app");
    const listening = lines.findIndex((l) => l.line.startsWith("listening on "));
    expect(migrate).toBeGreaterThanOrEqual(0);
    expect(migrate).toBeLessThan(listening);
    expect(lines.some((l) => l.line === "announced")).toBe(true);
    const [row] = await expectStatus<any[]>(await req("GET", "/deployments"), 200);
    expect(row).toMatchObject({ state: "healthy", commit });
    expect(row.state_text).toContain("post-deploy step announce ran");
  }, 60_000);

  test("a failing pre-deploy step fails the rollout and the previous version keeps answering", async () => {
    const commit = await commitFiles(t, `${slug}/app`, { "ops.toml": opsToml('"broken"') });
    const digest = await pushApp(t, slug, "web", { version: "v2", commit });
    await expectStatus(await req("POST", "/resources/service/web/deploy", { digest }), 201);
    await t.core.scheduler.runDue();
    const [row] = await expectStatus<any[]>(await req("GET", "/deployments"), 200);
    expect(row).toMatchObject({ state: "failed", failure_kind: "deploy" });
    expect(row.state_text).toBe("Failed: release step broken exited with code 4: migration 7 failed");
    expect(await (await viaIngress(base, defaultHostOf(slug, "web"), "/version")).text()).toBe("v1");
  }, 60_000);
});
