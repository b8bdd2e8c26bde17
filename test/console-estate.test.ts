/**
 * The estate pages in a real browser (Debian's chromium through playwright-core): an estate owner
 * adds a person and disables another (whose session stops working at once, then works again once
 * enabled), administers the status page (a component set degraded shows as an ongoing incident;
 * the reason stays off the public page), publishes a CLI release and makes an install command whose
 * code the installer redeems; a developer reads a notification, is taken to its page, and turns the
 * kind off for the console. The top bar offers the estate pages only to those allowed.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import type { Browser } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, type Person } from "./fixtures";
import { launchChromium, problemsOf, shot, signIn, watchedContext, WallClock } from "./chromium";
import { tx } from "../src/core/db/client";
import { notify } from "../src/domains/notifications/service";

setDefaultTimeout(120_000);

const SLUG = "dock";
let t: TestApp;
let browser: Browser;
let olga: Person;
let rex: Person;
let nia: Person;

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  makeProject(t, SLUG);
  olga = await makeOwner(t, { email: "olga@ops.test" });
  rex = await makePerson(t, [{ role: "developer", project: SLUG }], { email: "rex@ops.test", displayName: "Rex", password: "correct-horse-battery" });
  nia = await makePerson(t, [{ role: "developer", project: SLUG }], { email: "nia@ops.test", displayName: "Nia", password: "correct-horse-battery" });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("the estate pages in chromium", () => {
  test("operators: add a person; disable one (their session stops at once) and enable again", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    const problems = problemsOf(page);
    await page.goto(`${t.url}/operators`);
    await signIn(page, olga);
    const rexRow = page.locator("table.operators tr", { hasText: "rex@ops.test" });
    await rexRow.waitFor();
    expect(await rexRow.innerText()).toContain(`Developer in ${SLUG}`);

    await page.getByLabel("Email").fill("nora@ops.test");
    await page.getByLabel("Display name").fill("Nora");
    await page.getByLabel("Role in every project").selectOption({ label: "Viewer" });
    await page.getByRole("button", { name: "Add person" }).click();
    await page.getByText("Nora is added.").waitFor();
    expect(await page.locator("table.operators tr", { hasText: "nora@ops.test" }).innerText()).toContain("Viewer in every project");

    await expectStatus(await t.request("GET", "/api/v1/me", { token: rex.session }), 200);
    await page.getByRole("button", { name: "Disable Rex" }).click();
    const dialog = page.getByRole("alertdialog", { name: "Disable Rex?" });
    await shot(page, "operators-disable");
    await dialog.getByRole("button", { name: "Yes, disable" }).click();
    await page.getByText("Rex is disabled.").waitFor();
    expect(await rexRow.getByText("disabled").isVisible()).toBe(true);
    expect((await t.request("GET", "/api/v1/me", { token: rex.session })).status).toBeGreaterThanOrEqual(401);
    await shot(page, "operators");
    // Nobody can disable themselves from here.
    expect(await page.getByRole("button", { name: /^Disable olga/ }).getAttribute("title")).toBe("You cannot disable yourself.");

    await page.getByRole("button", { name: "Enable Rex" }).click();
    await page.getByText("Rex is enabled again.").waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });

  test("status administration: a component set degraded is an ongoing incident; the reason stays private", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/status/admin`);
    await signIn(page, olga);
    await page.getByRole("heading", { name: /Status administration/ }).waitFor();
    expect(await page.locator("table.components-admin tr", { hasText: "Scheduler" }).innerText()).toContain("ops, every minute");
    // The processes that serve the estate (decision 0600): a test app keeps everything in one.
    const control = page.locator("table.processes tr[data-part='control plane']");
    await control.waitFor();
    expect(await control.innerText()).toContain(String(process.pid));
    expect(await page.locator("section[aria-labelledby='processes-title']").innerText()).toContain("OPS_DATA_PLANE=inline");
    await page.getByLabel("Name", { exact: true }).fill("Outgoing mail");
    await page.getByLabel("Slug").fill("mail");
    await page.getByRole("button", { name: "Add component" }).click();
    await page.getByText("Outgoing mail is on the status page.").waitFor();
    await page.getByLabel("New state of Outgoing mail").selectOption("degraded");
    await page.getByLabel("Reason for Outgoing mail (operators only)").fill("relay answers slowly");
    await page.locator("table.components-admin tr", { hasText: "Outgoing mail" }).getByRole("button", { name: "Set" }).click();
    await page.getByText("Outgoing mail is degraded.").waitFor();
    await shot(page, "status-admin");
    await page.locator("ul.incidents li", { hasText: "Outgoing mail" }).getByText(/ongoing/).waitFor();
    await shot(page, "status-admin");
    const pub = await (await fetch(`${t.url}/api/v1/status/public`)).text();
    expect(pub).toContain("Outgoing mail");
    expect(pub).not.toContain("relay answers slowly");
    await context.close();
  });

  test("CLI: publish a release, make an install command the installer redeems", async () => {
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/cli`);
    await signIn(page, olga);
    await page.getByRole("heading", { name: "Current releases" }).waitFor();
    expect(await page.locator("table.releases tr", { hasText: "linux-x64-musl" }).innerText()).toContain("nothing published");
    await page.getByLabel("Version").fill("1.4.0");
    await page.getByLabel("Target").selectOption("linux-x64");
    await page.getByLabel("Binary").setInputFiles({ name: "ops", mimeType: "application/octet-stream", buffer: Buffer.from("#!/bin/sh\necho ops 1.4.0\n") });
    await page.getByRole("button", { name: "Publish" }).click();
    await page.getByText("Published 1.4.0 for linux-x64.").waitFor();
    await page.locator("table.releases tbody tr").first().getByRole("link", { name: "1.4.0" }).waitFor();

    await page.getByRole("button", { name: "Make an install command" }).click();
    const line = await page.getByLabel("Install command").inputValue();
    const code = /Bearer (opsi_[A-Za-z0-9]+)/.exec(line)?.[1];
    expect(line).toEndWith(`'${t.url}/api/v1/cli/install.sh' | sh`);
    await shot(page, "cli");
    const script = await fetch(`${t.url}/api/v1/cli/install.sh`, { headers: { authorization: `Bearer ${code}` } });
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toStartWith("text/x-shellscript");
    expect((await fetch(`${t.url}/api/v1/cli/install.sh`, { headers: { authorization: `Bearer ${code}` } })).status).toBe(401);
    await context.close();
  });

  test("notifications: the unread count, a notice opens its page and is read; a kind turned off", async () => {
    const project = t.core.access.findProject(SLUG)!;
    tx(t.core.db, (q) => notify(t.core, q, { kind: "build.failed", projectId: project.id, params: { project: SLUG, service: "web", build: 7 }, link: `/projects/${SLUG}/builds/7` }));
    const context = await watchedContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.url}/notifications`);
    await signIn(page, nia);
    const bar = page.getByRole("navigation", { name: "Main" });
    await bar.getByText("1", { exact: true }).waitFor();
    expect(await bar.getByRole("link", { name: "Operators" }).count()).toBe(0);
    expect(await bar.getByRole("link", { name: "Status admin" }).count()).toBe(0);
    const notice = page.locator("table.inbox tr.unread");
    await notice.getByText(`A build failed in ${SLUG}: service web, build 7`).waitFor();
    await shot(page, "notifications");
    await page.getByLabel("A build failed: in the console").uncheck();
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText(`Saved for ${SLUG}.`).waitFor();
    const settings = await expectStatus(await t.request("GET", `/api/v1/projects/${SLUG}/notification-settings`, { token: nia.session }), 200);
    expect(settings.find((s: { kind: string }) => s.kind === "build.failed")).toMatchObject({ in_app: false, email: false });

    await notice.getByRole("link").click();
    await page.waitForURL(`${t.url}/projects/${SLUG}/builds/7`);
    const after = await expectStatus(await t.request("GET", "/api/v1/notifications/unread-count", { token: nia.session }), 200);
    expect(after.unread).toBe(0);
    await context.close();
  });
});
