/**
 * Sparse-index fetches per second: `GET /cargo/se/rd/serde-lite` (a 20-version index file, with
 * the bare token cargo sends) on `ops serve` against a bare Bun.serve answering the same bytes
 * from memory (Verdaccio has no cargo registry, so the baseline is the cheapest possible static
 * file server). Also the 304 revalidation cargo does on every later build (`If-None-Match`).
 *
 * Standalone: `bun bench/cargo-index.bench.ts [--duration S]`; or `npm run bench -- cargo-index`.
 */
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, parseWrk, assertNoErrors, type BenchContext, type LoadResult, runAlone } from "./lib";
import { seedDataDir, tarGz, putAll } from "./registry-seed";
import { cargoPublishBody } from "../src/domains/registries/cargo/service";

export const name = "cargo-index";
export const description = "sparse index file fetches: ops /cargo/ vs a bare Bun.serve static file";

const CRATE = "serde-lite";

function publishBody(vers: string): Uint8Array<ArrayBuffer> {
  const crate = tarGz({ [`${CRATE}-${vers}/Cargo.toml`]: `[package]\nname = "${CRATE}"\nversion = "${vers}"\nedition = "2021"\n`, [`${CRATE}-${vers}/src/lib.rs`]: "pub fn f() {}\n" });
  const meta = { name: CRATE, vers, deps: [{ name: "itoa", version_req: "^1", features: [], optional: false, default_features: true, target: null, kind: "normal" }], features: { default: [] }, links: null };
  return cargoPublishBody(meta, crate);
}

/** wrk with request headers (the context's `measure` sends none). */
function measure(ctx: BenchContext, url: string, headers: Record<string, string>): LoadResult {
  const wrk = Bun.which("wrk");
  if (!wrk) throw new Error("wrk is not installed");
  const args = [wrk, `-t${ctx.load.threads}`, `-c${ctx.load.connections}`, `-d${ctx.load.duration}s`, "--latency", ...Object.entries(headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]), url];
  const r = Bun.spawnSync(args, { stdout: "pipe", stderr: "pipe", timeout: (ctx.load.duration + 30) * 1000 });
  if (r.exitCode !== 0) throw new Error(`wrk failed: ${r.stderr.toString()}`);
  return parseWrk(r.stdout.toString());
}

export async function run(ctx: BenchContext): Promise<string> {
  const seeded = await seedDataDir([{ registry: "cargo", name: CRATE }]);
  const ops = await ctx.startServer([ctx.binary, "serve", "--data-dir", seeded.dataDir, "--listen", "127.0.0.1:{port}"], "/readyz");
  const versions = Array.from({ length: 20 }, (_, i) => `1.${i}.0`);
  await putAll(versions.map((v) => ({ url: `${ops.url}/cargo/api/v1/crates/new`, body: publishBody(v), headers: { authorization: seeded.token } })));
  const url = `${ops.url}/cargo/se/rd/${CRATE}`;
  const first = await fetch(url, { headers: { authorization: seeded.token } });
  const body = await first.text();
  const etag = first.headers.get("etag")!;
  if (first.status !== 200 || body.trimEnd().split("\n").length !== versions.length) throw new Error(`the index file is not what was published (${first.status})`);

  const opsFull = measure(ctx, url, { authorization: seeded.token });
  const opsRevalidate = measure(ctx, url, { authorization: seeded.token, "if-none-match": etag });
  await ops.stop();

  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-static-"));
  const file = path.join(dir, CRATE);
  writeFileSync(file, body);
  const stat = await ctx.startServer([process.execPath, path.join(ROOT, "bench/static-file-server.ts"), "{port}", file], "/health");
  const base = measure(ctx, `${stat.url}/file`, { authorization: seeded.token });
  await stat.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(path.dirname(seeded.dataDir), { recursive: true, force: true });

  // wrk counts the 304 answers as non-2xx, so only the 200 rounds must be error-free.
  assertNoErrors({ ops: opsFull, "Bun.serve": base });

  return (
    `cargo-index: ops ${opsFull.requestsPerSec} req/s (200, ${body.length} B index file), Bun.serve static file ${base.requestsPerSec} req/s, ratio ${(opsFull.requestsPerSec / base.requestsPerSec).toFixed(2)}; ` +
    `ops 304 revalidation ${opsRevalidate.requestsPerSec} req/s (p50 ${opsFull.p50Ms.toFixed(2)} ms vs ${base.p50Ms.toFixed(2)} ms, p99 ${opsFull.p99Ms.toFixed(2)} ms vs ${base.p99Ms.toFixed(2)} ms; ` +
    `${ctx.load.connections} connections, ${ctx.load.threads} threads, ${ctx.load.duration} s each)`
  );
}

if (import.meta.main) await runAlone(run);
