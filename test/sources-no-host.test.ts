/**
 * Sources with no code host configured (OPS_CODE_HOST=github without an App): the routes that
 * read ops's own rows (the sources, a save, a source's saves, a scan) and disconnecting a source
 * keep working; only what has to reach the host answers 503.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makeProject, type Person } from "./fixtures";
import { sources, sourceSaves, sourceScans } from "../src/domains/sources/tables";
import { uuidv7 } from "../src/core/ids";

let t: TestApp;
let owner: Person;
let sourceId: string;
let saveId: number;
let scanId: number;
const api = (method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/nh${p}`, { token: owner.session, body });

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_CODE_HOST: "github" } });
  owner = await makeOwner(t);
  const project = makeProject(t, "nh");
  const now = t.clock.now();
  // Rows connected while an App was configured (connecting needs the host).
  sourceId = uuidv7(now);
  t.core.db.insert(sources).values({ id: sourceId, projectId: project.id, repo: "acme/shop", installationId: 7, defaultBranch: "main", connectedAt: now, connectedBy: owner.email }).run();
  saveId = t.core.db.insert(sourceSaves).values({ projectId: project.id, sourceId, repo: "acme/shop", message: "Fix typo", files: "[]", status: "open", requestedBy: owner.email, actor: owner.email, createdAt: now }).returning().get().id;
  scanId = t.core.db.insert(sourceScans).values({ projectId: project.id, repo: "acme/shop", installationId: 7, gitRef: "main", defaultBranch: true, status: "succeeded", requestedBy: owner.email, actor: owner.email, createdAt: now }).returning().get().id;
});
afterAll(() => t.close());

describe("sources without a code host", () => {
  test("the host's own routes say it is not configured", async () => {
    expect((await expectStatus(await t.request("GET", "/api/v1/host/app", { token: owner.session }), 503)).error).toBe("unavailable");
    await expectStatus(await api("GET", `/sources/${sourceId}/tree`), 503);
  });

  test("GET sources, a save, a source's saves and a scan read ops's own rows", async () => {
    const list = await expectStatus<Array<{ id: string; repo: string }>>(await api("GET", "/sources"), 200);
    expect(list.map((s) => s.repo)).toEqual(["acme/shop"]);
    expect((await expectStatus<{ message: string }>(await api("GET", `/sources/saves/${saveId}`), 200)).message).toBe("Fix typo");
    expect((await expectStatus<Array<{ id: number }>>(await api("GET", `/sources/${sourceId}/saves`), 200)).map((s) => s.id)).toEqual([saveId]);
    expect((await expectStatus<{ status: string }>(await api("GET", `/sources/scans/${scanId}`), 200)).status).toBe("succeeded");
    await expectStatus(await api("GET", "/sources/scans/999"), 404);
  });

  test("DELETE a source disconnects it", async () => {
    await expectStatus(await api("DELETE", `/sources/${sourceId}`), 204);
    expect(await expectStatus(await api("GET", "/sources"), 200)).toEqual([]);
  });
});
