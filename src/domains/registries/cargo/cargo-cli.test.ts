/**
 * Real cargo against the sparse registry, with CARGO_HOME in a temp dir and the token from the
 * `cargo:token` credential provider: publish two crates where one depends on the other, build a
 * third crate against them, yank, and check a fresh lockfile avoids the yanked version. Only
 * loopback is used (no crates.io dependency anywhere).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, tempDir, type TestApp } from "../../../../test/harness";
import { registryCast, claim, run, writeTree, type RegistryCast } from "../../../../test/support/registries";

let t: TestApp;
let cast: RegistryCast;
let cargoHome: string;
let targetDir: string;

async function cargo(args: string[], cwd: string, token: string) {
  return run(["cargo", ...args], {
    cwd,
    timeoutMs: 240_000,
    env: {
      HOME: cargoHome,
      CARGO_HOME: cargoHome,
      CARGO_TARGET_DIR: targetDir,
      CARGO_REGISTRIES_OPS_TOKEN: token,
      CARGO_TERM_COLOR: "never",
      CARGO_HTTP_TIMEOUT: "30",
      CARGO_NET_RETRY: "0",
      RUSTUP_HOME: process.env.RUSTUP_HOME ?? path.join(process.env.HOME ?? "/root", ".rustup"),
    },
  });
}

function crate(name: string, version: string, deps = "", src = "pub fn value() -> u32 { 1 }\n", bin = false): string {
  const dir = tempDir(`ops-crate-${name}-`);
  writeTree(dir, {
    "Cargo.toml": `[package]\nname = "${name}"\nversion = "${version}"\nedition = "2021"\ndescription = "test crate ${name}"\nlicense = "MIT"\npublish = ["ops"]\n\n[dependencies]\n${deps}`,
    [bin ? "src/main.rs" : "src/lib.rs"]: src,
  });
  return dir;
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  cargoHome = tempDir("ops-cargo-home-");
  targetDir = tempDir("ops-cargo-target-");
  writeTree(cargoHome, {
    "config.toml": `[registries.ops]\nindex = "sparse+${t.url}/cargo/"\n\n[registry]\nglobal-credential-providers = ["cargo:token"]\n\n[net]\nretry = 0\n`,
  });
  await claim(t, cast, "cargo", "ops-alpha");
  await claim(t, cast, "cargo", "ops_beta");
});
afterAll(() => t.close());

describe("cargo", () => {
  test("cargo publish of two crates where one depends on the other", async () => {
    const a = await cargo(["publish", "--registry", "ops", "--no-verify", "--allow-dirty"], crate("ops-alpha", "0.1.0"), cast.publisherToken);
    expect(a.stderr).toContain("Published ops-alpha v0.1.0");
    expect(a.code).toBe(0);
    const b = await cargo(
      ["publish", "--registry", "ops", "--no-verify", "--allow-dirty"],
      crate("ops_beta", "0.2.0", `ops-alpha = { version = "0.1", registry = "ops" }\n`, "pub fn value() -> u32 { ops_alpha::value() + 1 }\n"),
      cast.publisherToken,
    );
    expect(b.stderr).toContain("Published ops_beta v0.2.0");
    expect(b.code).toBe(0);
    const line = JSON.parse((await (await t.request("GET", "/cargo/op/s_/ops_beta", { headers: { authorization: cast.readerToken } })).text()).trim());
    expect(line.deps).toEqual([expect.objectContaining({ name: "ops-alpha", req: "^0.1", kind: "normal", registry: null })]);
  });

  test("cargo build of a third crate that depends on them through the sparse registry", async () => {
    const app = crate("app", "0.1.0", `ops_beta = { version = "0.2", registry = "ops" }\n`, 'fn main() { println!("{}", ops_beta::value()); }\n', true);
    const build = await cargo(["build", "--quiet"], app, cast.readerToken);
    expect(build.stderr).not.toContain("error");
    expect(build.code).toBe(0);
    const exe = await run([path.join(targetDir, "debug", "app")], { cwd: app });
    expect(exe.stdout.trim()).toBe("2");
    const lock = readFileSync(path.join(app, "Cargo.lock"), "utf8");
    expect(lock).toContain(`source = "sparse+${t.url}/cargo/"`);
    expect(lock).toMatch(/name = "ops-alpha"\nversion = "0.1.0"/);
  });

  test("cargo yank, then a fresh lockfile no longer picks the yanked version; unyank brings it back", async () => {
    expect((await cargo(["publish", "--registry", "ops", "--no-verify", "--allow-dirty"], crate("ops-alpha", "0.1.1"), cast.publisherToken)).code).toBe(0);
    const app = crate("app2", "0.1.0", `ops-alpha = { version = "0.1", registry = "ops" }\n`, "fn main() {}\n", true);
    expect((await cargo(["generate-lockfile"], app, cast.readerToken)).code).toBe(0);
    expect(readFileSync(path.join(app, "Cargo.lock"), "utf8")).toMatch(/name = "ops-alpha"\nversion = "0.1.1"/);

    const denied = await cargo(["yank", "--registry", "ops", "ops-alpha@0.1.1"], app, cast.readerToken);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain("403");

    const yank = await cargo(["yank", "--registry", "ops", "ops-alpha@0.1.1"], app, cast.publisherToken);
    expect(yank.code).toBe(0);
    expect((await cargo(["generate-lockfile"], app, cast.readerToken)).code).toBe(0);
    expect(readFileSync(path.join(app, "Cargo.lock"), "utf8")).toMatch(/name = "ops-alpha"\nversion = "0.1.0"/);

    expect((await cargo(["yank", "--undo", "--registry", "ops", "ops-alpha@0.1.1"], app, cast.publisherToken)).code).toBe(0);
    expect((await cargo(["generate-lockfile"], app, cast.readerToken)).code).toBe(0);
    expect(readFileSync(path.join(app, "Cargo.lock"), "utf8")).toMatch(/name = "ops-alpha"\nversion = "0.1.1"/);
  });

  test("a republish, an unclaimed crate and a reader's publish are refused", async () => {
    const again = await cargo(["publish", "--registry", "ops", "--no-verify", "--allow-dirty"], crate("ops-alpha", "0.1.0"), cast.publisherToken);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("already exists");
    const unclaimed = await cargo(["publish", "--registry", "ops", "--no-verify", "--allow-dirty"], crate("ops-gamma", "0.1.0"), cast.publisherToken);
    expect(unclaimed.code).not.toBe(0);
    expect(unclaimed.stderr).toContain("403");
    expect(unclaimed.stderr).toContain("not claimed");
    const reader = await cargo(["publish", "--registry", "ops", "--no-verify", "--allow-dirty"], crate("ops-alpha", "0.3.0"), cast.readerToken);
    expect(reader.code).not.toBe(0);
    expect(reader.stderr).toContain("403");
  });
});
