/**
 * The native builder's overhead: the build commands of a small Node app (`npm ci` of two
 * dependencies served as tarballs from loopback, then `npm run build`) run by ops's native
 * builder (bubblewrap sandbox, memory cgroup, dependency cache mounts, cache accounting) beside the
 * same commands run by hand in a plain `sh -c` with the same npm cache layout. Cold: both start
 * with an empty npm cache; warm: both reuse the cache their cold run filled. Rounds alternate
 * between the two sides; medians are compared. Goal: ratio ≤ 1.3 warm. Packing the output into
 * an image is timed on its own (it has no by-hand counterpart).
 *
 * Standalone: `bun bench/native-build.bench.ts [--rounds N]`; or `npm run bench -- native-build`.
 */
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BenchContext } from "./lib";
import { tarGz } from "./registry-seed";
import { runNativeBuild } from "../src/adapters/builder/native";
import { DEFAULT_PATH } from "../src/adapters/runtime/process";
import { packImage } from "../src/domains/builds/image";

export const name = "native-build";
export const description = "npm ci + build of a small Node app: ops's native builder vs the same commands in a plain shell, cold and warm cache";

const BUILD = ["npm ci --no-audit --no-fund", "npm run build"];

function dependency(pkg: string): Uint8Array<ArrayBuffer> {
  const code = Array.from({ length: 400 }, (_, i) => `exports.f${i} = (x) => x * ${i} + ${JSON.stringify(pkg)}.length;`).join("\n");
  return tarGz({ "package/package.json": JSON.stringify({ name: pkg, version: "1.0.0", main: "index.js", license: "MIT" }), "package/index.js": code });
}

/** The app's files, with a lockfile pointing at `base` for its two dependencies. */
function appFiles(base: string, deps: Record<string, Uint8Array>): Record<string, string> {
  const url = (pkg: string) => `${base}/${pkg}-1.0.0.tgz`;
  const names = Object.keys(deps);
  const integrity = (pkg: string) => `sha512-${createHash("sha512").update(deps[pkg]).digest("base64")}`;
  return {
    "package.json": JSON.stringify({
      name: "bench-app",
      version: "1.0.0",
      dependencies: Object.fromEntries(names.map((n) => [n, url(n)])),
      scripts: { build: "node build.js" },
    }),
    "package-lock.json": JSON.stringify({
      name: "bench-app",
      version: "1.0.0",
      lockfileVersion: 3,
      requires: true,
      packages: {
        "": { name: "bench-app", version: "1.0.0", dependencies: Object.fromEntries(names.map((n) => [n, url(n)])) },
        ...Object.fromEntries(names.map((n) => [`node_modules/${n}`, { version: "1.0.0", resolved: url(n), integrity: integrity(n) }])),
      },
    }),
    "build.js": `const fs = require("fs");\nfs.mkdirSync("dist", { recursive: true });\nconst parts = ${JSON.stringify(names)}.map((n) => Object.keys(require(n)).length);\nfs.writeFileSync("dist/server.js", "console.log(" + JSON.stringify(parts) + ")\\n");\n`,
    "server.js": "require('http').createServer((q, s) => s.end('ok')).listen(process.env.PORT)\n",
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function byHand(context: string, home: string): Promise<number> {
  const started = performance.now();
  for (const command of BUILD) {
    const proc = Bun.spawn(["sh", "-c", command], { cwd: context, env: { PATH: DEFAULT_PATH, HOME: home, CI: "true" }, stdout: "ignore", stderr: "pipe", stdin: "ignore" });
    const err = await new Response(proc.stderr).text();
    if ((await proc.exited) !== 0) throw new Error(`by hand: ${command} failed: ${err}`);
  }
  return performance.now() - started;
}

export async function run(_ctx?: BenchContext, rounds = 3): Promise<string> {
  const root = mkdtempSync(path.join(tmpdir(), "ops-bench-build-"));
  chmodSync(root, 0o755);
  const deps = { "bench-left": dependency("bench-left"), "bench-right": dependency("bench-right") };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const m = /^\/(bench-(?:left|right))-1\.0\.0\.tgz$/.exec(new URL(req.url).pathname);
      return m ? new Response(deps[m[1] as keyof typeof deps]) : new Response("not found", { status: 404 });
    },
  });
  const files = appFiles(`http://127.0.0.1:${server.port}`, deps);
  const source = path.join(root, "source");
  mkdirSync(source);
  for (const [rel, text] of Object.entries(files)) writeFileSync(path.join(source, rel), text);
  let n = 0;
  const fresh = () => {
    const dir = path.join(root, `run${++n}`);
    cpSync(source, path.join(dir, "src"), { recursive: true });
    return dir;
  };
  const ops = { cold: [] as number[], warm: [] as number[] };
  const hand = { cold: [] as number[], warm: [] as number[] };
  const pack: number[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const opsCache = path.join(root, `ops-cache-${round}`);
      const handHome = path.join(root, `hand-home-${round}`);
      mkdirSync(handHome);
      for (const phase of ["cold", "warm"] as const) {
        const sides = round % 2 === 0 ? (["ops", "hand"] as const) : (["hand", "ops"] as const);
        for (const side of sides) {
          const dir = fresh();
          if (side === "hand") {
            hand[phase].push(await byHand(path.join(dir, "src"), handHome));
            continue;
          }
          const started = performance.now();
          const res = await runNativeBuild(
            { contextDir: path.join(dir, "src"), workDir: path.join(dir, "work"), cacheDir: opsCache, checks: [], build: BUILD, variables: [], memoryMb: 2048, stepTimeoutSecs: 600, output: "." },
            { onLine: () => {} },
          );
          ops[phase].push(performance.now() - started);
          if (res.status !== "succeeded") throw new Error(`ops build failed: ${res.error}`);
          if (res.cacheHit !== (phase === "warm" ? 1 : 0)) throw new Error(`cache_hit ${res.cacheHit} on a ${phase} build`);
          if (phase === "warm") {
            const t0 = performance.now();
            await packImage({ outputDir: res.outputDir!, layerFile: path.join(dir, "layer.tar.gz"), start: "node server.js", port: 8080, commit: "bench", commitTime: Date.now(), source: "bench/app" });
            pack.push(performance.now() - t0);
          }
        }
      }
    }
  } finally {
    server.stop(true);
    rmSync(root, { recursive: true, force: true });
  }
  const f = (ms: number) => `${Math.round(ms)} ms`;
  const [ow, hw, oc, hc] = [median(ops.warm), median(hand.warm), median(ops.cold), median(hand.cold)];
  return (
    `native-build: warm ops ${f(ow)}, shell ${f(hw)}, ratio ${(ow / hw).toFixed(2)} (goal ≤ 1.3); ` +
    `cold ops ${f(oc)}, shell ${f(hc)}, ratio ${(oc / hc).toFixed(2)} ` +
    `(npm ci of 2 loopback dependencies + npm run build; pack into an image ${f(median(pack))}; median of ${rounds} alternating rounds)`
  );
}

if (import.meta.main) {
  const i = process.argv.indexOf("--rounds");
  console.log(await run(undefined, i > 0 ? Number(process.argv[i + 1]) : 3));
}
