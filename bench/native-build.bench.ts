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
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BenchContext } from "./lib";
import { BUILD, byHand, median, sampleApp } from "./sample-app";
import { runNativeBuild } from "../src/adapters/builder/native";
import { packImage } from "../src/domains/builds/image";

export const name = "native-build";
export const description = "npm ci + build of a small Node app: ops's native builder vs the same commands in a plain shell, cold and warm cache";

export async function run(_ctx?: BenchContext, rounds = 3): Promise<string> {
  const root = mkdtempSync(path.join(tmpdir(), "ops-bench-build-"));
  chmodSync(root, 0o755);
  const app = sampleApp(path.join(root, "source"));
  const source = app.source;
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
    app.stop();
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
