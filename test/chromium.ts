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
