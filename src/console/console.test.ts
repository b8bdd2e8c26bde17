import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import path from "node:path";
import { createTestApp, freePort, tempDir, waitFor, type TestApp } from "../../test/harness";
import { compileOps } from "../../scripts/compile";
import { CONSOLE_PATHS } from "./module";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe("serving the console", () => {
  test("every console path serves the shell, with a strict content security policy", async () => {
    for (const p of CONSOLE_PATHS) {
      const res = await fetch(t.url + p);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("text/html");
      expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      const html = await res.text();
      expect(html).toContain('<div id="app"></div>');
      expect(html).toMatch(/src="\/assets\/console\.js\?v=[0-9a-f]{12}"/);
    }
  });

  test("the bundle and the stylesheet, cached for good under their version", async () => {
    const html = await (await fetch(`${t.url}/device`)).text();
    const v = /console\.js\?v=([0-9a-f]{12})/.exec(html)![1];
    const js = await fetch(`${t.url}/assets/console.js?v=${v}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toStartWith("text/javascript");
    expect(js.headers.get("cache-control")).toContain("immutable");
    const code = await js.text();
    expect(code.length).toBeGreaterThan(10_000);
    expect(code).not.toContain('from "preact"');
    const css = await fetch(`${t.url}/assets/console.css?v=${v}`);
    expect(css.headers.get("content-type")).toStartWith("text/css");
    expect(await css.text()).toContain("--accent");
    const stale = await fetch(`${t.url}/assets/console.js?v=old`);
    expect(stale.headers.get("cache-control")).toBe("no-cache");
  });
});

describe("the compiled binary embeds the console", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test("built with consoleDefine(), `ops serve` serves the bundle with no source beside it", async () => {
    const bin = tempDir("ops-console-bin-");
    const data = tempDir("ops-console-data-");
    dirs.push(bin, data);
    const binary = await compileOps({ outfile: path.join(bin, "ops"), version: "0.0.1-console" });
    const port = freePort();
    const child = Bun.spawn([binary, "serve", "--data-dir", data, "--listen", `127.0.0.1:${port}`], { cwd: bin, stdout: "ignore", stderr: "ignore", env: { PATH: process.env.PATH ?? "", OPS_BOOTSTRAP_PASSWORD: "console-test-password" } });
    try {
      await waitFor(`http://127.0.0.1:${port}/readyz`);
      const js = await fetch(`http://127.0.0.1:${port}/assets/console.js`);
      expect(js.status).toBe(200);
      expect((await js.text()).length).toBeGreaterThan(10_000);
      const page = await fetch(`http://127.0.0.1:${port}/status`);
      expect(await page.text()).toContain("/assets/console.css");
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 60_000);
});

describe("the console's shape", () => {
  test("no screen imports another screen: shared pieces live in ui.tsx and widgets/, sections.tsx picks the pages", async () => {
    const { Glob } = await import("bun");
    const root = path.join(import.meta.dir, "screens");
    const offending: string[] = [];
    for await (const file of new Glob("**/*.tsx").scan(root)) {
      if (file.endsWith(".test.tsx")) continue;
      const text = await Bun.file(path.join(root, file)).text();
      for (const m of text.matchAll(/from "(\.[^"]+)"/g)) {
        const target = path.resolve(path.dirname(path.join(root, file)), m[1] as string);
        if (target.startsWith(root + path.sep)) offending.push(`${file} imports ${m[1]}`);
      }
    }
    expect(offending).toEqual([]);
  });
});
