/**
 * `npm install` ends without npm's install-scripts warning: package.json's allowScripts approves
 * the scripts ops needs (bun and esbuild fetch their native binaries) and denies core-js's banner.
 */
import { test, expect } from "bun:test";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "..");

test("every dependency's install script is approved or denied in package.json", async () => {
  const p = Bun.spawn(["npm", "install-scripts", "ls"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect(err).toBe("");
  expect(code).toBe(0);
  expect(out.trim()).toBe("No packages with unreviewed install scripts.");
  const pkg = await Bun.file(path.join(ROOT, "package.json")).json();
  expect(pkg.allowScripts).toMatchObject({ bun: true, esbuild: true });
});
