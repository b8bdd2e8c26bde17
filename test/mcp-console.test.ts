/**
 * The account page's MCP card in Chromium: a person's MCP tokens are listed (not their other
 * tokens, not revoked ones) with the commands and the URL that connect a client.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import type { Browser } from "playwright-core";
import { launchChromium, shot, WallClock } from "./chromium";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken, type Person } from "./fixtures";

let t: TestApp;
let browser: Browser;
let person: Person;

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  const project = makeProject(t, "mcp-shop").slug;
  person = await makePerson(t, [{ role: "developer", project }], { email: "ada@ops.test", displayName: "Ada" });
  mintToken(t, person.principal, { role: "developer", project, kind: "mcp", name: "editor assistant" });
  mintToken(t, person.principal, { role: "developer", project, kind: "api", name: "ci pipeline" });
  mintToken(t, person.principal, { role: "developer", project, kind: "mcp", name: "old assistant" });
  const old = (await expectStatus(await t.request("GET", "/api/v1/tokens", { token: person.session }), 200)).find((x: { name: string }) => x.name === "old assistant");
  await expectStatus(await t.request("DELETE", `/api/v1/tokens/${old.id}`, { token: person.session }), 204);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("the account page", () => {
  test("lists MCP tokens and shows how to connect a client", async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 1400 } });
    await context.addCookies([{ name: "ops_session", value: person.session, url: t.url }]);
    const page = await context.newPage();
    await page.goto(`${t.url}/account`);
    const card = page.getByRole("region", { name: "AI assistants (MCP)" });
    await card.getByRole("list", { name: "Your MCP tokens" }).waitFor();
    const items = await card.getByRole("listitem").allTextContents();
    expect(items).toHaveLength(1);
    expect(items[0]).toContain("editor assistant");
    expect(items[0]).toContain("mcp-shop");
    const commands = await card.getByLabel("Commands for stdio clients").textContent();
    expect(commands).toBe(`ops login --client mcp --server ${t.url}\nops mcp`);
    expect(await card.textContent()).toContain(`${t.url}/mcp`);
    await shot(page, "account-mcp");
    await context.close();
  }, 60_000);
});
