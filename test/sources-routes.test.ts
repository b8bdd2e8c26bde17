/**
 * Every route of the Code host App and Sources sections answers each status the spec lists (and
 * the 503 on every route when the chosen host is not configured), and is in OpenAPI with
 * the spec's schema names and those statuses. Flows are tested in sources-studio, sources-scans
 * and sources-git; this file walks the status table.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { eq } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { commitFiles } from "./sources-fixtures";
import { sources } from "../src/domains/sources/tables";

// Real git processes and servers on a shared machine: bun's preload timeout only reaches the first file.
setDefaultTimeout(120_000);

let t: TestApp;
let slug: string;
let owner: Person;
let sourceId: string;
let readme: string;
const S = (p = "") => `/api/v1/projects/${slug}/sources${p}`;
const call = (method: string, p: string, body?: unknown) => t.request(method, p, { token: owner.session, body });

beforeAll(async () => {
  t = await createTestApp();
  slug = makeProject(t).slug;
  owner = await makePerson(t, [{ role: "owner", project: slug }]);
  sourceId = (await expectStatus(await call("POST", S(), { repo: `${slug}/routes` }), 201)).id;
  await commitFiles(t, `${slug}/routes`, { "README.md": "# r\n", Dockerfile: "FROM alpine\n" });
  readme = (await expectStatus(await call("GET", S(`/${sourceId}/file?path=README.md`)), 200)).sha;
});
afterAll(() => t.close());

describe("Code host App", () => {
  test("GET /host/app: 200", async () => {
    const app = await expectStatus(await call("GET", "/api/v1/host/app"), 200);
    expect(app).toEqual({ slug: "ops", html_url: `${t.url}/git`, install_url: `${t.url}/git/installations/new`, installations: 1 });
  });
  test("GET /host/repos: 200 with the project's repositories", async () => {
    const repos = await expectStatus(await call("GET", "/api/v1/host/repos"), 200);
    expect(repos).toContainEqual({ full_name: `${slug}/routes`, default_branch: "main", private: true });
  });
});

describe("Sources", () => {
  test("GET /sources: 200; 404 unknown project", async () => {
    const list = await expectStatus(await call("GET", S()), 200);
    expect(list[0]).toMatchObject({ id: sourceId, repo: `${slug}/routes`, default_branch: "main", declared: null, services: [] });
    await expectStatus(await call("GET", "/api/v1/projects/no-such-project/sources"), 404);
  });

  test("POST /sources: 201; 404; 409 connected, archived or not installed; 422 not owner/repo", async () => {
    const created = await expectStatus(await call("POST", S(), { repo: `${slug}/second` }), 201);
    expect(created).toMatchObject({ repo: `${slug}/second`, default_branch: "main", last_event_at: null, installation_id: expect.any(Number) });
    await expectStatus(await call("POST", "/api/v1/projects/no-such-project/sources", { repo: "x/y" }), 404);
    expect((await expectStatus(await call("POST", S(), { repo: `${slug}/second` }), 409)).error).toBe("already_exists");
    await expectStatus(await call("POST", S(), { repo: "somebody-else/repo" }), 409);
    await expectStatus(await call("POST", S(), { repo: `${slug}/third`, installation_id: 987654 }), 409);
    await expectStatus(await call("POST", S(), { repo: "no slash" }), 422);
    await expectStatus(await call("POST", S(), { repo: `${slug}/..` }), 422);
    const archived = makeProject(t).slug;
    const o = await makePerson(t, [{ role: "owner", project: archived }]);
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${archived}`, { token: o.session, body: { archived: true } }), 200);
    expect((await expectStatus(await t.request("POST", `/api/v1/projects/${archived}/sources`, { token: o.session, body: { repo: `${archived}/x` } }), 409)).error).toBe("archived");
  });

  test("GET /sources/saves/{id}: 200; 404", async () => {
    const q = await expectStatus(await call("POST", S(`/${sourceId}/saves`), { message: "m", changes: [{ path: "a.txt", text: "a" }] }), 202);
    expect((await expectStatus(await call("GET", S(`/saves/${q.save_id}`)), 200)).status).toBe("queued");
    await expectStatus(await call("GET", S("/saves/999999")), 404);
  });

  test("POST /sources/saves/{id}/merge: 200; 404; 409 not open and host refusal", async () => {
    const one = await expectStatus(await call("POST", S(`/${sourceId}/saves`), { message: "one", changes: [{ path: "README.md", text: "# 1\n", base_sha: readme }] }), 202);
    const two = await expectStatus(await call("POST", S(`/${sourceId}/saves`), { message: "two", changes: [{ path: "README.md", text: "# 2\n", base_sha: readme }] }), 202);
    await expectStatus(await call("POST", S(`/saves/${one.save_id}/merge`)), 409); // still queued
    await t.core.scheduler.runDue();
    expect((await expectStatus(await call("POST", S(`/saves/${one.save_id}/merge`)), 200)).status).toBe("merged");
    expect((await expectStatus(await call("POST", S(`/saves/${two.save_id}/merge`)), 409)).details.conflicts).toEqual(["README.md"]);
    await expectStatus(await call("POST", S("/saves/999999/merge")), 404);
  });

  test("POST /sources/scan: 200; 202; 404; 409; 422", async () => {
    expect((await expectStatus(await call("POST", S("/scan"), { repo: `${slug}/routes` }), 200))[0].name).toBe("routes");
    await commitFiles(t, `${slug}/routes`, { "ops.toml": '[services.routes]\nstart = "x"\n' }, { branch: "declared" });
    expect(await expectStatus(await call("POST", S("/scan"), { repo: `${slug}/routes`, ref: "declared" }), 202)).toEqual({ scan_id: expect.any(Number), status: "queued" });
    await expectStatus(await call("POST", S("/scan"), { repo: `${slug}/nothing-here` }), 404);
    await expectStatus(await call("POST", S("/scan"), { repo: "elsewhere/repo" }), 409);
    await expectStatus(await call("POST", S("/scan"), { repo: "bad" }), 422);
  });

  test("GET /sources/scans/{id}: 200; 404", async () => {
    const q = await expectStatus(await call("POST", S("/scan"), { repo: `${slug}/routes`, ref: "declared" }), 202);
    expect((await expectStatus(await call("GET", S(`/scans/${q.scan_id}`)), 200)).id).toBe(q.scan_id);
    await expectStatus(await call("GET", S("/scans/999999")), 404);
  });

  test("DELETE /sources/{id}: 204; 404; 409 while a service builds from the repository", async () => {
    const doomed = await expectStatus(await call("POST", S(), { repo: `${slug}/doomed` }), 201);
    await expectStatus(await call("POST", `/api/v1/projects/${slug}/resources/service`, { name: "builds-doomed", spec: { source: { repo: `${slug}/doomed` } } }), 201);
    const refused = await expectStatus(await call("DELETE", S(`/${doomed.id}`)), 409);
    expect(refused.message).toContain("builds-doomed");
    await expectStatus(await call("DELETE", `/api/v1/projects/${slug}/resources/service/builds-doomed`), 204);
    await expectStatus(await call("DELETE", S(`/${doomed.id}`)), 204);
    await expectStatus(await call("DELETE", S(`/${doomed.id}`)), 404);
    const audit = t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE action = 'sources.write' AND target = ? AND outcome = 'allowed'").get(`source:${slug}/doomed`) as { n: number };
    expect(audit.n).toBe(2);
  });

  test("GET /sources/{id}/file: 200; 404; 409 not installed; 413; 422", async () => {
    expect((await expectStatus(await call("GET", S(`/${sourceId}/file?path=Dockerfile`)), 200)).text).toBe("FROM alpine\n");
    await expectStatus(await call("GET", S(`/${sourceId}/file?path=Dockerfile&ref=nope`)), 404);
    await commitFiles(t, `${slug}/routes`, { "large.txt": "z".repeat(1024 * 1024 + 10) }, { branch: "large" });
    await expectStatus(await call("GET", S(`/${sourceId}/file?path=large.txt&ref=large`)), 413);
    await expectStatus(await call("GET", S(`/${sourceId}/file?path=/etc/passwd`)), 422);
    await expectStatus(await call("GET", S(`/${sourceId}/file`)), 422);
  });

  test("GET and POST /sources/{id}/saves, GET /sources/{id}/tree: 200/202; 404; 409; 413; 422", async () => {
    expect(Array.isArray(await expectStatus(await call("GET", S(`/${sourceId}/saves`)), 200))).toBe(true);
    await expectStatus(await call("GET", S("/00000000-0000-7000-8000-000000000000/saves")), 404);
    await expectStatus(await call("GET", S("/not-a-uuid/tree")), 404);
    expect((await expectStatus(await call("GET", S(`/${sourceId}/tree`)), 200)).default_branch).toBe("main");
    await expectStatus(await call("GET", S(`/${sourceId}/tree?ref=nope`)), 404);
    await expectStatus(await call("POST", S(`/${sourceId}/saves`), { message: "", changes: [{ path: "a", text: "a" }] }), 422);
    await expectStatus(await call("POST", S(`/${sourceId}/saves`), { changes: [] }), 422);
    const tooBig = await t.request("POST", S(`/${sourceId}/saves`), { token: owner.session, raw: JSON.stringify({ message: "m", changes: [{ path: "a", text: "x".repeat(25 * 1024 * 1024) }] }), headers: { "content-type": "application/json" } });
    await expectStatus(tooBig, 413);
  });

  test("409 when the source is not installed (installation 0) on file, tree, saves and merge", async () => {
    const lone = await expectStatus(await call("POST", S(), { repo: `${slug}/lone` }), 201);
    await commitFiles(t, `${slug}/lone`, { "a.txt": "a" });
    t.core.db.update(sources).set({ installationId: 0 }).where(eq(sources.id, lone.id)).run();
    await expectStatus(await call("GET", S(`/${lone.id}/tree`)), 409);
    await expectStatus(await call("GET", S(`/${lone.id}/file?path=a.txt`)), 409);
    await expectStatus(await call("POST", S(`/${lone.id}/saves`), { message: "m", changes: [{ path: "b.txt", text: "b" }] }), 409);
  });
});

describe("503 on every /host and /sources route that reaches the host when the chosen host is not configured", () => {
  test("OPS_CODE_HOST=github without App settings", async () => {
    const gh = await createTestApp({ env: { OPS_CODE_HOST: "github" } });
    try {
      const p = makeProject(gh).slug;
      const o = await makePerson(gh, [{ role: "owner", project: p }]);
      const base = `/api/v1/projects/${p}/sources`;
      const id = "00000000-0000-7000-8000-000000000000";
      const cases: Array<[string, string, unknown?]> = [
        ["GET", "/api/v1/host/app"],
        ["GET", "/api/v1/host/repos"],
        ["POST", base, { repo: "o/r" }],
        ["POST", `${base}/saves/1/merge`],
        ["POST", `${base}/scan`, { repo: "o/r" }],
        ["GET", `${base}/${id}/file?path=a`],
        ["POST", `${base}/${id}/saves`, { message: "m", changes: [{ path: "a", text: "a" }] }],
        ["GET", `${base}/${id}/tree`],
      ];
      for (const [method, p2, body] of cases) {
        const res = await expectStatus(await gh.request(method, p2, { token: o.session, body }), 503);
        expect(res.error).toBe("unavailable");
      }
      // Routes that read or drop ops's own rows answer without the host (sources-no-host.test.ts).
      expect(await expectStatus(await gh.request("GET", base, { token: o.session }), 200)).toEqual([]);
      for (const p2 of [`${base}/saves/1`, `${base}/scans/1`, `${base}/${id}/saves`]) await expectStatus(await gh.request("GET", p2, { token: o.session }), 404);
      await expectStatus(await gh.request("DELETE", `${base}/${id}`, { token: o.session }), 404);
      // The built-in host's git routes are not served with another host.
      expect((await fetch(`${gh.url}/git/${p}/x.git/info/refs?service=git-upload-pack`)).status).toBe(404);
    } finally {
      await gh.close();
    }
  });
});

describe("OpenAPI", () => {
  const SPEC: Array<[string, string, number[], string?, string?]> = [
    ["get", "/api/v1/host/app", [200, 401, 403, 503], undefined, "HostAppResponse"],
    ["get", "/api/v1/host/repos", [200, 401, 403, 503], undefined, "Repo"],
    ["get", "/api/v1/projects/{slug}/sources", [200, 401, 403, 404], undefined, "SourceResponse"],
    ["post", "/api/v1/projects/{slug}/sources", [201, 401, 403, 404, 409, 422, 503], "CreateSourceRequest", "SourceResponse"],
    ["get", "/api/v1/projects/{slug}/sources/saves/{id}", [200, 401, 403, 404], undefined, "SaveResponse"],
    ["post", "/api/v1/projects/{slug}/sources/saves/{id}/merge", [200, 401, 403, 404, 409, 503], undefined, "SaveResponse"],
    ["post", "/api/v1/projects/{slug}/sources/scan", [200, 202, 401, 403, 404, 409, 422, 503], "ScanSourceRequest", "DetectedService"],
    ["get", "/api/v1/projects/{slug}/sources/scans/{id}", [200, 401, 403, 404], undefined, "ScanResponse"],
    ["delete", "/api/v1/projects/{slug}/sources/{id}", [204, 401, 403, 404, 409]],
    ["get", "/api/v1/projects/{slug}/sources/{id}/file", [200, 401, 403, 404, 409, 413, 422, 503], undefined, "StudioFileResponse"],
    ["get", "/api/v1/projects/{slug}/sources/{id}/saves", [200, 401, 403, 404], undefined, "SaveResponse"],
    ["post", "/api/v1/projects/{slug}/sources/{id}/saves", [202, 401, 403, 404, 409, 422, 503], "CreateSaveRequest", "SaveQueuedResponse"],
    ["get", "/api/v1/projects/{slug}/sources/{id}/tree", [200, 401, 403, 404, 409, 503], undefined, "StudioTree"],
  ];
  let doc: any;
  beforeAll(async () => {
    doc = await (await fetch(`${t.url}/api/docs/json`)).json();
  });
  for (const [method, p, statuses, body, ok] of SPEC) {
    test(`${method.toUpperCase()} ${p}: ${statuses.join(", ")}`, () => {
      const op = doc.paths[p]?.[method];
      expect(op).toBeDefined();
      expect(op["x-permission"]).toMatch(/^sources\./);
      for (const s of statuses) expect(Object.keys(op.responses)).toContain(String(s));
      if (body) expect(JSON.stringify(op.requestBody?.content["application/json"]?.schema)).toContain(`#/components/schemas/${body}`);
      if (ok) expect(JSON.stringify(op.responses[String(statuses[0])].content)).toContain(`#/components/schemas/${ok}`);
      for (const s of statuses.filter((s) => s >= 400)) expect(JSON.stringify(op.responses[String(s)].content)).toContain("snake_case error code");
    });
  }
  test("the git routes are documented as the git protocol", () => {
    expect(doc.paths["/git/{slug}/{repo}/info/refs"].get["x-protocol"]).toBe("git");
    expect(doc.paths["/git/{slug}/{repo}/git-receive-pack"].post["x-permission"]).toBe("sources.save");
    expect(doc.paths["/git/{slug}/{repo}/git-upload-pack"].post["x-permission"]).toBe("sources.read");
  });
});
