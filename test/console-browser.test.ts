/**
 * The console in a real browser (Debian's chromium driven by playwright-core): a person signs in,
 * enrols MFA on the account page (QR code, code from `oathtool`), signs in again with the second
 * factor, approves a device grant on /device, loads /status, and removes MFA with the current code
 * once the sign-in is older than ten minutes. Each page is saved as a screenshot under
 * test/artifacts/ (gitignored) for a person to look at.
 *
 * The server runs on wall-clock time (TOTP codes are about real time), shifted forward by the test
 * that needs a sign-in to have aged; oathtool is asked for codes at the same shift.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { type Browser, type Page } from "playwright-core";
import { launchChromium, shot, WallClock } from "./chromium";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makeOwner, makePerson, makeProject, type Person } from "./fixtures";
import { DEVICE_GRANT_TYPE } from "../src/domains/device/service";

/** Wall-clock time moved forward by `shift` ms. */
class ShiftedClock extends WallClock {
  shift = 0;
  override now(): number {
    return Date.now() + this.shift;
  }
}

const clock = new ShiftedClock();
let t: TestApp;
let browser: Browser;
let person: Person;
let project: string;

/** A TOTP code for the step `offsetS` seconds from now, from oathtool (the real client). */
function totp(secret: string, offsetS = 0): string {
  const at = new Date(Date.now() + offsetS * 1000).toISOString().slice(0, 19).replace("T", " ") + " UTC";
  const r = Bun.spawnSync(["oathtool", "--totp", "-b", "--now", at, secret], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`oathtool failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

beforeAll(async () => {
  t = await createTestApp({ clock });
  project = makeProject(t, "web-shop").slug;
  person = await makePerson(t, [{ role: "developer", project }], { email: "dana@ops.test", displayName: "Dana Developer", password: "correct-horse-battery" });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function signIn(page: Page, code?: () => string): Promise<void> {
  await page.getByLabel("Email").fill(person.email);
  await page.getByLabel("Password").fill(person.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  if (code) {
    await page.getByLabel("Authenticator code").waitFor();
    await shot(page, "sign-in-mfa");
    await page.getByLabel("Authenticator code").fill(code());
    await page.getByRole("button", { name: "Verify" }).click();
  }
}

describe("the console in chromium", () => {
  test("sign in, enrol MFA with the QR code, sign in again with the second factor", async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${t.url}/account`);
    await page.getByRole("heading", { name: "Sign in to ops" }).waitFor();
    await shot(page, "sign-in");
    await signIn(page);
    await page.getByRole("heading", { name: "Your account" }).waitFor();

    await page.getByRole("button", { name: "Set up two-factor authentication" }).click();
    await page.getByRole("img", { name: /QR code/ }).waitFor();
    const secret = (await page.locator("code.secret").textContent())!.trim();
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
    await shot(page, "account-mfa-enrol");
    await page.getByLabel("Code", { exact: true }).fill(totp(secret));
    await page.getByRole("button", { name: "Confirm" }).click();
    await page.getByText("Two-factor authentication is on").waitFor();
    await shot(page, "account");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to ops" }).waitFor();
    // The enrolment used this step's code; a code is accepted once, so sign in with the next step's.
    await signIn(page, () => totp(secret, 30));
    await page.getByRole("heading", { name: "Your account" }).waitFor();
    expect(await page.getByText(person.email).first().isVisible()).toBe(true);

    // Tokens: mint one (the secret shows once), then revoke it.
    await page.getByLabel("Name", { exact: true }).fill("laptop script");
    await page.getByRole("button", { name: "Mint token" }).click();
    const minted = (await page.locator(".alert-ok code.secret").textContent())!.trim();
    expect(minted).toMatch(/^opst_/);
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token: minted }), 200);
    await shot(page, "account-token-minted");
    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: "Revoke token laptop script" }).click();
    await page.locator("tr.revoked").getByText("laptop script").waitFor();
    await expectStatus(await t.request("GET", "/api/v1/permissions", { token: minted }), 401);

    // Keep the signed-in context for the next test.
    (globalThis as Record<string, unknown>).__opsConsoleContext = context;
  }, 60_000);

  test("approve a device grant on /device", async () => {
    const context = (globalThis as Record<string, unknown>).__opsConsoleContext as Awaited<ReturnType<Browser["newContext"]>>;
    const page = await context.newPage();
    const start = await expectStatus(await t.request("POST", "/api/v1/auth/device", { body: { client: "cli", client_name: "dana@build-box", project } }), 200);
    await page.goto(start.verification_uri_complete);
    await page.getByRole("heading", { name: "Authorize a device" }).waitFor();
    expect(await page.locator("code.user-code").textContent()).toBe(start.user_code);
    expect(await page.getByText("unverified").isVisible()).toBe(true);
    expect(await page.getByText("“dana@build-box”").isVisible()).toBe(true);
    expect(await page.getByText("127.0.0.1").first().isVisible()).toBe(true);
    // The server's advice: a developer may grant Developer, not Maintainer; Developer is preselected.
    expect(await page.getByRole("radio", { name: /Developer/ }).isChecked()).toBe(true);
    expect(await page.getByRole("radio", { name: /Maintainer/ }).isDisabled()).toBe(true);
    expect(await page.getByLabel("Project").inputValue()).toBe(project);
    await shot(page, "device");

    const pending = await expectStatus(await t.request("POST", "/api/v1/auth/device/token", { body: { device_code: start.device_code, grant_type: DEVICE_GRANT_TYPE } }), 400);
    expect(pending.error).toBe("authorization_pending");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByRole("heading", { name: "Device approved" }).waitFor();
    await shot(page, "device-approved");
    await Bun.sleep(5_100); // the client's poll interval, on the wall clock
    const token = await expectStatus(await t.request("POST", "/api/v1/auth/device/token", { body: { device_code: start.device_code, grant_type: DEVICE_GRANT_TYPE } }), 200);
    expect(token.operator).toBe(person.email);
    expect(token.project).toBe(project);
    expect(token.role).toBe("Developer");
  }, 60_000);

  test("a denial from /device reaches the client as access_denied", async () => {
    const context = (globalThis as Record<string, unknown>).__opsConsoleContext as Awaited<ReturnType<Browser["newContext"]>>;
    const page = await context.newPage();
    const start = await expectStatus(await t.request("POST", "/api/v1/auth/device", { body: { client: "mcp", client_name: "editor" } }), 200);
    await page.goto(`${t.url}/device`);
    await page.getByLabel("Device code").fill(start.user_code.toLowerCase().replace("-", ""));
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByRole("button", { name: "Deny" }).click();
    await page.getByRole("heading", { name: "Request denied" }).waitFor();
    const denied = await expectStatus(await t.request("POST", "/api/v1/auth/device/token", { body: { device_code: start.device_code } }), 400);
    expect(denied.error).toBe("access_denied");
  }, 60_000);

  test("/status loads without signing in", async () => {
    await expectStatus(await t.request("POST", "/api/v1/status/components", { token: (await makePerson(t, [{ role: "owner", project: null }])).session, body: { slug: "mail", name: "Outgoing mail" } }), 201);
    const owner = await makePerson(t, [{ role: "owner", project: null }]);
    await expectStatus(await t.request("POST", "/api/v1/status/components/mail/transitions", { token: owner.session, body: { state: "degraded", reason: "relay slow" } }), 201);
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${t.url}/status`);
    await page.getByRole("heading", { name: "Status", exact: true }).waitFor();
    await page.getByText("Some systems are degraded").waitFor();
    expect(await page.getByText("Outgoing mail").first().isVisible()).toBe(true);
    expect(await page.getByText("ongoing").isVisible()).toBe(true);
    expect(await page.content()).not.toContain("relay slow");
    await shot(page, "status");
    await context.close();
  }, 60_000);

  test("/projects lists the person's projects; a project's overview lists its resources", async () => {
    const context = (globalThis as Record<string, unknown>).__opsConsoleContext as Awaited<ReturnType<Browser["newContext"]>>;
    const page = await context.newPage();
    await page.goto(`${t.url}/projects`);
    await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    await page.getByRole("link", { name: "web-shop" }).click();
    await page.getByRole("navigation", { name: "Project" }).waitFor();
    await page.getByRole("heading", { name: "Resources" }).waitFor();
    await page.getByText("No resources in production yet.").waitFor();
    await shot(page, "project-overview");
    // A developer is not offered to create projects.
    await page.goto(`${t.url}/projects`);
    await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    expect(await page.getByRole("button", { name: "Create project" }).count()).toBe(0);
  }, 60_000);

  test("an estate owner creates a project from /projects and lands on its Sources page", async () => {
    const owner = await makeOwner(t, { email: "olga@ops.test" });
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${t.url}/projects`);
    await page.getByLabel("Email").fill(owner.email);
    await page.getByLabel("Password").fill(owner.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "New project" }).waitFor();
    await page.getByLabel("Slug").fill("web-shop");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.getByRole("alert").getByText(/web-shop/).waitFor();
    await page.getByLabel("Slug").fill("tea-shop");
    await page.getByLabel("Name").fill("Tea shop");
    await page.getByLabel("Environments").fill("production");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.getByRole("heading", { name: "Sources" }).waitFor();
    expect(page.url()).toBe(`${t.url}/projects/tea-shop/sources`);
    const created = await expectStatus(await t.request("GET", "/api/v1/projects/tea-shop", { token: owner.session }), 200);
    expect([created.name, created.environments]).toEqual(["Tea shop", ["production"]]);
    await shot(page, "project-created");
    await context.close();
  }, 60_000);

  test("removing MFA asks for the current code once the sign-in is older than ten minutes", async () => {
    const context = (globalThis as Record<string, unknown>).__opsConsoleContext as Awaited<ReturnType<Browser["newContext"]>>;
    const page = await context.newPage();
    const seed = t.core.sqlite.query("SELECT mfa_secret_id AS id FROM operators WHERE id = ?").get(person.operator.id) as { id: string | null };
    expect(seed.id).not.toBeNull();
    const secret = t.core.secrets.get(t.core.db, seed.id!);
    clock.shift = 11 * 60_000;
    await page.goto(`${t.url}/account`);
    await page.getByRole("heading", { name: "Your account" }).waitFor();
    await page.getByRole("button", { name: "Remove two-factor authentication" }).click();
    const right = totp(secret, clock.shift / 1000);
    await page.getByLabel("Current code").fill(right === "000000" ? "111111" : "000000");
    await page.getByRole("button", { name: "Remove", exact: true }).click();
    await page.getByText("That code is not valid").waitFor();
    expect(await page.getByText("Two-factor authentication was removed.").count()).toBe(0);
    await page.getByLabel("Current code").fill(right);
    await shot(page, "account-mfa-remove");
    await page.getByRole("button", { name: "Remove", exact: true }).click();
    await page.getByText("Two-factor authentication was removed.").waitFor();
    await page.getByRole("button", { name: "Set up two-factor authentication" }).waitFor();
    expect(t.core.sqlite.query("SELECT mfa_secret_id AS id FROM operators WHERE id = ?").get(person.operator.id)).toEqual({ id: null });
    const denied = t.core.sqlite.query("SELECT reason FROM audit_log WHERE operator_id = ? AND action = 'mfa.delete' AND outcome = 'denied'").all(person.operator.id);
    expect(denied).toEqual([{ reason: "wrong or replayed code" }]);
  }, 60_000);
});
