/**
 * `npm install` of a package tree (31 packages, 3 versions each, two levels of dependencies)
 * from ops's npm registry against Verdaccio 5.33 on the same machine, in the same run: both
 * serve the same tarballs over loopback, both require a token, npm starts each run with an
 * empty cache and an empty project (`--prefer-online`). Runs alternate between the two and the
 * medians are compared.
 *
 * Standalone: `bun bench/npm-install.bench.ts [--runs N]`; or `npm run bench -- npm-install`.
 * Verdaccio comes from the devDependency (`node_modules/verdaccio`), or from `VERDACCIO_BIN`.
 */
import { mkdtempSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, runAloneTimes, type BenchContext } from "./lib";
import { seedDataDir, npmPublishBody, tarGz, putAll } from "./registry-seed";

export const name = "npm-install";
export const description = "npm install of a 31-package tree: ops /npm/ vs Verdaccio 5.33";

const VERSIONS = ["1.0.0", "1.1.0", "1.2.0"];

/** root → a0..a4 → b0..b24: every package in three versions, each with ~6 KB of code. */
function packageTree(): Array<{ name: string; deps: string[] }> {
  const out: Array<{ name: string; deps: string[] }> = [];
  const a = Array.from({ length: 5 }, (_, i) => `@ops/bench-a${i}`);
  out.push({ name: "@ops/bench-root", deps: a });
  for (let i = 0; i < 5; i++) out.push({ name: a[i], deps: Array.from({ length: 5 }, (_, j) => `@ops/bench-b${i * 5 + j}`) });
  for (let k = 0; k < 25; k++) out.push({ name: `@ops/bench-b${k}`, deps: [] });
  return out;
}

function publishBodies(): Array<{ name: string; body: string }> {
  const bodies: Array<{ name: string; body: string }> = [];
  for (const p of packageTree()) {
    for (const version of VERSIONS) {
      const manifest = { name: p.name, version, main: "index.js", license: "MIT", dependencies: Object.fromEntries(p.deps.map((d) => [d, "^1.0.0"])) };
      const code = `// ${p.name}@${version}\n` + Array.from({ length: 120 }, (_, i) => `exports.f${i} = (x) => x * ${i} + ${JSON.stringify(p.name)}.length;`).join("\n");
      const tarball = tarGz({ "package/package.json": JSON.stringify(manifest, null, 2), "package/index.js": code, "package/README.md": `# ${p.name}\n` });
      bodies.push({ name: p.name, body: npmPublishBody(p.name, version, tarball, manifest) });
    }
  }
  return bodies;
}

function verdaccioBin(): string {
  const bin = process.env.VERDACCIO_BIN ?? path.join(ROOT, "node_modules", "verdaccio", "bin", "verdaccio");
  if (!existsSync(bin)) throw new Error(`Verdaccio is not installed (${bin}); run npm install (it is a devDependency) or set VERDACCIO_BIN`);
  return bin;
}

function verdaccioConfig(dir: string): string {
  const file = path.join(dir, "config.yaml");
  writeFileSync(
    file,
    [
      `storage: ${path.join(dir, "storage")}`,
      "auth:",
      "  htpasswd:",
      `    file: ${path.join(dir, "htpasswd")}`,
      "    max_users: 10",
      "uplinks: {}",
      "packages:",
      "  '**':",
      "    access: $authenticated",
      "    publish: $authenticated",
      "max_body_size: 100mb",
      "log: { type: stdout, format: pretty, level: error }",
      "",
    ].join("\n"),
  );
  return file;
}

/** One cold `npm install @ops/bench-root`; returns wall-clock ms. */
async function install(registry: string, token: string): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-npm-"));
  try {
    const host = new URL(registry);
    const rc = path.join(dir, ".npmrc");
    writeFileSync(rc, `registry=${registry}\n//${host.host}${host.pathname}:_authToken=${token}\nupdate-notifier=false\nfund=false\naudit=false\n`);
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "bench-app", version: "0.0.0", private: true }));
    const t0 = performance.now();
    const proc = Bun.spawn(["npm", "install", "@ops/bench-root", "--prefer-online", "--ignore-scripts", "--loglevel=error"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, npm_config_userconfig: rc, npm_config_cache: path.join(dir, "cache") },
      stdout: "ignore",
      stderr: "pipe",
    });
    const code = await proc.exited;
    const ms = performance.now() - t0;
    if (code !== 0) throw new Error(`npm install from ${registry} failed: ${await new Response(proc.stderr).text()}`);
    if (!existsSync(path.join(dir, "node_modules", "@ops", "bench-b24", "index.js"))) throw new Error(`npm install from ${registry} did not install the whole tree`);
    return ms;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function run(ctx: BenchContext, runs = 5): Promise<string> {
  const bodies = publishBodies();
  const names = [...new Set(bodies.map((b) => b.name))];

  const seeded = await seedDataDir(names.map((n) => ({ registry: "npm" as const, name: n })));
  const ops = await ctx.startServer([ctx.binary, "serve", "--data-dir", seeded.dataDir, "--listen", "127.0.0.1:{port}"], "/readyz");
  const opsRegistry = `${ops.url}/npm/`;
  await putAll(bodies.map((b) => ({ url: `${ops.url}/npm/${encodeURIComponent(b.name)}`, body: b.body, headers: { "content-type": "application/json", authorization: `Bearer ${seeded.token}` } })));

  const vdir = mkdtempSync(path.join(tmpdir(), "ops-bench-verdaccio-"));
  const verdaccio = await ctx.startServer(["node", verdaccioBin(), "--config", verdaccioConfig(vdir), "--listen", "127.0.0.1:{port}"], "/-/ping");
  const user = await fetch(`${verdaccio.url}/-/user/org.couchdb.user:bench`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ _id: "org.couchdb.user:bench", name: "bench", password: "bench-password-1", type: "user", roles: [] }),
  });
  const vtoken = ((await user.json()) as { token?: string }).token;
  if (!vtoken) throw new Error(`Verdaccio did not create the user (${user.status})`);
  await putAll(bodies.map((b) => ({ url: `${verdaccio.url}/${encodeURIComponent(b.name)}`, body: b.body, headers: { "content-type": "application/json", authorization: `Bearer ${vtoken}` } })));
  const verdaccioRegistry = `${verdaccio.url}/`;

  // One warm-up each (npm's own start-up, the servers' first requests), then alternate.
  await install(opsRegistry, seeded.token);
  await install(verdaccioRegistry, vtoken);
  const opsMs: number[] = [];
  const vMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    if (i % 2 === 0) {
      opsMs.push(await install(opsRegistry, seeded.token));
      vMs.push(await install(verdaccioRegistry, vtoken));
    } else {
      vMs.push(await install(verdaccioRegistry, vtoken));
      opsMs.push(await install(opsRegistry, seeded.token));
    }
  }
  await ops.stop();
  await verdaccio.stop();
  rmSync(vdir, { recursive: true, force: true });
  rmSync(path.dirname(seeded.dataDir), { recursive: true, force: true });

  const o = median(opsMs);
  const v = median(vMs);
  return (
    `npm-install: ops ${o.toFixed(0)} ms, Verdaccio 5.33 ${v.toFixed(0)} ms (median of ${runs} cold installs of ${names.length} packages × ${VERSIONS.length} versions), ` +
    `ratio Verdaccio/ops ${(v / o).toFixed(2)}; ops runs ${opsMs.map((x) => x.toFixed(0)).join(", ")}; Verdaccio runs ${vMs.map((x) => x.toFixed(0)).join(", ")}`
  );
}

if (import.meta.main) await runAloneTimes(run);
