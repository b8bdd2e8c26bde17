/**
 * A Core composed without a domain (some suites leave deployments out) still serves MCP: the
 * tools whose routes it lacks are simply not offered, and the rest work.
 */
import { test, expect, afterAll } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/harness";
import { makePerson, makeProject } from "../../../test/fixtures";
import { connectHttp, ok } from "../../../test/mcp-fixtures";
import { DOMAINS } from "../index";

let t: TestApp | undefined;
afterAll(() => t?.close());

test("without deployments: no deploy, rollback or timeline tools; the others answer", async () => {
  t = await createTestApp({ modules: DOMAINS.filter((m) => m.name !== "deployments") });
  const project = makeProject(t).slug;
  const dev = await makePerson(t, [{ role: "developer", project }]);
  const client = await connectHttp(t, dev.session);
  try {
    const names = (await client.listTools()).tools.map((x) => x.name);
    for (const gone of ["deploy", "rollback", "timeline"]) expect(names).not.toContain(gone);
    expect(names).toContain("list_builds");
    expect((await ok(client, "list_builds", { project })).items).toEqual([]);
  } finally {
    await client.close();
  }
});
