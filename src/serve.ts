/**
 * `ops serve`: the long-running server. Start order: a backup into `backups/pre-<version>` when
 * migrations are pending → core (migrations) → domains' serve work →
 * HTTP listener → ingress listeners (OPS_INGRESS_LISTEN, OPS_INGRESS_TLS_LISTEN) → scheduler → ready. On SIGTERM/SIGINT:
 * /readyz goes 503, both listeners stop taking connections, in-flight requests finish (bounded by
 * OPS_SHUTDOWN_GRACE_MS), the scheduler stops, close hooks flush (replicas are stopped there),
 * the databases close, and the process exits 0. On SIGHUP the same drain ends in an exec of the
 * binary at the same path, on the same ports (`ops restart`), and the replicas keep running: they
 * are handed over to the new image instead of stopped (docs/decisions/0390).
 */
import type { Config } from "./core/config";
import { createCore, createHttpApp, closeCore, modulesOf, maxBodyLimit, type CoreOptions, type HttpApp } from "./app";
import type { Core } from "./core/core";
import { startIngress, startIngressTls } from "./adapters/ingress";
import type { PemPair } from "./adapters/ingress/tls";
import { setOwnCertificateSink } from "./domains/certificates/service";
import { backupBeforeMigrating } from "./domains/backups/service";
import { VERSION } from "./version";
import { execReplace, selfArgv } from "./reexec";
import { writePidFile } from "./commands/restart";
import { handOverReplicas } from "./adapters/runtime";
import { claimHandover, prepareHandover } from "./adapters/runtime/handover";
import type { RuntimeHandover } from "./adapters/runtime/types";
import { RUNTIME_LOCAL } from "./adapters/runtime";
import { INGRESS_LOCAL, type Ingress } from "./adapters/ingress";
import { createLogger, stdoutSink } from "./core/log";
import { attachDataPlane, type DataPlaneLink } from "./dataplane/client";
import { remoteIngress, remoteRuntime } from "./dataplane/remote";
import { LINK_LOCAL } from "./dataplane/status";

export interface RunningServer {
  core: Core;
  /** The app behind the listener (`app.handle` still answers in-process once the listener closed). */
  app: HttpApp;
  url: string;
  port: number;
  /** The ingress's address while it listens (null when off or not bound). */
  ingressUrl: string | null;
  /** The ingress's HTTPS address while it listens (null when off or not bound). */
  ingressTlsUrl: string | null;
  /** Drain and close; resolves when everything is closed. */
  shutdown(reason: string): Promise<void>;
}

/**
 * Stop before the data dir changes when ops's own address is taken: a first start that failed
 * later would have printed the estate owner's password once, and the next start prints none
 * (docs/decisions/0440).
 */
function assertListenable(config: Config): void {
  const { host, port } = config.listen;
  if (port === 0) return;
  try {
    Bun.listen({ hostname: host, port, socket: { data() {} } }).stop(true);
  } catch (e) {
    throw new Error(`cannot listen on ${host}:${port} (${(e as Error).message}; is something else using it?). Choose another address with OPS_LISTEN=${host}:PORT or --listen ${host}:PORT (and OPS_INGRESS_LISTEN for the apps' port).`);
  }
}

/**
 * The data plane's ingress once it reports its listeners (it may still be starting), logged like
 * the in-process one; null when the ingress is off.
 */
async function planeIngressReady(core: Core, ingress: ReturnType<typeof remoteIngress>): Promise<Ingress | null> {
  if (!core.config.ingressListen && !core.config.ingressTlsListen) {
    core.log.info("the ingress is off (OPS_INGRESS_LISTEN=off)");
    return null;
  }
  const until = Date.now() + 10_000;
  while (!(ingress.part?.listen || ingress.part?.tlsListen || ingress.part?.error) && Date.now() < until) await Bun.sleep(20);
  const part = ingress.part;
  const { ingressListen: plain, ingressTlsListen: tls } = core.config;
  if (plain && !part?.listen) core.log.error("the ingress could not listen; services are not reachable through it", { listen: `${plain.host}:${plain.port}`, err: part?.error ?? "the data plane's ingress did not answer in time", setting: "OPS_INGRESS_LISTEN", pid: part?.pid ?? null });
  if (tls && !part?.tlsListen) core.log.error("the ingress could not listen for HTTPS; services are not reachable over it", { listen: `${tls.host}:${tls.port}`, err: part?.error ?? "the data plane's ingress did not answer in time", setting: "OPS_INGRESS_TLS_LISTEN", pid: part?.pid ?? null });
  if (part?.listen || part?.tlsListen) core.log.info(part.listen ? "the ingress is serving" : "the ingress is serving HTTPS", { listen: part.listen, tls_listen: part.tlsListen, pid: part.pid, process: "data plane" });
  return ingress;
}

export async function startServer(config: Config, opts: CoreOptions & { installSignals?: boolean } = {}): Promise<RunningServer> {
  assertListenable(config);
  // First, before anything is spawned: the replicas the previous image handed over (ops restart).
  const claim = claimHandover(config.dataDir);
  const pre = await backupBeforeMigrating(config.dataDir, VERSION);
  // The data plane (decision 0600): replicas and the ingress in processes that outlive this one.
  let link: DataPlaneLink | null = null;
  let planeIngress: ReturnType<typeof remoteIngress> | null = null;
  let planeRuntime: ReturnType<typeof remoteRuntime> | null = null;
  const locals: Array<[string, unknown]> = [];
  // The data plane always runs the ingress; it holds the replicas when ops supervises them itself
  // (the process runtime). On an engine (OPS_RUNTIME=docker or swarm) the engine supervises them
  // and the control plane drives it directly.
  if (config.dataPlane === "process") {
    const log = createLogger(config.logLevel, opts.logSink ?? stdoutSink).child({ component: "serve" });
    link = await attachDataPlane(config, log);
    const replicas = await link.channel.request("runtime.list", {});
    log.info(link.started ? "started the data plane" : "attached to the running data plane; its replicas kept serving", { pid: link.hello.pid, replicas: replicas.length, since: new Date(link.hello.startedAt).toISOString() });
    planeIngress = remoteIngress(link, log);
    locals.push([INGRESS_LOCAL, planeIngress], [LINK_LOCAL, link]);
    if (config.runtime === "process") {
      planeRuntime = remoteRuntime(link, replicas, { log });
      locals.push([RUNTIME_LOCAL, planeRuntime]);
    }
  }
  const core = createCore(config, { ...opts, locals });
  if (link) {
    // A data plane that dies takes its replicas along: start everything again the way a restart
    // does (the new image starts a new data plane and the reconcile starts every service).
    link.onLost = () => {
      core.log.error("the data plane went away (its replicas with it); restarting ops to start it again", { pid: link?.hello.pid });
      if (opts.installSignals) process.kill(process.pid, "SIGHUP");
    };
  }
  if (claim?.refused) core.log.warn("refused the hand-over of replicas", { reason: claim.refused, replicas: claim.replicas });
  // OPS_TLS=acme (decision 0345): ops's own listener serves HTTPS once its certificate is here; a
  // new or renewed certificate starts a listener beside the old one (SO_REUSEPORT), and the old
  // one stops taking connections and finishes those it has.
  let app: HttpApp | null = null;
  let own: PemPair | null = null;
  const listenOwn = () => {
    const old = app!.server;
    app!.listen({ hostname: config.listen.host, port: old?.port ?? config.listen.port, maxRequestBodySize: maxBodyLimit(core), idleTimeout: 120, reusePort: config.tls === "acme", ...(own ? { tls: { cert: own.cert, key: own.key } } : {}) });
    if (old) void old.stop(false);
    if (own) core.log.info("ops's own listener serves HTTPS", { public_url: config.publicUrl });
  };
  if (config.tls === "acme") {
    setOwnCertificateSink(core, (pair) => {
      own = pair;
      if (app?.server) listenOwn();
    });
  }
  if (pre) core.log.info("backed up the data dir before migrating", { place: `backups/pre-${VERSION}`, id: pre.id, files: pre.stats.files });
  for (const m of modulesOf(core)) await m.onServe?.(core);
  app = createHttpApp(core);
  listenOwn();
  if (!app.server) throw new Error("the HTTP server did not start");
  if (config.tls === "acme" && !own) core.log.warn("ops's own listener serves plain HTTP until its certificate is issued", { public_url: config.publicUrl });
  let ingress: Ingress | null;
  if (planeIngress) ingress = await planeIngressReady(core, planeIngress);
  else {
    const plainIngress = startIngress(core);
    ingress = (await startIngressTls(core)) ?? plainIngress;
  }
  core.scheduler.start();
  core.state.ready = true;
  // Start-up (migrations, the domains' serve work, the console's assets) leaves garbage an idle
  // server would hold for minutes: collected once now, it is memory the data plane's processes
  // may use instead (decision 0600).
  if (process.env.OPS_TEST_NO_GC !== "1") setTimeout(() => Bun.gc(true), 1000).unref();
  const port = app.server.port ?? config.listen.port;
  const url = `http://${config.listen.host.includes(":") ? `[${config.listen.host}]` : config.listen.host}:${port}`;
  core.log.info("ops is serving", { listen: url, public_url: config.publicUrl, data_dir: config.dataDir, version: core.version });

  let closing: Promise<void> | null = null;
  let handover: RuntimeHandover | null = null;
  const shutdown = (reason: string): Promise<void> => {
    if (closing) return closing;
    closing = (async () => {
      core.log.info("shutting down", { reason });
      core.state.draining = true;
      core.state.closing = reason === "SIGHUP" ? "restart" : "stop";
      const grace = config.shutdownGraceMs;
      const server = app!.server!;
      const stopped = server.stop(false);
      const ingressStopped = ingress?.stop(grace);
      const timedOut = await Promise.race([stopped.then(() => false), Bun.sleep(grace).then(() => true)]);
      if (timedOut) {
        core.log.warn("in-flight requests did not finish in time; closing them", { grace_ms: grace });
        await server.stop(true);
      }
      await ingressStopped;
      await core.scheduler.stop(grace);
      // A restart keeps the replicas: taken out of the runtime before its close hook stops the rest.
      if (reason === "SIGHUP") handover = handOverReplicas(core);
      // The data plane keeps serving through a restart; a stop of ops stops it (and its replicas).
      if (link && reason === "SIGHUP") link.detach();
      else if (link) await link.shutdown(grace);
      await closeCore(core);
      // Every line handed over before the detach is stored now: the next image replays only what came after.
      if (link && planeRuntime) link.ack(planeRuntime.delivered);
      core.log.info("stopped");
    })();
    return closing;
  };

  if (opts.installSignals) {
    const onSignal = (sig: string) => {
      void shutdown(sig).then(
        () => process.exit(0),
        (e) => {
          core.log.error("shutdown failed", { err: e });
          process.exit(1);
        },
      );
    };
    process.once("SIGTERM", () => onSignal("SIGTERM"));
    process.once("SIGINT", () => onSignal("SIGINT"));
    // SIGHUP (`ops restart`, `systemctl reload ops`, `ops self-update`): drain like SIGTERM, then
    // exec the binary at the same path on the same ports, keeping the pid (docs/decisions/0387).
    process.once("SIGHUP", () => {
      void shutdown("SIGHUP").then(
        async () => {
          const argv = selfArgv();
          const kept = handover ? prepareHandover(config.dataDir, handover) : null;
          core.log.info("re-executing", { argv: argv.join(" "), replicas_kept: handover?.replicas.length ?? 0 });
          await Bun.sleep(20); // let the log line reach stdout before the image goes
          // On failure the process exits: the replicas die with it (--die-with-parent) and
          // systemd's Restart=on-failure starts ops, which starts them again.
          const failure = execReplace(argv, { ...process.env, ...kept?.env });
          core.log.error("restart failed", { err: failure });
          process.exit(1);
        },
        (e) => {
          core.log.error("shutdown failed", { err: e });
          process.exit(1);
        },
      );
    });
    writePidFile(config.dataDir, core.state.startedAt);
  }
  return { core, app, url, port, ingressUrl: ingress?.address?.url ?? null, ingressTlsUrl: ingress?.tlsAddress?.url ?? null, shutdown };
}
