/**
 * ops's own host never routes to an app, checked again at every start (DESIGN §6; issue 32, item
 * 15): a domain claimed `ops.example.org` while OPS_PUBLIC_URL was another host, and a real
 * replica answered there through the ingress; ops then starts with OPS_PUBLIC_URL on that host.
 * From that start the ingress no longer sends the host to the app (the domain's other host still
 * routes), and the domain's status is an error naming the host and why, over the API and in the
 * log. A domain row holding `localhost` or an IP address (written by an earlier release, or by
 * hand) is treated alike.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { eq } from "drizzle-orm";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken } from "./fixtures";
import { listenIngress, pushApp, viaIngress } from "./deploy-fixtures";
import { resourcesModule } from "../src/domains/resources";
import { deploymentsModule } from "../src/domains/deployments";
import { resources, domainHosts } from "../src/domains/resources/tables";

const dataDir = tempDir("ops-public-host-");
let t: TestApp;
let base: string;
let slug: string;
let token: string;

const req = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/${slug}${p}`, { token, body });
const version = async (host: string) => {
  const r = await viaIngress(base, host, "/version");
  return { host, status: r.status, body: await r.text() };
};

/** ops on `dataDir` with OPS_PUBLIC_URL `publicUrl`, started as `ops serve` starts it (resources, then deployments). */
async function boot(publicUrl: string): Promise<void> {
  t = await createTestApp({ dataDir, env: { OPS_PUBLIC_URL: publicUrl, OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5", OPS_SHUTDOWN_GRACE_MS: "2000" } });
  base = listenIngress(t);
  await resourcesModule.onServe!(t.core);
  await deploymentsModule.onServe!(t.core);
  await t.core.scheduler.runDue();
}

beforeAll(async () => {
  await boot("http://old.example.org");
  slug = makeProject(t).slug;
  const owner = await makePerson(t, [{ role: "maintainer", project: slug }]);
  token = mintToken(t, owner.principal, { role: "maintainer", project: slug });
  const v1 = await pushApp(t, slug, "web", { version: "v1" });
  await expectStatus(await req("POST", "/resources/service", { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz" } }), 201);
  await expectStatus(await req("POST", "/resources/service/web/deploy", { digest: v1 }), 201);
  await t.core.scheduler.runDue();
  await expectStatus(await req("POST", "/resources/domain", { name: "site", spec: { hosts: ["ops.example.org", "shop.example.org"], service: "web" } }), 201);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe("ops's own host at start", () => {
  test("claimed while OPS_PUBLIC_URL was elsewhere, it is not routed to the app once ops starts on it; the domain says why", async () => {
    expect(await version("ops.example.org")).toEqual({ host: "ops.example.org", status: 200, body: "v1" });
    await t.close();
    await boot("https://ops.example.org");
    expect(await version("shop.example.org")).toEqual({ host: "shop.example.org", status: 200, body: "v1" });
    const console = await version("ops.example.org");
    expect(console.status).toBe(404);
    expect(console.body).not.toContain("v1");
    const got = await expectStatus(await req("GET", "/resources/domain/site"), 200);
    expect(got.status.state).toBe("error");
    expect(got.status.summary).toContain("not routed: ops.example.org: would answer on the console's host ops.example.org (OPS_PUBLIC_URL)");
    expect(got.status.detail.not_routed).toEqual(["ops.example.org: would answer on the console's host ops.example.org (OPS_PUBLIC_URL)"]);
    expect(t.logs.some((l) => l.includes("a domain's host is not routed") && l.includes("ops.example.org"))).toBe(true);
    // Writing the domain again with that host is refused; without it, the domain is fine again.
    await expectStatus(await req("PUT", "/resources/domain/site", { spec: { hosts: ["ops.example.org", "shop.example.org"], service: "web" } }), 422);
    await expectStatus(await req("PUT", "/resources/domain/site", { spec: { hosts: ["shop.example.org"], service: "web" } }), 200);
    const fixed = await expectStatus(await req("POST", "/resources/domain/site/observe"), 200);
    expect(fixed.status.state).not.toBe("error");
    expect(fixed.status.detail.not_routed).toBeUndefined();
  }, 60_000);

  test("a domain row holding localhost or an IP address is not routed at the next start either", async () => {
    const row = t.core.db.select().from(resources).where(eq(resources.name, "site")).get()!;
    const hosts = ["localhost", "10.0.0.1", "shop.example.org"];
    t.core.db.update(resources).set({ spec: JSON.stringify({ hosts, service: "web" }) }).where(eq(resources.id, row.id)).run();
    for (const host of hosts.slice(0, 2)) t.core.db.insert(domainHosts).values({ host, resourceId: row.id }).run();
    await t.close();
    await boot("https://ops.example.org");
    expect(await version("shop.example.org")).toEqual({ host: "shop.example.org", status: 200, body: "v1" });
    for (const host of ["localhost", "10.0.0.1"]) expect((await version(host)).body).not.toContain("v1");
    const got = await expectStatus(await req("GET", "/resources/domain/site"), 200);
    expect(got.status.state).toBe("error");
    expect(got.status.detail.not_routed).toEqual(["localhost: is localhost, where the console and every app would share cookies", "10.0.0.1: is an IP address; a domain is a host name"]);
  }, 60_000);
});
