/**
 * The real clients a consumer of published modules uses, each with its own home in a temp dir:
 * `cargo build` of a crate that depends on a published crate through ops's sparse registry (token
 * from the `cargo:token` provider), `npm install` of a published layer (token in an .npmrc), and
 * a loopback server that fails its first requests (a flaky download a package's prepack script
 * makes), to fail a publish's `layers` step for real.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { tempDir, freePort, type TestApp } from "./harness";
import { run, writeTree, type RunResult } from "./support/registries";

export interface Consumers {
  /** Build a binary crate depending on `deps` (Cargo.toml lines); returns the build, the binary's stdout and Cargo.lock. */
  cargoBuild(deps: string, main: string): Promise<{ build: RunResult; stdout: string; lock: string; dir: string }>;
  /** `npm install` `pkgs` into a fresh project; returns the install, the project dir and its package-lock.json. */
  npmInstall(pkgs: string[]): Promise<{ install: RunResult; dir: string; lock: string }>;
}

/** Clients reading with `token` (packages.read in the publishing project). */
export function consumers(t: TestApp, token: string): Consumers {
  const cargoHome = tempDir("ops-modules-cargo-home-");
  const target = tempDir("ops-modules-cargo-target-");
  writeTree(cargoHome, {
    "config.toml": `[registries.ops]\nindex = "sparse+${t.url}/cargo/"\n\n[registry]\nglobal-credential-providers = ["cargo:token"]\n\n[net]\nretry = 0\n`,
  });
  const npmHome = tempDir("ops-modules-npm-home-");
  const rc = path.join(npmHome, "npmrc");
  writeFileSync(rc, `registry=${t.url}/npm/\n//${new URL(t.url).host}/npm/:_authToken=${token}\nupdate-notifier=false\nfund=false\naudit=false\n`);
  return {
    async cargoBuild(deps, main) {
      const dir = tempDir("ops-modules-app-");
      writeTree(dir, { "Cargo.toml": `[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n${deps}`, "src/main.rs": main });
      const env = {
        HOME: cargoHome,
        CARGO_HOME: cargoHome,
        CARGO_TARGET_DIR: target,
        CARGO_REGISTRIES_OPS_TOKEN: token,
        CARGO_TERM_COLOR: "never",
        CARGO_NET_RETRY: "0",
        RUSTUP_HOME: process.env.RUSTUP_HOME ?? path.join(process.env.HOME ?? "/root", ".rustup"),
      };
      const build = await run(["cargo", "build", "--quiet"], { cwd: dir, env, timeoutMs: 240_000 });
      const exe = build.code === 0 ? await run([path.join(target, "debug", "app")], { cwd: dir }) : null;
      return { build, stdout: exe?.stdout ?? "", lock: build.code === 0 ? readFileSync(path.join(dir, "Cargo.lock"), "utf8") : "", dir };
    },
    async npmInstall(pkgs) {
      const dir = tempDir("ops-modules-npm-app-");
      writeTree(dir, { "package.json": JSON.stringify({ name: "app", version: "0.0.0", private: true }) });
      const install = await run(["npm", "install", ...pkgs], {
        cwd: dir,
        env: { HOME: npmHome, npm_config_userconfig: rc, npm_config_cache: path.join(npmHome, "cache"), npm_config_loglevel: "warn", npm_config_prefer_online: "true" },
      });
      return { install, dir, lock: install.code === 0 ? readFileSync(path.join(dir, "package-lock.json"), "utf8") : "" };
    },
  };
}

/** A loopback server whose first `failures` requests answer 503, then 200. */
/**
 * An asset host on the host's 127.0.0.1 that answers 503 `failures` times. A sandbox reaches it only
 * when the test lists its `port` in OPS_SANDBOX_HOST_PORTS, as an operator would for a host service.
 */
export function flakyServer(failures: number, port = freePort()): { url: string; hits: () => number; stop: () => void } {
  let n = 0;
  const server = Bun.serve({
    port,
    hostname: "127.0.0.1",
    fetch: () => {
      n++;
      return n <= failures ? new Response("try again later", { status: 503 }) : new Response("asset");
    },
  });
  return { url: `http://127.0.0.1:${server.port}/asset`, hits: () => n, stop: () => server.stop(true) };
}

/** A prepack script that downloads an asset from `url` and fails when the server does. */
export function fetchingPrepack(url: string): string {
  return `node -e "fetch('${url}').then(r => { if (!r.ok) { console.error('asset download failed: ' + r.status); process.exit(1); } console.log('asset downloaded'); })"`;
}
