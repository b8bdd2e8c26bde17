/**
 * HTTPS through ops's ingress beside nginx, both terminating TLS with the same P-256 certificate
 * and proxying to the same sample app (bench/hello-server.ts): full TLS handshakes per second (wrk
 * with `Connection: close`, so every request is a new connection and handshake) and kept-alive
 * requests per second over TLS. Same run, rounds in alternation (median of 3), as in
 * ingress.bench.ts; CPU time per request from /proc beside the rates. The goal (issue 26): ops at
 * least 0.8× nginx on both.
 *
 * The ingress runs alone in a child Bun process (`bun bench/https.bench.ts ingress <port>
 * <tls port> <app port> <dir>`), with the certificate in its store under the name wrk sends
 * (127.0.0.1). nginx runs one worker, TLS 1.2/1.3, its default session cache off (wrk does not
 * resume sessions, so neither side gets to).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, assertNoErrors, freePort, runAlone, type BenchContext, type ChildServer, type LoadResult } from "./lib";

export const name = "https";
export const description = "HTTPS through the ingress vs nginx, same certificate: handshakes/s and keep-alive req/s";

const NGINX = "/usr/sbin/nginx";

function nginxConf(dir: string, appPort: number, tlsPort: number): string {
  return `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream app { server 127.0.0.1:${appPort}; keepalive 64; }
  server {
    listen 127.0.0.1:__PORT__;
    listen 127.0.0.1:${tlsPort} ssl;
    ssl_certificate ${dir}/cert.pem;
    ssl_certificate_key ${dir}/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }
}
`;
}

function mid(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

function median(rs: LoadResult[]): LoadResult {
  const sorted = [...rs].sort((x, y) => x.requestsPerSec - y.requestsPerSec);
  return { ...sorted[Math.floor(sorted.length / 2)]!, errors: rs.reduce((n, r) => n + r.errors, 0) };
}

interface Side {
  server: ChildServer;
  tlsUrl: string;
}

async function round(ctx: BenchContext, side: Side, seconds: number, close: boolean): Promise<{ load: LoadResult; cpuUs: number }> {
  const before = side.server.cpuMs();
  const load = await ctx.measure(`${side.tlsUrl}/health`, close ? { Connection: "close" } : {}, seconds);
  return { load, cpuUs: load.requests > 0 ? ((side.server.cpuMs() - before) * 1000) / load.requests : NaN };
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
    writeFileSync(path.join(dir, "nginx.tpl"), nginxConf(dir, appPort, nginxTls));
    const ops: Side = { server: await ctx.startServer([process.execPath, import.meta.path, "ingress", "{port}", String(opsTls), String(appPort), dir], "/health"), tlsUrl: `https://127.0.0.1:${opsTls}` };
    const nginx: Side = {
      server: await ctx.startServer(["/bin/sh", "-c", `sed "s/__PORT__/$1/" ${path.join(dir, "nginx.tpl")} > ${path.join(dir, "nginx.conf")} && exec ${NGINX} -p ${dir} -c ${path.join(dir, "nginx.conf")}`, "sh", "{port}"], "/health"),
      tlsUrl: `https://127.0.0.1:${nginxTls}`,
    };
    const seconds = Math.max(2, Math.round(ctx.load.duration / 3));
    const out: Record<string, { ops: LoadResult; nginx: LoadResult; cpuOps: number; cpuNginx: number }> = {};
    for (const mode of ["handshakes", "keep-alive"] as const) {
      const r = { ops: [] as LoadResult[], nginx: [] as LoadResult[] };
      const cpu = { ops: [] as number[], nginx: [] as number[] };
      for (let n = 0; n < 3; n++) {
        for (const [k, side] of [["ops", ops], ["nginx", nginx]] as const) {
          const x = await round(ctx, side, seconds, mode === "handshakes");
          r[k].push(x.load);
          cpu[k].push(x.cpuUs);
        }
      }
      out[mode] = { ops: median(r.ops), nginx: median(r.nginx), cpuOps: mid(cpu.ops), cpuNginx: mid(cpu.nginx) };
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

/** Child mode: the ingress alone, plain on `port` (readiness) and TLS on `tlsPort`, routing to the app. */
async function serveIngress(port: number, tlsPort: number, appPort: number, dir: string): Promise<void> {
  const { createIngress } = await import("../src/adapters/ingress/ingress");
  const ingress = createIngress();
  ingress.setService({ service: { project: "bench", environment: "production", service: "hello" }, routes: [{ hosts: ["127.0.0.1", "localhost"] }], upstreams: [{ host: "127.0.0.1", port: appPort }] });
  ingress.certificates.set("127.0.0.1", { cert: readFileSync(path.join(dir, "cert.pem"), "utf8"), key: readFileSync(path.join(dir, "key.pem"), "utf8") });
  await ingress.listenTls("127.0.0.1", tlsPort);
  ingress.listen("127.0.0.1", port);
  process.on("SIGTERM", () => void ingress.stop(1000).then(() => process.exit(0)));
}

if (import.meta.main) {
  if (process.argv[2] === "ingress") await serveIngress(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]), process.argv[6]!);
  else await runAlone(run);
}
