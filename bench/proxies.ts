/**
 * The sides of the ingress benchmarks (ingress.bench.ts, https.bench.ts): ops's ingress alone in
 * a child Bun process, nginx with the usual reverse-proxy settings in front of the same sample
 * app, and a wrk round against either that also reads the CPU time the side spent on it.
 *
 * The ingress runs in a child process of its own (this file, `bun bench/proxies.ts ingress <port>
 * <app port> [<tls port> <dir>]`), with a route table holding the app as one service: the same
 * `createIngress` that `ops serve` runs, alone so that the API server's own work (scheduler,
 * probes) is not counted against it. With a TLS port it also serves the certificate in `<dir>`
 * (cert.pem, key.pem) under the name wrk sends (127.0.0.1). nginx runs one worker (its compiled
 * default), with upstream keep-alive; in the ingress bench it sends the replica the same forwarded
 * headers ops does (X-Forwarded-For/-Proto/-Host, X-Real-IP, Forwarded) and the Host as received.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { processCpuMs, type BenchContext, type ChildServer, type LoadResult } from "./lib";

export const NGINX = "/usr/sbin/nginx";

/** What an nginx side adds to plain HTTP proxying. */
export interface NginxOptions {
  /** Also listen with TLS on this port, with `<dir>/cert.pem` and `<dir>/key.pem`. */
  tlsPort?: number;
  /**
   * Send the replica every forwarded header ops's ingress sends (src/adapters/ingress/forwarded.ts):
   * X-Forwarded-Host, X-Real-IP and Forwarded besides X-Forwarded-For and -Proto, so both sides
   * do the same work and the app parses the same head from each.
   */
  forwardedHost?: boolean;
  /** `worker_processes` (default 1, nginx's compiled default; `auto` = one per core). */
  workers?: number | "auto";
}

/** nginx's configuration proxying to the app on `appPort`; `__PORT__` stands for its plain port. */
export function nginxConf(dir: string, appPort: number, opts: NginxOptions = {}): string {
  const tls = opts.tlsPort
    ? `
    listen 127.0.0.1:${opts.tlsPort} ssl;
    ssl_certificate ${dir}/cert.pem;
    ssl_certificate_key ${dir}/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;`
    : "";
  const forwardedHost = opts.forwardedHost
    ? `
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header Forwarded "for=$remote_addr;host=\\"$http_host\\";proto=$scheme";`
    : "";
  return `daemon off;
worker_processes ${opts.workers ?? 1};
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
    listen 127.0.0.1:__PORT__;${tls}
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;${forwardedHost}
    }
  }
}
`;
}

/** A shell line that writes `<dir>/<out>` from the template `<dir>/<tpl>`, `__PORT__` replaced by the script's `$1`. */
export function fillPort(dir: string, tpl: string, out: string): string {
  return `sed "s/__PORT__/$1/" ${path.join(dir, tpl)} > ${path.join(dir, out)}`;
}

/** nginx in `dir` on a port the context picks, proxying to the app on `appPort`. */
export async function startNginx(ctx: BenchContext, dir: string, appPort: number, opts: NginxOptions = {}): Promise<ChildServer> {
  writeFileSync(path.join(dir, "nginx.tpl"), nginxConf(dir, appPort, opts));
  return ctx.startServer(["/bin/sh", "-c", `${fillPort(dir, "nginx.tpl", "nginx.conf")} && exec ${NGINX} -p ${dir} -c ${path.join(dir, "nginx.conf")}`, "sh", "{port}"], "/health");
}

/**
 * ops's ingress alone in a child process, routing to the app on `appPort`; with `tls`, TLS on its
 * port too; `workers` processes on the same port as the data plane runs them (its CPU counts all).
 */
export async function startOpsIngress(ctx: BenchContext, appPort: number, tls?: { port: number; dir: string }, netns?: { path: string; ident: string }, workers = 1): Promise<ChildServer> {
  const argv = (port: string) => [process.execPath, import.meta.path, "ingress", port, String(appPort), ...(tls ? [String(tls.port), tls.dir] : [])];
  // Inside a replica's namespace (decision 0601): the child enters it through this process's descriptor.
  const env = netns ? ["/usr/bin/env", `OPS_BENCH_NETNS=${netns.path}|${netns.ident}`] : [];
  const first = await ctx.startServer([...env, ...argv("{port}")], "/health");
  if (workers <= 1) return first;
  const port = new URL(first.url).port;
  const more = Array.from({ length: workers - 1 }, () => Bun.spawn([...env, ...argv(port)], { stdout: "ignore", stderr: "inherit" }));
  await Bun.sleep(1000);
  return {
    url: first.url,
    cpuMs: () => first.cpuMs() + more.reduce((n, p) => n + processCpuMs(p.pid), 0),
    async stop() {
      for (const p of more) p.kill("SIGTERM");
      await Promise.all(more.map((p) => p.exited));
      await first.stop();
    },
  };
}

/** Middle value. */
export function mid(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

/** One wrk round against `url` (a path on `side`), with the CPU time per request (µs) the side spent meanwhile. */
export async function cpuRound(ctx: BenchContext, side: ChildServer, url: string, seconds: number, headers: Record<string, string> = {}): Promise<{ load: LoadResult; cpuUs: number }> {
  const before = side.cpuMs();
  const load = await ctx.measure(url, headers, seconds);
  return { load, cpuUs: load.requests > 0 ? ((side.cpuMs() - before) * 1000) / load.requests : NaN };
}

/** Child mode: the ingress alone, plain on `port` (readiness), routing every host to the app; TLS on `tlsPort` when given. */
async function serveIngress(port: number, appPort: number, tlsPort?: number, dir?: string): Promise<void> {
  const { createIngress } = await import("../src/adapters/ingress/ingress");
  // As the data plane runs it: several processes may share the port (OPS_INGRESS_WORKERS).
  const ingress = createIngress({ reusePort: true });
  const [nsPath, nsIdent] = (process.env.OPS_BENCH_NETNS ?? "").split("|");
  ingress.setService({
    service: { project: "bench", environment: "production", service: "hello" },
    routes: [{ hosts: ["127.0.0.1", "localhost"] }],
    upstreams: [{ host: "127.0.0.1", port: appPort, ...(nsPath ? { netns: { path: nsPath, ident: nsIdent! } } : {}) }],
  });
  if (tlsPort !== undefined && dir !== undefined) {
    ingress.certificates.set("127.0.0.1", { cert: readFileSync(path.join(dir, "cert.pem"), "utf8"), key: readFileSync(path.join(dir, "key.pem"), "utf8") });
    await ingress.listenTls("127.0.0.1", tlsPort);
  }
  ingress.listen("127.0.0.1", port);
  process.on("SIGTERM", () => void ingress.stop(1000).then(() => process.exit(0)));
}

if (import.meta.main && process.argv[2] === "ingress") {
  const [port, appPort, tlsPort, dir] = process.argv.slice(3);
  await serveIngress(Number(port), Number(appPort), tlsPort === undefined ? undefined : Number(tlsPort), dir);
}
