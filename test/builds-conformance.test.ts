/**
 * Builds against doc 2's details: POST …/builds and …/retry answer the build as created
 * (`queued`), whether or not a builder takes it at once; a manual build's branch is the request's
 * ref, else the service's branch, else the environment's branch, else the default branch; and a
 * path id that is no id (`0`, `abc`) is an unknown build, save or scan: 404.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makeProject, type Person } from "./fixtures";
import { commitFiles } from "./sources-fixtures";
import type { BuildResponse } from "../src/domains/builds/model";

let t: TestApp;
let owner: Person;
const api = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/bc${p}`, { token: owner.session, body });

beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
  makeProject(t, "bc", ["production", "staging", "qa"]);
  await expectStatus(await api("POST", "/sources", { repo: "bc/app" }), 201);
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
