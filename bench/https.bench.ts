/**
 * HTTPS through ops's ingress beside nginx, both terminating TLS with the same P-256 certificate
 * and proxying to the same sample app (bench/hello-server.ts): full TLS handshakes per second (wrk
 * with `Connection: close`, so every request is a new connection and handshake) and kept-alive
 * requests per second over TLS. Same run, rounds in alternation (median of 3), as in
 * ingress.bench.ts; CPU time per request from /proc beside the rates. The goal (issue 26): ops at
 * least 0.8× nginx on both.
 *
 * The ingress runs alone in a child Bun process (bench/proxies.ts), with the certificate in its
 * store under the name wrk sends (127.0.0.1). nginx runs one worker, TLS 1.2/1.3, its default session cache off (wrk does not
 * resume sessions, so neither side gets to).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, assertNoErrors, freePort, medianRound, runAlone, type BenchContext, type ChildServer, type LoadResult } from "./lib";
import { NGINX, cpuRound, mid, startNginx, startOpsIngress } from "./proxies";

export const name = "https";
export const description = "HTTPS through the ingress vs nginx, same certificate: handshakes/s and keep-alive req/s";

interface Side {
  server: ChildServer;
  tlsUrl: string;
}

export async function run(ctx: BenchContext): Promise<string> {
  if (!(await Bun.file(NGINX).exists())) throw new Error(`${NGINX} is missing (apt-get install nginx)`);
  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-https-"));
  try {
    const gen = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem")], { stderr: "pipe" });
    if (gen.exitCode !== 0) throw new Error(gen.stderr.toString());
    const app = await ctx.startServer([process.execPath, path.join(ROOT, "bench/hello-server.ts"), "{port}"], "/health");
    const appPort = Number(new URL(app.url).port);
    const opsTls = freePort();
    const nginxTls = freePort();
    const ops: Side = { server: await startOpsIngress(ctx, appPort, { port: opsTls, dir }), tlsUrl: `https://127.0.0.1:${opsTls}` };
    const nginx: Side = { server: await startNginx(ctx, dir, appPort, { tlsPort: nginxTls }), tlsUrl: `https://127.0.0.1:${nginxTls}` };
    const seconds = Math.max(2, Math.round(ctx.load.duration / 3));
    const out: Record<string, { ops: LoadResult; nginx: LoadResult; cpuOps: number; cpuNginx: number }> = {};
    for (const mode of ["handshakes", "keep-alive"] as const) {
      const r = { ops: [] as LoadResult[], nginx: [] as LoadResult[] };
      const cpu = { ops: [] as number[], nginx: [] as number[] };
      for (let n = 0; n < 3; n++) {
        for (const [k, side] of [["ops", ops], ["nginx", nginx]] as const) {
          const x = await cpuRound(ctx, side.server, `${side.tlsUrl}/health`, seconds, mode === "handshakes" ? { Connection: "close" } : {});
          r[k].push(x.load);
          cpu[k].push(x.cpuUs);
        }
      }
      out[mode] = { ops: medianRound(r.ops), nginx: medianRound(r.nginx), cpuOps: mid(cpu.ops), cpuNginx: mid(cpu.nginx) };
    }
    for (const s of [ops.server, nginx.server, app]) await s.stop();
    assertNoErrors({ "ops handshakes": out.handshakes!.ops, "nginx handshakes": out.handshakes!.nginx, "ops keep-alive": out["keep-alive"]!.ops, "nginx keep-alive": out["keep-alive"]!.nginx });
    const line = (mode: string) => {
      const m = out[mode]!;
      const ratio = m.ops.requestsPerSec / m.nginx.requestsPerSec;
      return `${mode}: ops ${m.ops.requestsPerSec}/s, nginx ${m.nginx.requestsPerSec}/s, ops/nginx ${ratio.toFixed(2)} (goal >= 0.80: ${ratio >= 0.8 ? "met" : "not met"}), CPU per request ops ${m.cpuOps.toFixed(1)} µs, nginx ${m.cpuNginx.toFixed(1)} µs`;
    };
    return `https: ${line("handshakes")}; ${line("keep-alive")} (${ctx.load.connections} connections, ${ctx.load.threads} threads; median of 3 alternating rounds; one P-256 certificate)`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runAlone(run);
