/**
 * Headless Chromium for console tests (Debian's chromium through playwright-core): the launch
 * flags, a clock that follows the wall clock (the console shows real times and the scheduler
 * runs what is due now), screenshots under test/artifacts/ for a person to look at, and a loop
 * that runs the scheduler until the page shows what a test waits for.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { FixedClock } from "../src/core/clock";
import type { TestApp } from "./harness";

export const ARTIFACTS = path.resolve(import.meta.dir, "artifacts");
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export class WallClock extends FixedClock {
  override now(): number {
    return Date.now();
  }
}

export function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS });
}

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Run the scheduler until `done` holds (the page polls meanwhile), at most 30 s. */
export async function runUntil(t: TestApp, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error("the condition did not hold within 30 s");
    await t.core.scheduler.runDue();
    await Bun.sleep(100);
  }
}

/** Sign in through the console's form (the page shows it on any path that needs a person). */
export async function signIn(page: Page, person: { email: string; password: string }): Promise<void> {
  await page.getByLabel("Email").fill(person.email);
  await page.getByLabel("Password").fill(person.password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/**
 * A context whose pages record their layout shifts (as Chromium reports them to
 * PerformanceObserver; shifts right after the person's input do not count, as in CLS) and their
 * script errors and Content Security Policy violations.
 */
export async function watchedContext(browser: Browser, viewport = { width: 1280, height: 900 }) {
  const context = await browser.newContext({ viewport, locale: "en-GB" });
  await context.addInitScript(() => {
    const w = window as unknown as { __shift: number };
    w.__shift = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries() as Array<PerformanceEntry & { value: number; hadRecentInput: boolean }>) if (!e.hadRecentInput) w.__shift += e.value;
    }).observe({ type: "layout-shift", buffered: true });
  });
  return context;
}

/** Script errors and CSP violations a page logged. */
export function problemsOf(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Uncaught/i.test(m.text())) problems.push(m.text());
  });
  return problems;
}

/** The layout shift a page has had since it loaded (see watchedContext). */
export function layoutShift(page: Page): Promise<number> {
  return page.evaluate(() => (window as unknown as { __shift: number }).__shift);
}

/** How far the page is wider than the window (0 when nothing scrolls sideways). */
export function sidewaysOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

/** Press every button a page offers as usable, again after each press (dialogs bring new ones). */
export async function pressEverything(page: Page): Promise<number> {
  let pressed = 0;
  for (let i = 0; i < 30; i++) {
    const buttons = page.locator("main button:visible:not([disabled]):not([aria-disabled='true'])");
    const count = await buttons.count();
    if (i >= count) break;
    await buttons.nth(i).click({ timeout: 2000 }).catch(() => undefined);
    pressed++;
    await page.waitForTimeout(250);
  }
  return pressed;
}
