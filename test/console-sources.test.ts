/**
 * The Sources page and the studio in a real browser (Debian's chromium through playwright-core):
 * a developer sees the connected repository with its last push, declared services and clone URL
 * (copied with the button), opens the studio from a code-host file link, edits a file and adds
 * one, saves them as a pull request, and merges it. Screenshots go to test/artifacts/.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type Browser } from "playwright-core";
import { launchChromium, shot, WallClock, runUntil } from "./chromium";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken, type Person } from "./fixtures";
import { cloneUrl, git, workDir } from "./sources-git-helpers";

setDefaultTimeout(120_000);

let t: TestApp;
let browser: Browser;
let person: Person;
let project: string;
let repo: string;

/** Run the scheduler until `done` holds (the console polls the save meanwhile). */
beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  project = makeProject(t, "garden").slug;
  person = await makePerson(t, [{ role: "developer", project }], { email: "sam@ops.test", displayName: "Sam", password: "correct-horse-battery" });
  repo = (await expectStatus(await t.request("POST", `/api/v1/projects/${project}/sources`, { token: person.session, body: { repo: `${project}/site` } }), 201)).repo;
  // A first push with the real git CLI, so the page has a last push to show.
  const token = mintToken(t, person.principal, { role: "developer", project });
  const dir = workDir();
  await git(dir, "clone", "-q", cloneUrl(t.url, repo, token), "site");
  const w = path.join(dir, "site");
  mkdirSync(path.join(w, "src"));
  writeFileSync(path.join(w, "README.md"), "# Garden\n\nThe garden shop.\n");
  writeFileSync(path.join(w, "src", "server.js"), "require('http').createServer((q, s) => s.end('ok')).listen(process.env.PORT);\n");
  writeFileSync(path.join(w, "ops.toml"), '[services.web]\nstart = "node src/server.js"\nhealth = "/"\n');
  await git(w, "add", ".");
  await git(w, "commit", "-q", "-m", "First commit");
  await git(w, "push", "-q", "origin", "HEAD:main");
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe("Sources in chromium", () => {
  test("the Sources page, the studio, a save as a pull request, and its merge", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: t.url });
    const page = await context.newPage();
    await page.goto(`${t.url}/projects/${project}/sources`);
    await page.getByLabel("Email").fill(person.email);
    await page.getByLabel("Password").fill(person.password);
    await page.getByRole("button", { name: "Sign in" }).click();

    await page.getByRole("heading", { name: "Sources" }).waitFor();
    const row = page.locator("table.sources tbody tr").first();
    await row.getByText(repo).waitFor();
    expect(await row.getByText("just now").isVisible()).toBe(true);
    // Nothing declared until a scan reads the default branch's ops.toml and reconciles it.
    expect(await row.getByText("none").isVisible()).toBe(true);
    await row.getByRole("button", { name: "Scan" }).click();
    await runUntil(t, async () => (await page.getByText(/Scan \d+ of .* at main: created service web \(production, staging\)/).count()) > 0);
    expect(await page.getByText(/A push to the default branch now builds web/).isVisible()).toBe(true);
    await row.locator(".tag", { hasText: "web" }).waitFor();
    const web = await expectStatus(await t.request("GET", `/api/v1/projects/${project}/resources/service/web?environment=production`, { token: person.session }), 200);
    expect(web.spec.source.repo).toBe(repo);
    await shot(page, "sources-scanned");
    const clone = page.getByLabel(`Clone URL of ${repo}`);
    expect(await clone.inputValue()).toBe(`${t.url}/git/${repo}.git`);
    await row.getByRole("button", { name: "Copy" }).click();
    await row.getByText("Copied.").waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`${t.url}/git/${repo}.git`);
    await shot(page, "sources");

    // A code-host file link opens the studio at that file.
    await page.goto(`${t.url}/git/${repo}/blob/main/README.md`);
    await page.getByRole("navigation", { name: "Files" }).waitFor();
    const editor = page.getByLabel("Contents of README.md");
    await editor.waitFor();
    expect(await editor.inputValue()).toBe("# Garden\n\nThe garden shop.\n");
    expect(page.url()).toContain(`/projects/${project}/sources/`);

    await editor.fill("# Garden\n\nThe garden shop, open every day.\n");
    await page.getByLabel("New file").fill("docs/hours.md");
    await page.getByRole("button", { name: "Add file" }).click();
    const added = page.getByLabel("Contents of docs/hours.md");
    await added.waitFor();
    await added.fill("Mon–Sun 9:00–18:00\n");
    await page.getByText("2 files changed: README.md, docs/hours.md").waitFor();
    await page.getByLabel("Message").fill("Opening hours");
    await shot(page, "studio-editing");
    await page.getByRole("button", { name: "Save as pull request" }).click();
    await runUntil(t, async () => (await page.getByText(/is open as pull request #1/).count()) > 0);
    const saves = page.locator("table.saves tbody tr").first();
    await saves.locator(".badge", { hasText: "open" }).waitFor();
    expect(await saves.getByText("Opening hours").isVisible()).toBe(true);
    await shot(page, "studio-saved");

    await saves.getByRole("button", { name: "Merge" }).click();
    await page.getByText(/Merged save \d+ as [0-9a-f]{12}; scan \d+ is queued/).waitFor();
    await saves.locator(".badge", { hasText: "merged" }).waitFor();
    await page.getByRole("link", { name: "hours.md" }).waitFor();
    // The open file is read again from the merged branch.
    expect(await page.getByLabel("Contents of docs/hours.md").inputValue()).toBe("Mon–Sun 9:00–18:00\n");
    await shot(page, "studio-merged");

    const file = await expectStatus(await t.request("GET", `/api/v1/projects/${project}/sources/${(await expectStatus(await t.request("GET", `/api/v1/projects/${project}/sources`, { token: person.session }), 200))[0].id}/file?path=docs/hours.md`, { token: person.session }), 200);
    expect(file.text).toBe("Mon–Sun 9:00–18:00\n");
    await context.close();
  });

  test("connecting a repository shows a push line that works from a new repository whatever its branch is called (git init makes master)", async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(`${t.url}/projects/${project}/sources`);
    await page.getByLabel("Email").fill(person.email);
    await page.getByLabel("Password").fill(person.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByLabel("Repository (owner/name)").fill(`${project}/shed`);
    await page.getByRole("button", { name: "Connect", exact: true }).click();
    const notice = (await page.getByText(/^Connected .*shed/).textContent())!;
    const line = /Push to it with: (git push .*)$/.exec(notice.trim())?.[1];
    expect(line).toBe(`git push ${t.url}/git/${project}/shed.git HEAD:main`);
    const dir = workDir();
    await git(dir, "init", "-q", "-b", "master");
    writeFileSync(path.join(dir, "README.md"), "# Shed\n");
    await git(dir, "add", ".");
    await git(dir, "commit", "-q", "-m", "First");
    // The line as shown, with the token as the password (the page says: any user name, a token).
    const args = line!.split(" ").slice(1).map((a) => (a.startsWith("http") ? cloneUrl(t.url, `${project}/shed`, mintToken(t, person.principal, { role: "developer", project })) : a));
    await git(dir, ...args);
    expect((await git(dir, "ls-remote", cloneUrl(t.url, `${project}/shed`, mintToken(t, person.principal, { role: "developer", project })))).trim()).toContain("refs/heads/main");
    await page.context().close();
  });
});
