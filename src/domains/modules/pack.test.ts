/**
 * `cargo package` in the project's sandbox (pack.ts), with the real cargo: a crate whose manifest
 * reaches out of its module for a file the sandbox sees (a host system file, ops's own cargo
 * configuration beside the staging copy) is refused after packaging even when the plan's rules
 * were bypassed; a plain crate packs.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, tempDir, type TestApp } from "../../../test/harness";
import { packageCrate, PackFailure, type PackContext } from "./pack";
import { tarEntries } from "./tar";
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

  test("a license-file or readme outside the module (a host file the sandbox sees, ops's cargo configuration) is refused, and no crate is returned", async () => {
    for (const [n, extra] of [
      ["system", `license-file = "/etc/nsswitch.conf"\n`],
      ["up", `readme = "../cargo-home/config.toml"\n`],
    ] as const) {
      const { ctx, plan, m } = crate(n, `${head}${extra}`);
      const err = await packageCrate(ctx, plan, m).then(
        () => null,
        (e) => e,
      );
      expect(err).toBeInstanceOf(PackFailure);
      expect((err as Error).message).toContain("not files of modules/beta: refused");
      expect((err as Error).message).toContain(n === "system" ? '"nsswitch.conf"' : '"config.toml"');
    }
  });
});
