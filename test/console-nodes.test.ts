/**
 * The Nodes page and where a service's replicas run, in a real browser (Debian's chromium through
 * playwright-core): an estate admin reaches Nodes from the top bar and sees this host with a
 * deployed service's replicas; a developer has no such link and is told why on the page; with an
 * engine that does not answer the page says what failed, naming OPS_DOCKER_HOST; on a real
 * three-node Swarm the page lists the nodes with their roles and a labelled service's replica on
 * its node, and a drained node after Refresh. The service page shows no Node column off a Swarm.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import os from "node:os";
import type { Browser } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, type Person } from "./fixtures";
import { pushApp } from "./deploy-fixtures";
import { launchChromium, problemsOf, runUntil, shot, signIn, watchedContext, WallClock } from "./chromium";
import { startSwarm, type SwarmCluster } from "./support/engine-cluster";

setDefaultTimeout(120_000);

const SLUG = "wharf";
let t: TestApp;
let browser: Browser;
let olga: Person;
let rex: Person;

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock(), env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "5" } });
  makeProject(t, SLUG);
  olga = await makeOwner(t, { email: "olga@ops.test" });
  rex = await makePerson(t, [{ role: "developer", project: SLUG }], { email: "rex@ops.test", displayName: "Rex", password: "correct-horse-battery" });
  const digest = await pushApp(t, SLUG, "web", { version: "v1" });
  await expectStatus(await t.request("POST", `/api/v1/projects/${SLUG}/resources/service`, { token: rex.session, body: { name: "web", spec: { image: `${SLUG}/web` } } }), 201);
  await expectStatus(await t.request("POST", `/api/v1/projects/${SLUG}/resources/service/web/deploy`, { token: rex.session, body: { digest } }), 201);
  await runUntil(t, async () => (await (await t.request("GET", `/api/v1/projects/${SLUG}/resources/service/web`, { token: rex.session })).json()).status.state === "ready");
  browser = await launchChromium();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("the Nodes page", () => {
  test("an estate admin reaches it from the top bar: this host, ready, with the service's replica", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/account`);
    await signIn(page, olga);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Nodes" }).click();
    await page.getByRole("heading", { name: "Nodes" }).waitFor();
    const row = page.locator(`table.nodes tr[data-node='${os.hostname()}']`);
    await row.waitFor();
    const text = await row.innerText();
    expect(text).toContain("standalone");
    expect(text).toContain("ready");
    expect(text).toContain("active");
    expect(text).toContain(`${os.cpus().length} CPUs`);
    expect(text).toContain(`${SLUG} / production / web`);
    expect(text).toContain("running");
    expect(await page.locator("section[aria-labelledby='nodes-title']").innerText()).toContain("OPS_RUNTIME=process");
    expect(await page.title()).toBe("Nodes · ops");
    await shot(page, "nodes-process");
    expect(problems).toEqual([]);
    await context.close();
  });

  test("a developer has no Nodes link, and the page says it needs estate.manage", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/nodes`);
    await signIn(page, rex);
    await page.getByRole("heading", { name: "Nodes" }).waitFor();
    await page.locator("p.denied").waitFor();
    expect(await page.locator("p.denied").innerText()).toContain("estate.manage");
    expect(await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Nodes" }).count()).toBe(0);
    expect(await page.locator("table.nodes").count()).toBe(0);
    await context.close();
  });

  test("off a Swarm, the service page lists the replicas without a Node column", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${SLUG}/deployments/web?environment=production`);
    await signIn(page, rex);
    const table = page.locator("table.replicas");
    await table.waitFor();
    const headers = await table.locator("thead th").allInnerTexts();
    expect(headers).toContain("Port");
    expect(headers).not.toContain("Node");
    await context.close();
  });

  test("an engine that does not answer: the page says what failed, naming OPS_DOCKER_HOST", async () => {
    const host = "unix:///nonexistent/ops-console-nodes/docker.sock";
    const u = await createTestApp({ env: { OPS_RUNTIME: "swarm", OPS_DOCKER_HOST: host } });
    try {
      const admin = await makeOwner(u, { email: "ada@ops.test" });
      const context = await watchedContext(browser);
      const page = await context.newPage();
      await page.goto(`${u.url}/nodes`);
      await signIn(page, admin);
      const alert = page.locator(".manager-error");
      await alert.waitFor();
      const said = await alert.innerText();
      expect(said).toContain("The engine did not answer");
      expect(said).toContain(`OPS_DOCKER_HOST (${host})`);
      expect(await page.getByText("No nodes to show until the engine answers.").count()).toBe(1);
      await shot(page, "nodes-unreachable");
      await context.close();
    } finally {
      await u.close();
    }
  });
});

describe("the Nodes page on a real three-node Swarm", () => {
  let swarm: SwarmCluster;
  let s: TestApp;
  let ada: Person;

  beforeAll(async () => {
    swarm = await startSwarm(3);
    await swarm.importImage("console-nodes-bb:1", { cmd: ["/bin/sleep", "3600"] });
    const labels = { "dev.ops.instance": "console-nodes", "dev.ops.kind": "replica", "dev.ops.replica": "shop.production.api.3-1", "dev.ops.label.project": "shop", "dev.ops.label.environment": "production", "dev.ops.label.service": "api", "dev.ops.label.deployment": "3" };
    await swarm.docker(1, ["service", "create", "-q", "--detach=false", "--name", "ops-console-api", ...Object.entries(labels).flatMap(([k, v]) => ["--label", `${k}=${v}`]), "--constraint", `node.hostname==${swarm.nodes[1]!.hostname}`, "--network", swarm.network, "--stop-grace-period", "1s", "console-nodes-bb:1"]);
    s = await createTestApp({ env: { OPS_RUNTIME: "swarm", OPS_DOCKER_HOST: `unix://${swarm.nodes[0]!.socket}` } });
    ada = await makeOwner(s, { email: "ada@ops.test" });
  }, 300_000);

  afterAll(async () => {
    await s?.close();
    if (swarm) expect(await swarm.stop()).toEqual({ processes: [], netns: [], links: [], mounts: [], cgroups: [], dir: false });
  }, 120_000);

  test("three nodes with their roles and addresses, the replica on its node; a drained node shows after Refresh", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${s.url}/nodes`);
    await signIn(page, ada);
    const [manager, worker, other] = swarm.nodes.map((n) => page.locator(`table.nodes tr[data-node='${n.hostname}']`));
    await manager!.waitFor();
    expect(await page.locator("table.nodes tbody tr").count()).toBe(3);
    expect(await manager!.innerText()).toContain("manager (leader)");
    expect(await manager!.innerText()).toContain(swarm.nodes[0]!.address);
    expect(await worker!.innerText()).toContain("worker");
    expect(await worker!.innerText()).toContain("shop.production.api.3-1");
    expect(await worker!.innerText()).toContain("shop / production / api");
    expect(await other!.innerText()).toContain("none");
    expect(await page.locator("section[aria-labelledby='nodes-title']").innerText()).toContain("Docker 20.10");
    await swarm.docker(1, ["node", "update", "--availability", "drain", swarm.nodes[2]!.hostname]);
    await page.getByRole("button", { name: "Refresh" }).click();
    await other!.getByText("drain").waitFor();
    await shot(page, "nodes-swarm");
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);
});
