/**
 * Deployments against doc 2's details: the timeline reads newest first by `at` (a build folded
 * with its rollout stands at the rollout's time), shows only the failure kinds TimelineRow lists
 * (a build's `memory` reads `build`, its text keeps the detail), and a rollback body that is not
 * a JSON object is refused before anything rolls.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makeProject, type Person } from "./fixtures";
import { builds } from "../src/domains/builds/tables";
import { deployments } from "../src/domains/deployments/tables";

let t: TestApp;
let owner: Person;
let projectId: string;

beforeAll(async () => {
  t = await createTestApp();
  owner = await makeOwner(t);
  projectId = makeProject(t, "tl").id;
  for (const name of ["web", "api"]) await expectStatus(await t.request("POST", "/api/v1/projects/tl/resources/service", { token: owner.session, body: { name, spec: { image: `registry.example/tl/${name}:1` } } }), 201);
});
afterAll(() => t.close());

const MIN = 60_000;

/** A build row as the builds domain stores it (what a push would have queued). */
function insertBuild(over: Partial<typeof builds.$inferInsert> & { queuedAt: number; status: string }): number {
  return t.core.db
    .insert(builds)
    .values({ projectId, project: "tl", environment: "production", service: "web", kind: "image", trigger: "push", requestedBy: "host", repo: "tl/app", branch: "main", commitSha: "a".repeat(40), author: "dev", message: "change", commitTime: over.queuedAt, ...over })
    .returning({ id: builds.id })
    .get().id;
}

describe("the timeline", () => {
  test("is newest first by `at`: a build's folded rollout stands at the rollout's time, not the build's queue time", async () => {
    const t0 = t.clock.now() - 60 * MIN;
    const deployed = insertBuild({ queuedAt: t0, status: "healthy", imageDigest: `sha256:${"1".repeat(64)}`, finishedAt: t0 + 20 * MIN });
    const failed = insertBuild({ queuedAt: t0 + 5 * MIN, status: "failed", failureKind: "memory", error: "the build used more than its 192 MiB", finishedAt: t0 + 6 * MIN });
    t.core.db
      .insert(deployments)
      .values({ projectId, environment: "production", service: "web", repository: "tl/web", imageDigest: `sha256:${"1".repeat(64)}`, buildId: deployed, commitSha: "a".repeat(40), message: "change", author: "dev", trigger: "build", rollout: "healthy", createdAt: t0 + 15 * MIN, createdBy: "host-app", finishedAt: t0 + 20 * MIN })
      .run();
    const rows = await expectStatus<Array<{ at: string; build: { id: number } | null; failure_kind: string | null; state_text: string }>>(await t.request("GET", "/api/v1/projects/tl/deployments", { token: owner.session }), 200);
    const ats = rows.map((r) => Date.parse(r.at));
    expect(ats).toEqual([...ats].sort((a, b) => b - a));
    expect(rows.map((r) => r.build?.id)).toEqual([deployed, failed]);
    expect(rows[0].at).toBe(new Date(t0 + 15 * MIN).toISOString());

    // `memory` is not a kind TimelineRow lists: the row reads `build`, the text keeps what happened.
    expect(rows[1].failure_kind).toBe("build");
    expect(rows[1].state_text).toContain("memory");
    expect(rows[1].state_text).toContain("192 MiB");
    // The build itself keeps its own kind.
    const b = await expectStatus<{ build: { failure_kind: string } }>(await t.request("GET", `/api/v1/projects/tl/builds/${failed}`, { token: owner.session }), 200);
    expect(b.build.failure_kind).toBe("memory");
  });
});

describe("rollback", () => {
  const rollback = (raw: string) => t.request("POST", "/api/v1/projects/tl/resources/service/api/rollback", { token: owner.session, raw, headers: { "content-type": "application/json" } });

  test("a body that is not a JSON object is a 422, before anything is looked up or rolled", async () => {
    const before = t.core.db.select().from(deployments).all().length;
    for (const raw of ['"x"', "123", "[]", "true", '[{"digest":null}]']) {
      const err = await expectStatus(await rollback(raw), 422);
      expect([raw, err.error]).toEqual([raw, "validation_failed"]);
    }
    expect(t.core.db.select().from(deployments).all().length).toBe(before);
    // No body, null and an object are what the spec allows: here there is nothing to roll back to.
    for (const raw of ["", "null", "{}"]) await expectStatus(await rollback(raw), 404);
  });
});
