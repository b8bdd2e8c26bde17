/**
 * `cargo package` runs outside the sandbox (pack.ts): a crate whose manifest reaches out of its
 * module for a file (a `license-file` of `/etc/shadow`, a `readme` up the tree) is refused after
 * packaging even when the plan's rules were bypassed, with the real cargo; a plain crate packs.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, tempDir, type TestApp } from "../../../test/harness";
import { packageCrate, PackFailure, tarEntries, type PackContext } from "./pack";
import type { ModulePlan, PlannedModule } from "./module-plan";

let t: TestApp;
let root: string;
const logs: string[] = [];

beforeAll(async () => {
  t = await createTestApp();
  root = tempDir("ops-pack-");
});
afterAll(() => t.close());

function crate(n: string, manifest: string): { ctx: PackContext; plan: ModulePlan; m: PlannedModule } {
  const treeDir = path.join(root, n, "tree");
  const dir = path.join(treeDir, "modules", "beta");
  mkdirSync(path.join(dir, "src"), { recursive: true });
  writeFileSync(path.join(dir, "src", "lib.rs"), "pub fn beta() -> u8 { 2 }\n");
  writeFileSync(path.join(dir, "LICENSE"), "MIT, the module's own\n");
  writeFileSync(path.join(treeDir, "outside.txt"), "a file of the repository outside the module\n");
  const m: PlannedModule = { name: "beta", dir: "modules/beta", description: "", crate: { name: "acme-beta", manifest, requires: [], skip: false }, layer: null, requires: [], locales: [], notes: [] };
  const plan: ModulePlan = { tag: "v1.0.0", version: "1.0.0", commit: "0".repeat(40), modules: [m], log: [] };
  const ctx: PackContext = { core: t.core, treeDir, workDir: path.join(root, n, "work"), log: (_l, line) => void logs.push(line), project: { id: "p" } };
  return { ctx, plan, m };
}

const head = `[package]\nname = "acme-beta"\nversion = "1.0.0"\nedition = "2021"\ndescription = "beta"\n`;

describe("packageCrate", () => {
  test("a crate of the module's own files packs, with its license file", async () => {
    const { ctx, plan, m } = crate("own", `${head}license-file = "LICENSE"\n`);
    const out = await packageCrate(ctx, plan, m);
    const names = [...tarEntries(out.crate)].map((e) => e.name);
    expect(names).toContain("acme-beta-1.0.0/LICENSE");
    expect(names).toContain("acme-beta-1.0.0/src/lib.rs");
  });

  test("a license-file or readme outside the module (a host file, a repository file up the tree) is refused, and no crate is returned", async () => {
    for (const [n, extra] of [
      ["shadow", `license-file = "/etc/hostname"\n`],
      ["up", `readme = "../../../../tree/outside.txt"\n`],
    ] as const) {
      const { ctx, plan, m } = crate(n, `${head}${extra}`);
      const err = await packageCrate(ctx, plan, m).then(
        () => null,
        (e) => e,
      );
      expect(err).toBeInstanceOf(PackFailure);
      expect((err as Error).message).toContain("not files of modules/beta: refused");
      expect((err as Error).message).toContain(n === "shadow" ? '"hostname"' : '"outside.txt"');
    }
  });
});
