/**
 * Push to a signed image: the time from `git push` (the real git CLI, to the built-in host of the
 * compiled `ops serve`) until the build of the sample Node app has signed its image — cloned,
 * checked, built in the sandbox, scanned, packed, pushed into the embedded registry and signed (the
 * rollout that follows is not counted) — beside the
 * same build commands run by hand in a plain `sh -c` (`npm ci` of two dependencies served as
 * tarballs from loopback, then `npm run build`). Cold: a new service (empty dependency cache) and
 * an empty npm cache by hand; warm: the next push of the same service and the hand side's cache
 * reused. The ratio is ops's overhead; goal ≤ 1.3 warm. Rounds alternate sides; the ratio is the
 * median of the rounds' own ratios (each round's two sides run back to back), with the ratio of
 * the two sides' medians beside it.
 *
 * Standalone: `bun bench/build-push.bench.ts [--rounds N]`; or `npm run bench -- build-push`.
 */
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureBinary, type BenchContext } from "./lib";
import { byHand, median, sampleApp, sh } from "./sample-app";
import { DEFAULT_PATH } from "../src/adapters/runtime/process";

export const name = "build-push";
export const description = "git push to a signed image of a small Node app (npm ci + build) through ops serve, cold and warm cache, vs the build commands in a plain shell";

const EMAIL = "bench@ops.test";
const PASSWORD = "bench-owner-password";

interface Api {
  base: string;
  token: string;
}

async function call<T>(api: Api, method: string, p: string, body?: unknown): Promise<T> {
  const res = await fetch(`${api.base}${p}`, { method, headers: { authorization: `Bearer ${api.token}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

interface BuildView {
  id: number;
  status: string;
  cache_hit?: number | null;
  error?: string | null;
  finished_at?: string | null;
  step_timings: Array<{ step: string; started_at: string; finished_at?: string | null }>;
}

/**
 * Push main and wait for the build newer than `after` to end. The time is the end of its sign
 * step (the server's clock, the same machine's) minus the moment `git push` started, so the
 * polling interval adds nothing; polls are 100 ms apart to stay out of the build's way.
 */
async function pushAndWait(api: Api, slug: string, work: string, gitEnv: Record<string, string>, after: number): Promise<{ ms: number; build: BuildView }> {
  const pushedAt = Date.now();
  const started = performance.now();
  await sh(["git", "push", "-q", "origin", "main"], work, gitEnv);
  for (;;) {
    const [latest] = await call<BuildView[]>(api, "GET", `/api/v1/projects/${slug}/builds?limit=1`);
    if (latest && latest.id > after && ["healthy", "failed", "cancelled"].includes(latest.status)) {
      if (latest.status !== "healthy") throw new Error(`build ${latest.id} ended ${latest.status}: ${latest.error}`);
      // Signed is the end of the build's own work; the rollout that follows is the deployments'.
      const signed = latest.step_timings.find((s) => s.step === "sign");
      if (!signed?.finished_at) throw new Error(`build ${latest.id} has no finished signing step`);
      const ms = Date.parse(signed.finished_at) - pushedAt;
      return { ms, build: latest };
    }
    if (performance.now() - started > 300_000) throw new Error("the build did not finish within 5 minutes");
    await Bun.sleep(100);
  }
}

/**
 * Seven rounds by default: on a 2-core machine a single build or shell run moves by ±50 ms, and a
 * median of three rounds still moved the ratio by ±0.05 from one run to the next.
 */
export async function run(_ctx?: BenchContext, rounds = 7): Promise<string> {
  // OPS_BENCH_BINARY runs another build of ops (to compare two builds on the same machine and load).
  const binary = process.env.OPS_BENCH_BINARY ?? ensureBinary();
  const root = mkdtempSync(path.join(tmpdir(), "ops-bench-push-"));
  chmodSync(root, 0o755);
  const app = sampleApp(path.join(root, "source"));
  const source = app.source;

  const portProbe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = portProbe.port as number;
  portProbe.stop(true);
  const ops = Bun.spawn([binary, "serve", "--data-dir", path.join(root, "data"), "--listen", `127.0.0.1:${port}`], {
    cwd: root,
    // The dependency server stands for a registry on the host: sandboxes reach it only as a listed host port.
    env: { ...process.env, OPS_BOOTSTRAP_EMAIL: EMAIL, OPS_BOOTSTRAP_PASSWORD: PASSWORD, OPS_INGRESS_LISTEN: "off", OPS_LOG_LEVEL: "warn", OPS_SANDBOX_HOST_PORTS: String(app.port) },
    stdout: "ignore",
    stderr: "inherit",
  });
  const base = `http://127.0.0.1:${port}`;
  const gitHome = path.join(root, "git-home");
  mkdirSync(gitHome);
  const gitEnv = { PATH: DEFAULT_PATH, HOME: gitHome, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_TERMINAL_PROMPT: "0", GIT_AUTHOR_NAME: "Bench", GIT_AUTHOR_EMAIL: "bench@ops.test", GIT_COMMITTER_NAME: "Bench", GIT_COMMITTER_EMAIL: "bench@ops.test" };
  const result = { ops: { cold: [] as number[], warm: [] as number[] }, hand: { cold: [] as number[], warm: [] as number[] } };
  const steps = new Map<string, number[]>();
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        if ((await fetch(`${base}/readyz`)).status === 200) break;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline || ops.exitCode !== null) throw new Error("ops serve did not become ready");
      await Bun.sleep(50);
    }
    const login = (await (await fetch(`${base}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: EMAIL, password: PASSWORD }) })).json()) as { token: string };
    const api = { base, token: login.token };
    for (let round = 0; round < rounds; round++) {
      const slug = `bench${round}`;
      await call(api, "POST", "/api/v1/projects", { slug, name: slug });
      const repo = (await call<{ repo: string }>(api, "POST", `/api/v1/projects/${slug}/sources`, { repo: `${slug}/app` })).repo;
      await call(api, "PUT", `/api/v1/projects/${slug}/resources/service/web`, { spec: { source: { repo }, port: 3000 } });
      const work = path.join(root, `work${round}`);
      cpSync(source, work, { recursive: true });
      const remote = new URL(`${base}/git/${repo}.git`);
      remote.username = "x";
      remote.password = api.token;
      await sh(["git", "init", "-q", "-b", "main"], work, gitEnv);
      await sh(["git", "remote", "add", "origin", remote.toString()], work, gitEnv);
      await sh(["git", "add", "-A"], work, gitEnv);
      await sh(["git", "commit", "-q", "-m", "Bench app"], work, gitEnv);
      const handHome = path.join(root, `hand-home-${round}`);
      mkdirSync(handHome);
      let last = 0;
      for (const phase of ["cold", "warm"] as const) {
        if (phase === "warm") {
          writeFileSync(path.join(work, "CHANGES.md"), `round ${round}\n`);
          await sh(["git", "add", "-A"], work, gitEnv);
          await sh(["git", "commit", "-q", "-m", "A change"], work, gitEnv);
        }
        const sides = round % 2 === 0 ? (["ops", "hand"] as const) : (["hand", "ops"] as const);
        for (const side of sides) {
          if (side === "hand") {
            const dir = path.join(root, `hand-${round}-${phase}`);
            cpSync(source, dir, { recursive: true });
            result.hand[phase].push(await byHand(dir, handHome));
            continue;
          }
          const { ms, build } = await pushAndWait(api, slug, work, gitEnv, last);
          last = build.id;
          if (build.cache_hit !== (phase === "warm" ? 1 : 0)) throw new Error(`cache_hit ${build.cache_hit} on a ${phase} build`);
          result.ops[phase].push(ms);
          if (phase === "warm") {
            for (const s of build.step_timings) {
              if (!s.finished_at) continue;
              const list = steps.get(s.step) ?? [];
              list.push(new Date(s.finished_at).getTime() - new Date(s.started_at).getTime());
              steps.set(s.step, list);
            }
          }
        }
      }
    }
  } finally {
    if (ops.exitCode === null) ops.kill("SIGTERM");
    await ops.exited;
    app.stop();
    rmSync(root, { recursive: true, force: true });
  }
  const f = (ms: number) => `${Math.round(ms)} ms`;
  const [ow, hw, oc, hc] = [median(result.ops.warm), median(result.hand.warm), median(result.ops.cold), median(result.hand.cold)];
  // Each round's own ratio (its two sides ran back to back) cancels the machine's drift between
  // rounds; the ratio of the two medians is shown beside it.
  const paired = (phase: "cold" | "warm") => median(result.ops[phase].map((ms, i) => ms / result.hand[phase][i]!));
  const breakdown = [...steps.entries()].map(([s, xs]) => `${s} ${f(median(xs))}`).join(", ");
  return (
    `build-push: warm push→signed ${f(ow)}, shell ${f(hw)}, ratio ${paired("warm").toFixed(2)} (goal ≤ 1.3; of the medians ${(ow / hw).toFixed(2)}); ` +
    `cold push→signed ${f(oc)}, shell ${f(hc)}, ratio ${paired("cold").toFixed(2)} (of the medians ${(oc / hc).toFixed(2)}) ` +
    `(npm ci of 2 loopback dependencies + npm run build; warm steps: ${breakdown}; medians of ${rounds} alternating rounds, ratio per round)`
  );
}

if (import.meta.main) {
  const i = process.argv.indexOf("--rounds");
  console.log(await run(undefined, i > 0 ? Number(process.argv[i + 1]) : 7));
}
