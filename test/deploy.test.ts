/**
 * Deployments by digest, against a real app: signed images of a Node HTTP app (the builds
 * domain's image writer, pushed in-process and signed with the estate key), rolled out as
 * sandboxed replicas behind the ingress.
 *
 * One service goes through a life: deploy v1 (201, healthy, answers through the ingress, the
 * timeline and a `deployment.rolled` notice say so), deploy v2 while requests run (zero failures
 * across the switch; a second deploy and a rollback during the rollout are 409), v3 whose health
 * check fails (unhealthy → rolled back with `failure_kind: health`, v2 keeps answering, a
 * `deployment.auto_rollback` notice), the default rollback (to v1), an unsigned image pushed by
 * real skopeo (422, recorded `refused` with a notice). The status codes of the routes are checked
 * beside it.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { and, desc, eq } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject } from "./fixtures";
import { defaultHostOf, listenIngress, pushApp, viaIngress } from "./deploy-fixtures";
import { skopeoPush, writeTestImage } from "./runtime-fixtures";
import { registryCast, type RegistryCast } from "./support/registries";
import { auditLog } from "../src/core/tables";
import { notices } from "../src/domains/notifications/tables";

let t: TestApp;
let cast: RegistryCast;
let slug: string;
let base: string;
const digests: Record<string, string> = {};
let token: string;

const P = () => `/api/v1/projects/${slug}`;
const req = (method: string, p: string, body?: unknown, who = token) => t.request(method, `${P()}${p}`, { token: who, body });
const host = () => defaultHostOf(slug, "web");
const version = async () => (await viaIngress(base, host(), "/version")).text();
const timeline = async (q = "") => expectStatus<any[]>(await req("GET", `/deployments${q}`), 200);
const noticesOf = (kind: string) => t.core.db.select().from(notices).where(and(eq(notices.project, slug), eq(notices.kind, kind))).all();

async function settle(): Promise<void> {
  await t.core.scheduler.runDue();
}

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5", OPS_SHUTDOWN_GRACE_MS: "2000" } });
  cast = await registryCast(t);
  slug = cast.project.slug;
  token = cast.publisher.session;
  base = listenIngress(t);
  for (const v of ["v1", "v2"]) digests[v] = await pushApp(t, slug, "web", { version: v });
  digests.v3 = await pushApp(t, slug, "web", { version: "v3", health: "fail" });
  await expectStatus(await req("POST", "/resources/service", { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz" } }), 201);
}, 120_000);

afterAll(async () => {
  await t.close();
});

describe("deploy by digest", () => {
  test("201: v1 rolls out, becomes healthy and answers through the ingress on its default host", async () => {
    const d = await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: digests.v1 }), 201);
    expect(d).toMatchObject({ project: slug, environment: "production", service: "web", image_digest: digests.v1, rollout: "queued", trigger: "manual", previous_digest: null, created_by: cast.publisher.email, author: cast.publisher.email, build_id: null });
    expect(d.commit_sha).toMatch(/^c0ffee/);
    await settle();
    expect(await version()).toBe("v1");
    const [row] = await timeline();
    expect(row).toMatchObject({ state: "healthy", service: "web", failure_kind: null, build: null, commit: d.commit_sha, deployment: { id: d.id, rollout: "healthy", image_digest: digests.v1 } });
    expect(row.state_text).toStartWith("Healthy: 1 replica of sha256:");
    expect(noticesOf("deployment.rolled").length).toBeGreaterThan(0);
    const audit = t.core.db.select().from(auditLog).where(eq(auditLog.action, "deployments.deploy")).orderBy(desc(auditLog.id)).get()!;
    expect(audit).toMatchObject({ actor: cast.publisher.email, outcome: "allowed", target: "service:web", project: slug, environment: "production" });
    const svc = await expectStatus(await req("GET", "/resources/service/web"), 200);
    expect(svc.status.state).toBe("ready");
    expect(svc.status.detail).toMatchObject({ digest: digests.v1, replicas_wanted: 1, health: "up" });
  }, 60_000);

  test("v2 switches with zero failed requests under a request loop; a deploy or rollback during the rollout is 409", async () => {
    const d = await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: digests.v2 }), 201);
    const again = await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: digests.v1 }), 409);
    expect(again.message).toContain(`Deployment ${d.id}`);
    await expectStatus(await req("POST", "/resources/service/web/rollback", {}), 409);
    let stop = false;
    const seen: Record<string, number> = {};
    const failures: string[] = [];
    const loop = (async () => {
      while (!stop) {
        try {
          const res = await viaIngress(base, host(), "/version");
          const body = await res.text();
          if (res.status !== 200) failures.push(`${res.status} ${body.slice(0, 80)}`);
          else seen[body] = (seen[body] ?? 0) + 1;
        } catch (e) {
          failures.push((e as Error).message);
        }
      }
    })();
    await settle();
    await Bun.sleep(200);
    stop = true;
    await loop;
    expect(failures).toEqual([]);
    expect(seen.v1).toBeGreaterThan(0);
    expect(seen.v2).toBeGreaterThan(0);
    expect(await version()).toBe("v2");
    const [row] = await timeline();
    expect(row.deployment).toMatchObject({ id: d.id, rollout: "healthy", previous_digest: digests.v1 });
  }, 60_000);

  test("v3 fails its health check: unhealthy, rolled back with failure_kind health, v2 keeps answering, a notice", async () => {
    const d = await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: digests.v3 }), 201);
    await settle();
    expect(await version()).toBe("v2");
    const [row] = await timeline();
    expect(row).toMatchObject({ state: "rolled_back", failure_kind: "health", deployment: { id: d.id, rollout: "rolled_back" } });
    expect(row.state_text).toContain("/healthz answered HTTP 500");
    expect(row.state_text).toContain("rolled back to sha256:");
    expect(noticesOf("deployment.auto_rollback").length).toBeGreaterThan(0);
  }, 60_000);

  test("rollback: by default to the newest healthy digest that is not current (v1)", async () => {
    const d = await expectStatus(await req("POST", "/resources/service/web/rollback"), 201);
    expect(d).toMatchObject({ trigger: "rollback", image_digest: digests.v1, previous_digest: digests.v2 });
    expect(d.message).toStartWith("Roll back to sha256:");
    await settle();
    expect(await version()).toBe("v1");
    const to = await expectStatus(await req("POST", "/resources/service/web/rollback", { digest: digests.v2 }), 201);
    expect(to.image_digest).toBe(digests.v2);
    await settle();
    expect(await version()).toBe("v2");
  }, 60_000);

  test("422: an image skopeo pushed outside any build (unsigned) is refused and recorded, with a notice", async () => {
    const image = await writeTestImage("rogue");
    await skopeoPush(t, cast, image, "web", "rogue");
    const body = await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: image.manifestDigest }), 422);
    expect(body.error).toBe("refused");
    expect(body.message).toContain("is not signed");
    const [row] = await timeline();
    expect(row).toMatchObject({ state: "refused", failure_kind: "deploy", deployment: { rollout: "refused", image_digest: image.manifestDigest } });
    expect(noticesOf("deployment.refused").length).toBeGreaterThan(0);
    const denied = t.core.db.select().from(auditLog).where(and(eq(auditLog.action, "deployments.deploy"), eq(auditLog.outcome, "denied"))).orderBy(desc(auditLog.id)).get()!;
    expect(denied.reason).toContain("not signed by the ops key");
    const rollback = await expectStatus(await req("POST", "/resources/service/web/rollback", { digest: image.manifestDigest }), 422);
    expect(rollback.error).toBe("refused");
    expect(await version()).toBe("v2");
  }, 120_000);

  test("422: no digest, both, a malformed digest, a digest of another repository; 404 unknown service, environment, project, build", async () => {
    await expectStatus(await req("POST", "/resources/service/web/deploy", {}), 422);
    await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: digests.v1, build_id: 1 }), 422);
    await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: "latest" }), 422);
    await expectStatus(await req("POST", "/resources/service/web/rollback", { digest: "sha256:abc" }), 422);
    const other = await pushApp(t, slug, "api", { version: "v1" });
    await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: other }), 422);
    await expectStatus(await req("POST", "/resources/service/nope/deploy", { digest: digests.v1 }), 404);
    await expectStatus(await t.request("POST", `${P()}/resources/service/web/deploy?environment=qa`, { token, body: { digest: digests.v1 } }), 404);
    await expectStatus(await t.request("POST", `/api/v1/projects/no-such-project/resources/service/web/deploy`, { token, body: { digest: digests.v1 } }), 404);
    await expectStatus(await req("POST", "/resources/service/web/deploy", { build_id: 999 }), 404);
  }, 60_000);

  test("404: nothing to roll back to; 403 for a viewer; 401 without a credential", async () => {
    await expectStatus(await req("POST", "/resources/service", { name: "fresh", spec: { image: `${slug}/fresh` } }), 201);
    const none = await expectStatus(await req("POST", "/resources/service/fresh/rollback", {}), 404);
    expect(none.message).toContain("Nothing to roll back to");
    await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: digests.v1 }, cast.reader.session), 403);
    await expectStatus(await t.request("POST", `${P()}/resources/service/web/deploy`, { body: { digest: digests.v1 } }), 401);
  });

  test("GET /deployments: filters by service and environment, bounds limit, 404 for an unknown environment", async () => {
    const all = await timeline();
    expect(all.every((r) => r.service === "web")).toBe(true);
    expect(all.map((r) => r.state)).toEqual(["refused", "refused", "refused", "healthy", "healthy", "rolled_back", "healthy", "healthy"]);
    expect((await timeline("?limit=2")).length).toBe(2);
    expect(await timeline("?service=fresh")).toEqual([]);
    expect(await timeline("?environment=staging")).toEqual([]);
    await expectStatus(await req("GET", "/deployments?environment=qa"), 404);
    await expectStatus(await req("GET", "/deployments?limit=0"), 422);
    await expectStatus(await req("GET", "/deployments?limit=501"), 422);
    await expectStatus(await req("GET", "/deployments", undefined, cast.outsider.session), 403);
    await expectStatus(await t.request("GET", `${P()}/deployments`), 401);
  });
});

describe("the registry", () => {
  test("409 when OPS_REGISTRY names an external registry", async () => {
    const ext = await createTestApp({ env: { OPS_REGISTRY: "registry.example.com" } });
    try {
      const project = makeProject(ext);
      const owner = await makePerson(ext, [{ role: "owner", project: project.slug }]);
      await expectStatus(await ext.request("POST", `/api/v1/projects/${project.slug}/resources/service`, { token: owner.session, body: { name: "web", spec: { image: "x/web" } } }), 201);
      const body = await expectStatus(await ext.request("POST", `/api/v1/projects/${project.slug}/resources/service/web/deploy`, { token: owner.session, body: { digest: `sha256:${"a".repeat(64)}` } }), 409);
      expect(body.message).toContain("registry is not configured");
    } finally {
      await ext.close();
    }
  });
});



describe("OpenAPI", () => {
  test("the three deployments routes: their permission, the spec's schemas and every status they answer", async () => {
    const doc = await expectStatus<any>(await t.request("GET", "/api/docs/json"), 200);
    const SPEC: Array<[string, string, string, number[], string | undefined, string]> = [
      ["get", "/api/v1/projects/{slug}/deployments", "deployments.read", [200, 401, 403, 404, 422], undefined, "TimelineRow"],
      ["post", "/api/v1/projects/{slug}/resources/service/{name}/deploy", "deployments.deploy", [201, 401, 403, 404, 409, 422], "DeployRequest", "DeploymentResponse"],
      ["post", "/api/v1/projects/{slug}/resources/service/{name}/rollback", "deployments.deploy", [201, 401, 403, 404, 409, 422], "RollbackRequest", "DeploymentResponse"],
    ];
    for (const [method, p, permission, statuses, body, ok] of SPEC) {
      const op = doc.paths[p]?.[method];
      expect(op).toBeDefined();
      expect(op["x-permission"]).toBe(permission);
      expect(Object.keys(op.responses).sort()).toEqual(statuses.map(String).sort());
      if (body) expect(JSON.stringify(op.requestBody?.content["application/json"]?.schema)).toContain(`#/components/schemas/${body}`);
      expect(JSON.stringify(op.responses[String(statuses[0])].content?.["application/json"]?.schema)).toContain(`#/components/schemas/${ok}`);
    }
  });
});
