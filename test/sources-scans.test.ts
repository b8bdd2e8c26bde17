/**
 * Scans through the API: a repository with a multi-stage Dockerfile is scanned inline (200); one
 * with an ops.toml is queued (202), evaluated on the scheduler and reconciled into the project's
 * resources as the caller — created, updated, refused with a reason, undeclared left alone — with
 * `declared` on the source and audit rows in the caller's name.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, makeRole, type Person } from "./fixtures";
import { commitFiles } from "./sources-fixtures";

// Real git processes and servers on a shared machine: bun's preload timeout only reaches the first file.
setDefaultTimeout(120_000);

let t: TestApp;
let slug: string;
let dev: Person;

const S = (p = "") => `/api/v1/projects/${slug}/sources${p}`;
const R = (p: string) => `/api/v1/projects/${slug}/resources${p}`;

const DOCKERFILE = `ARG NODE_VERSION=22
FROM node:\${NODE_VERSION} AS deps
RUN npm ci
FROM deps AS migrate
CMD ["npm", "run", "migrate"]
FROM node:\${NODE_VERSION}-slim
ARG PORT=3000
EXPOSE \${PORT}
HEALTHCHECK CMD curl -f http://localhost:\${PORT}/healthz || exit 1
`;

const OPS_TOML = `[services.web]
build = ["npm ci", "npm run build"]
start = "node server.js"
port = 3000
health = "/healthz"

[steps.migrate]
service = "web"
command = "node migrate.js"

[hooks]
pre-deploy = ["migrate"]

[domains]
production = ["shop.example.com"]

[operational.production.web]
replicas = 2
limits = { memory_mb = 256 }
env_group = "web-env"
`;

beforeAll(async () => {
  t = await createTestApp();
  slug = makeProject(t).slug;
  dev = await makePerson(t, [{ role: "developer", project: slug }]);
});
afterAll(() => t.close());

describe("inline scan of build files", () => {
  test("a multi-stage Dockerfile and a Containerfile in a subdirectory: 200 with the detected services", async () => {
    await expectStatus(await t.request("POST", S(), { token: dev.session, body: { repo: `${slug}/shop` } }), 201);
    await commitFiles(t, `${slug}/shop`, { Dockerfile: DOCKERFILE, "worker/Containerfile": "FROM python:3.12\nEXPOSE 9000\n", "node_modules/x/Dockerfile": "FROM scratch\n" });
    const found = await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: `${slug}/shop` } }), 200);
    expect(found).toEqual([
      { name: "shop", context: ".", dockerfile: "Dockerfile", kind: "service", port: 3000, healthcheck: "/healthz", target: null, args: { NODE_VERSION: "22", PORT: "3000" } },
      { name: "shop-migrate", context: ".", dockerfile: "Dockerfile", kind: "release", port: null, healthcheck: null, target: "migrate", args: { NODE_VERSION: "22" } },
      { name: "worker", context: "worker", dockerfile: "worker/Containerfile", kind: "service", port: 9000, healthcheck: null, target: null, args: {} },
    ]);
    await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: `${slug}/shop`, ref: "nope" } }), 404);
    await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: "not-a-repo" } }), 422);
    await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: "another-project/x" } }), 409);
    await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: `${slug}/missing` } }), 404);
  });
});

describe("ops.toml scans reconcile", () => {
  test("queued, evaluated and reconciled as the caller; undeclared rows are left alone", async () => {
    const owner = await makePerson(t, [{ role: "owner", project: slug }]);
    const src = await expectStatus(await t.request("POST", S(), { token: dev.session, body: { repo: `${slug}/app` } }), 201);
    await commitFiles(t, `${slug}/app`, { "ops.toml": OPS_TOML, "server.js": "// app\n" });
    // What exists before: the env group the file names, a staging web that runs an image, and a
    // service that builds from this repository but that the file does not declare.
    await expectStatus(await t.request("POST", R("/secret-group"), { token: owner.session, body: { name: "web-env", spec: { variables: [] } } }), 201);
    await expectStatus(await t.request("POST", R("/service?environment=staging"), { token: owner.session, body: { name: "web", spec: { image: "nginx:1.27" } } }), 201);
    await expectStatus(await t.request("POST", R("/service"), { token: owner.session, body: { name: "legacy", spec: { source: { repo: `${slug}/app` } } } }), 201);

    const queued = await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: `${slug}/app` } }), 202);
    expect(queued.status).toBe("queued");
    expect((await expectStatus(await t.request("GET", S(`/scans/${queued.scan_id}`), { token: dev.session }), 200)).status).toBe("queued");
    await t.core.scheduler.runDue();
    const scan = await expectStatus(await t.request("GET", S(`/scans/${queued.scan_id}`), { token: dev.session }), 200);
    expect(scan.status).toBe("succeeded");
    expect(scan.git_ref).toBe("main");
    expect(scan.services).toEqual([{ name: "web", context: ".", dockerfile: "", kind: "service", port: 3000, healthcheck: "/healthz", target: null }]);
    expect(scan.steps).toEqual([{ name: "migrate", spec: { service: "web", command: "node migrate.js" } }]);
    expect(scan.hooks).toEqual({ "pre-deploy": ["migrate"] });
    expect(scan.reconciled).toEqual({
      created: [
        { kind: "service", name: "web", environment: "production", reason: null },
        { kind: "domain", name: "web", environment: "production", reason: null },
        { kind: "step", name: "migrate", environment: null, reason: null },
      ],
      updated: [],
      refused: [{ kind: "service", name: "web", environment: "staging", reason: "runs the image nginx:1.27; ops.toml does not turn it into a build from " + `${slug}/app` }],
      undeclared: [{ kind: "service", name: "legacy", environment: "production", reason: null }],
    });

    const web = await expectStatus(await t.request("GET", R("/service/web"), { token: dev.session }), 200);
    expect(web.spec).toEqual({ source: { repo: `${slug}/app` }, port: 3000, health_check_path: "/healthz", replicas: 2, limits: { memory_mb: 256 }, env_group: "web-env" });
    expect(web.updated_by).toBe(dev.email);
    const domain = await expectStatus(await t.request("GET", R("/domain/web"), { token: dev.session }), 200);
    expect(domain.spec).toEqual({ hosts: ["shop.example.com"], service: "web" });
    await expectStatus(await t.request("GET", R("/service/legacy"), { token: dev.session }), 200);
    const audit = t.core.sqlite.query("SELECT actor, context FROM audit_log WHERE action = 'resources.write' AND target = 'resource:service/web' AND environment = 'production' AND outcome = 'allowed'").all() as Array<{ actor: string; context: string }>;
    expect(audit).toHaveLength(1);
    expect(audit[0]!.actor).toBe(dev.email);
    expect(JSON.parse(audit[0]!.context).scan).toBe(queued.scan_id);

    const listed = (await expectStatus(await t.request("GET", S(), { token: dev.session }), 200)).find((s: { id: string }) => s.id === src.id);
    expect(listed.declared).toEqual({ domains: { production: ["shop.example.com"] }, hooks: { "pre-deploy": ["migrate"] }, operational: { production: { web: ["replicas", "limits", "env_group"] } }, services: ["web"], steps: ["migrate"] });
    expect(listed.services).toEqual(["legacy", "web"]);

    // Scanning again changes nothing; a changed file updates what changed.
    const again = await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: `${slug}/app` } }), 202);
    await t.core.scheduler.runDue();
    const second = await expectStatus(await t.request("GET", S(`/scans/${again.scan_id}`), { token: dev.session }), 200);
    expect(second.reconciled.created).toEqual([]);
    expect(second.reconciled.updated).toEqual([]);
    await commitFiles(t, `${slug}/app`, { "ops.toml": OPS_TOML.replace("replicas = 2", "replicas = 3").replace('command = "node migrate.js"', 'command = "node db.js"') });
    const third = await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: `${slug}/app` } }), 202);
    await t.core.scheduler.runDue();
    const changed = await expectStatus(await t.request("GET", S(`/scans/${third.scan_id}`), { token: dev.session }), 200);
    expect(changed.reconciled.updated).toEqual([
      { kind: "service", name: "web", environment: "production", reason: null },
      { kind: "step", name: "migrate", environment: null, reason: null },
    ]);
    expect((await expectStatus(await t.request("GET", R("/service/web"), { token: dev.session }), 200)).spec.replicas).toBe(3);

    // The disconnect is refused while services build from the repository.
    const refused = await expectStatus(await t.request("DELETE", S(`/${src.id}`), { token: dev.session }), 409);
    expect(refused.details.services).toEqual(["legacy", "web"]);
  });

  test("a caller without resources.write gets every write refused with the reason", async () => {
    const role = makeRole(t, slug, "repo-keeper", ["project.read", "sources.read", "sources.write"]);
    const keeper = await makePerson(t, [{ role, project: slug }]);
    await expectStatus(await t.request("POST", S(), { token: dev.session, body: { repo: `${slug}/other` } }), 201);
    await commitFiles(t, `${slug}/other`, { "ops.toml": '[services.api]\nstart = "node api.js"\n' });
    const queued = await expectStatus(await t.request("POST", S("/scan"), { token: keeper.session, body: { repo: `${slug}/other` } }), 202);
    await t.core.scheduler.runDue();
    const scan = await expectStatus(await t.request("GET", S(`/scans/${queued.scan_id}`), { token: keeper.session }), 200);
    expect(scan.reconciled.created).toEqual([]);
    expect(scan.reconciled.refused.map((r: { environment: string; reason: string }) => [r.environment, r.reason])).toEqual([
      ["production", `${keeper.email} lacked resources.write in production when the scan was asked for`],
      ["staging", `${keeper.email} lacked resources.write in staging when the scan was asked for`],
    ]);
    await expectStatus(await t.request("GET", R("/service/api"), { token: dev.session }), 404);
  });

  test("an ops.toml with an unknown key fails the scan with an error naming the key", async () => {
    await expectStatus(await t.request("POST", S(), { token: dev.session, body: { repo: `${slug}/typo` } }), 201);
    await commitFiles(t, `${slug}/typo`, { "ops.toml": '[services.web]\nstart = "x"\nbulid = ["npm ci"]\n' });
    const queued = await expectStatus(await t.request("POST", S("/scan"), { token: dev.session, body: { repo: `${slug}/typo` } }), 202);
    await t.core.scheduler.runDue();
    const scan = await expectStatus(await t.request("GET", S(`/scans/${queued.scan_id}`), { token: dev.session }), 200);
    expect(scan.status).toBe("failed");
    expect(scan.error).toContain("services.web.bulid");
    expect(scan.reconciled).toBeNull();
    await expectStatus(await t.request("GET", R("/service/web?environment=staging"), { token: dev.session }), 200);
  });
});
