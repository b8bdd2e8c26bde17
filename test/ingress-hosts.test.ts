/**
 * Host names belong to one project (DESIGN §6): `localhost`, IP addresses and the console's host
 * are never a domain's host; the names under `.<project>.localhost` are that project's; a project
 * holding a host holds the names under it, so a claim (exact or wildcard) that meets a host another
 * project holds, or a name under it, is a 409 that does not say whose it is; a scan's reconcile refuses such a `[domains]` entry with the reason; released hosts
 * can be claimed again. Tried as project alpha's developer against project beta.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { reconcile } from "../src/domains/sources/reconcile";
import { parseOpsToml } from "../src/domains/sources/ops-toml";

let t: TestApp;
let alphaDev: Person;
let betaOwner: Person;

const put = (who: Person, project: string, name: string, hosts: string[], environment = "production") =>
  t.request("PUT", `/api/v1/projects/${project}/resources/domain/${name}?environment=${environment}`, { token: who.session, body: { spec: { hosts, service: "web" } } });
const del = (who: Person, project: string, name: string) => t.request("DELETE", `/api/v1/projects/${project}/resources/domain/${name}?environment=production`, { token: who.session });

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_PUBLIC_URL: "https://ops.example.org" } });
  makeProject(t, "alpha");
  makeProject(t, "beta");
  alphaDev = await makePerson(t, [{ role: "developer", project: "alpha" }]);
  betaOwner = await makePerson(t, [{ role: "owner", project: "beta" }]);
  for (const [who, p] of [[alphaDev, "alpha"], [betaOwner, "beta"]] as const) {
    for (const env of ["production", "staging"]) {
      await expectStatus(await t.request("PUT", `/api/v1/projects/${p}/resources/service/web?environment=${env}`, { token: who.session, body: { spec: { image: "example/web:1" } } }), 201);
    }
  }
  await expectStatus(await put(betaOwner, "beta", "shop", ["shop.example.com", "*.eu.example.com"]), 201);
});

afterAll(() => t?.close());

describe("names no domain may have", () => {
  test("localhost, IP addresses, the console's host and a wildcard over it: 422 naming the field", async () => {
    for (const host of ["localhost", "127.0.0.1", "10.0.0.1", "::1", "[::1]", "ops.example.org", "*.example.org"]) {
      const body = await expectStatus(await put(alphaDev, "alpha", "bad", [host]), 422);
      expect([host, body.error]).toEqual([host, "validation_failed"]);
    }
    const body = await expectStatus(await put(alphaDev, "alpha", "bad", ["fine.example.net", "localhost"]), 422);
    expect(body.details.fields[0].path).toBe("spec.hosts.1");
  });
});

describe("default hosts", () => {
  test("another project's .localhost names (exact or wildcard) are taken, without naming it; names of no project are reserved; the project's own are fine", async () => {
    for (const host of ["web.production.beta.localhost", "*.production.beta.localhost", "*.beta.localhost", "new.staging.beta.localhost"]) {
      const body = await expectStatus(await put(alphaDev, "alpha", "grab", [host]), 409);
      expect(body.message).toBe(`Host "${host}" is already taken by another project.`);
      expect(JSON.stringify(body)).not.toContain("beta\"");
    }
    for (const host of ["*.localhost", "x.nobody.localhost"]) await expectStatus(await put(alphaDev, "alpha", "grab", [host]), 422);
    await expectStatus(await put(alphaDev, "alpha", "own", ["shop.production.alpha.localhost"]), 201);
  });
});

describe("domain hosts across projects", () => {
  test("exact and wildcard claims that meet beta's hosts or the names under them are 409; ones that do not are fine", async () => {
    for (const hosts of [["shop.example.com"], ["*.example.com"], ["a.eu.example.com"], ["*.x.eu.example.com"], ["ok.example.net", "*.eu.example.com"], ["x.shop.example.com"], ["*.shop.example.com"], ["eu.example.com"], ["example.com"]]) {
      const body = await expectStatus(await put(alphaDev, "alpha", "grab", hosts), 409);
      expect(body.message).toContain("is already taken by another project");
      expect(body.message).not.toContain("beta");
    }
    // Beside beta's hosts, not above or under them: siblings.
    await expectStatus(await put(alphaDev, "alpha", "mine", ["www.example.com", "shop.example.net", "us.example.com"]), 201);
    // And now beta cannot take those back by a wildcard over them.
    await expectStatus(await put(betaOwner, "beta", "wide", ["*.example.com"]), 409);
    // Within one project, an exact host beside its own wildcard is fine (in another environment too).
    await expectStatus(await put(betaOwner, "beta", "eu-home", ["fr.eu.example.com"], "staging"), 201);
  });

  test("a project owns the names under a host it holds: no wildcard or deeper name of another project covers it, in either order", async () => {
    await expectStatus(await put(betaOwner, "beta", "apex", ["beta.test"]), 201);
    for (const hosts of [["*.beta.test"], ["www.beta.test"], ["*.www.beta.test"], ["a.b.beta.test"]]) {
      const body = await expectStatus(await put(alphaDev, "alpha", "cover", hosts), 409);
      expect([hosts, body.message]).toEqual([hosts, `Host "${hosts[0]}" is already taken by another project.`]);
    }
    // The holder adds names under its apex, and a wildcard over them, whatever another project tried.
    await expectStatus(await put(betaOwner, "beta", "apex", ["beta.test", "www.beta.test", "*.api.beta.test"]), 200);
    // The other way round: alpha's wildcard came first, so the name it covers is alpha's.
    await expectStatus(await put(alphaDev, "alpha", "wide", ["*.gamma.test"]), 201);
    for (const host of ["gamma.test", "x.gamma.test", "*.gamma.test", "*.x.gamma.test"]) await expectStatus(await put(betaOwner, "beta", "gamma", [host]), 409);
    await expectStatus(await put(alphaDev, "alpha", "wide", ["*.gamma.test", "gamma.test"]), 200);
  });

  test("a released host can be claimed by another project", async () => {
    await expectStatus(await put(betaOwner, "beta", "temp", ["released.example.com"]), 201);
    await expectStatus(await put(alphaDev, "alpha", "claim", ["released.example.com"]), 409);
    await expectStatus(await del(betaOwner, "beta", "temp"), 204);
    await expectStatus(await put(alphaDev, "alpha", "claim", ["released.example.com"]), 201);
    await expectStatus(await put(betaOwner, "beta", "temp", ["released.example.com"]), 409);
  });
});

describe("a scan's reconcile", () => {
  test("a [domains] entry another project holds is refused with the reason; the services are still reconciled", async () => {
    const project = t.core.access.findProject("alpha")!;
    const decl = parseOpsToml(`[services.web]\nbuild = []\nstart = "node server.js"\n\n[domains]\nproduction = ["shop.example.com"]\nstaging = ["web.staging.beta.localhost"]\n`);
    const lines: string[] = [];
    const out = await reconcile(
      t.core,
      { project, repo: "alpha/web", decl, gitRef: "main", defaultBranch: true, commitSha: "0".repeat(40), writable: new Set(["production", "staging"]), actor: { actor: alphaDev.email, operatorId: alphaDev.operator.id, via: "console", ip: "" }, sourceId: null },
      (l) => lines.push(l),
    );
    expect(out.refused.filter((r) => r.kind === "domain")).toEqual([
      { kind: "domain", name: "web", environment: "production", reason: 'Host "shop.example.com" is already taken by another project.' },
      { kind: "domain", name: "web", environment: "staging", reason: 'Host "web.staging.beta.localhost" is already taken by another project.' },
    ]);
    expect(lines).toContain('refused: domain web (production): Host "shop.example.com" is already taken by another project.');
  });
});
