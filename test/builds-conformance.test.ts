/**
 * Builds against doc 2's details: POST …/builds and …/retry answer the build as created
 * (`queued`), whether or not a builder takes it at once; a manual build's branch is the request's
 * ref, else the service's branch, else the environment's branch, else the default branch, and a
 * push builds the services that follow the pushed branch by that same order; and a
 * path id that is no id (`0`, `abc`) is an unknown build, save or scan: 404.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makeProject, type Person } from "./fixtures";
import { commitFiles } from "./sources-fixtures";
import type { BuildResponse } from "../src/domains/builds/model";
import { PUSH } from "../src/domains/sources/service";

let t: TestApp;
let owner: Person;
let sourceId: string;
const api = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/bc${p}`, { token: owner.session, body });

beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
  makeProject(t, "bc", ["production", "staging", "qa"]);
  sourceId = (await expectStatus<{ id: string }>(await api("POST", "/sources", { repo: "bc/app" }), 201)).id;
  const toml = '[services.web]\nbuild = ["true"]\nstart = "true"\n';
  await commitFiles(t, "bc/app", { "ops.toml": toml }, { message: "main" });
  await commitFiles(t, "bc/app", { "ops.toml": toml, "STAGING": "1" }, { branch: "staging", message: "staging" });
  await commitFiles(t, "bc/app", { "ops.toml": toml, "FEATURE": "1" }, { branch: "feature", message: "feature" });
  for (const env of ["production", "staging", "qa"]) await expectStatus(await api("POST", `/resources/service?environment=${env}`, { name: "web", spec: { source: { repo: "bc/app" } } }), 201);
  await expectStatus(await api("POST", "/resources/service?environment=qa", { name: "pinned", spec: { source: { repo: "bc/app", branch: "feature" } } }), 201);
});
afterAll(() => t.close());

const build = (environment: string, body: Record<string, unknown>) => api("POST", `/builds?environment=${environment}`, body);

describe("POST …/builds", () => {
  test("answers the build as created: queued, even with a builder free to take it", async () => {
    const b = await expectStatus<BuildResponse>(await build("production", { service: "web" }), 201);
    expect(b.status).toBe("queued");
    expect(b.trigger).toBe("manual");
    const retried = await expectStatus<BuildResponse>(await api("POST", `/builds/${b.id}/retry`), 201);
    expect(retried.status).toBe("queued");
    expect(retried.trigger).toBe("retry");
    expect(retried.commit_sha).toBe(b.commit_sha);
  });

  test("the branch: the request's ref, else the service's branch, else the environment's branch, else the default branch", async () => {
    expect((await expectStatus<BuildResponse>(await build("staging", { service: "web" }), 201)).branch).toBe("staging");
    expect((await expectStatus<BuildResponse>(await build("production", { service: "web" }), 201)).branch).toBe("main");
    expect((await expectStatus<BuildResponse>(await build("qa", { service: "web" }), 201)).branch).toBe("main");
    expect((await expectStatus<BuildResponse>(await build("qa", { service: "pinned" }), 201)).branch).toBe("feature");
    expect((await expectStatus<BuildResponse>(await build("staging", { service: "web", ref: "feature" }), 201)).branch).toBe("feature");
    await expectStatus(await build("staging", { service: "web", ref: "no-such-branch" }), 404);
  });
});

describe("pushes", () => {
  /** What a push of `branch` queues, as `environment/service`, sorted. */
  const everyBuild = async () => (await Promise.all(["production", "staging", "qa"].map(async (e) => expectStatus<BuildResponse[]>(await api("GET", `/builds?environment=${e}&limit=500`), 200)))).flat();
  async function pushed(branch: string): Promise<string[]> {
    const before = new Set((await everyBuild()).map((b) => b.id));
    const head = await commitFiles(t, "bc/app", { [`PUSHED-${branch}`]: "1" }, { branch, message: `push ${branch}` });
    await t.core.events.emit(PUSH, { project: "bc", sourceId, repo: "bc/app", ref: `refs/heads/${branch}`, before: "0".repeat(40), after: head, pusher: "dev" });
    return (await everyBuild()).filter((b) => !before.has(b.id)).map((b) => `${b.environment}/${b.service}`).sort();
  }

  test("a push to a branch named like an environment builds that environment's services that name no branch", async () => {
    expect(await pushed("staging")).toEqual(["staging/web"]);
  });

  test("a push of the default branch builds the services that name no branch where the environment has no branch of its own", async () => {
    expect(await pushed("main")).toEqual(["production/web", "qa/web"]);
  });

  test("a service's own branch wins over both", async () => {
    expect(await pushed("feature")).toEqual(["qa/pinned"]);
    expect(await pushed("qa")).toEqual(["qa/web"]);
  });
});

describe("ids in paths", () => {
  test("an id that is no id is an unknown build, save, scan or run: 404", async () => {
    for (const id of ["0", "abc", "1.5", "-1", "99999999999999999999"]) {
      for (const p of [`/builds/${id}`, `/builds/${id}/log`, `/sources/saves/${id}`, `/sources/scans/${id}`]) {
        const res = await api("GET", p);
        expect([p, res.status]).toEqual([p, 404]);
        await res.arrayBuffer();
      }
      for (const p of [`/builds/${id}/cancel`, `/builds/${id}/retry`, `/sources/saves/${id}/merge`]) {
        const res = await api("POST", p);
        expect([p, res.status]).toEqual([p, 404]);
        await res.arrayBuffer();
      }
    }
  });
});
