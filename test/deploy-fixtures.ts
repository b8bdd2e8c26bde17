/**
 * Deploy test helpers: signed images of a small Node HTTP app written the way the native builder
 * writes them (the builds domain's image writer, the in-process push and the estate signature),
 * the ingress listening on a loopback port, and requests through it by Host.
 *
 * The app is runtime-fixtures' APP_JS (`/` JSON with what it sees, `/crash`, `/slow`, WebSocket
 * echo …) behind a wrapper that adds `/version` (APP_VERSION) and `/healthz` (500 when
 * HEALTH=fail), so each pushed version is told apart and one can fail its health check, and
 * `/say?text=…` (logs the text, as an app logs what a visitor sent).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { TestApp } from "./harness";
import { tempDir } from "./harness";
import { APP_JS } from "./runtime-fixtures";
import { packImage } from "../src/domains/builds/image";
import { ensureSigningKey, signImage } from "../src/domains/builds/signing";
import { pushPacked } from "./support/builds";
import { ingressOf } from "../src/adapters/ingress";

export const WRAP_JS = String.raw`
const http = require("http");
const create = http.createServer;
http.createServer = (handler) => create((req, res) => {
  if (req.url === "/version") { res.setHeader("content-type", "text/plain"); return res.end(process.env.APP_VERSION || ""); }
  if (req.url === "/healthz") { res.statusCode = process.env.HEALTH === "fail" ? 500 : 200; return res.end(process.env.HEALTH === "fail" ? "sick" : "ok"); }
  // Logs what a visitor sent, as many apps log a request's path or a form field.
  // The descriptors a program the app starts inherits (what a sandbox let in besides stdio).
  if (req.url === "/fds") { res.setHeader("content-type", "text/plain"); return res.end(require("child_process").execSync("ls -l /proc/self/fd").toString()); }
  if (req.url.startsWith("/say?")) { console.log("visitor said " + new URL(req.url, "http://x").searchParams.get("text")); return res.end("noted"); }
  return handler(req, res);
});
require("./server.js");
`;

export interface AppVersion {
  version: string;
  /** `fail` makes /healthz answer 500. */
  health?: "ok" | "fail";
  /** Replaces the start command (e.g. one that exits at once). */
  start?: string;
  /** The commit the image says it was built from (default a made-up one). */
  commit?: string;
}

let n = 0;

/** Pack, push and (unless `signed: false`) sign a version of the app as `<project>/<service>:<version>`; returns its digest. */
export async function pushApp(t: TestApp, project: string, service: string, app: AppVersion, opts: { signed?: boolean } = {}): Promise<string> {
  const work = tempDir("ops-deploy-image-");
  const out = path.join(work, "out");
  mkdirSync(out);
  writeFileSync(path.join(out, "server.js"), APP_JS);
  writeFileSync(path.join(out, "wrap.js"), WRAP_JS);
  const repo = `${project}/${service}`;
  const img = await packImage({
    outputDir: out,
    layerFile: path.join(work, "layer.tar.gz"),
    start: app.start ?? `APP_VERSION=${app.version} HEALTH=${app.health ?? "ok"} exec node wrap.js`,
    port: 8080,
    commit: app.commit ?? `c0ffee${(++n).toString(16).padStart(2, "0")}${app.version}`.padEnd(40, "0").slice(0, 40),
    commitTime: Date.UTC(2026, 2, 4),
    source: repo,
  });
  const pushed = await pushPacked(t.core, img, repo, app.version);
  if (opts.signed !== false) {
    ensureSigningKey(t.core);
    await signImage(t.core, repo, pushed.digest);
  }
  return pushed.digest;
}

/** Start the test app's ingress on a free loopback port; returns its base URL. */
export function listenIngress(t: TestApp): string {
  return ingressOf(t.core).listen("127.0.0.1", 0).url;
}

/** GET `p` through the ingress as `host`. */
export function viaIngress(base: string, host: string, p = "/", init: RequestInit = {}): Promise<Response> {
  return fetch(base + p, { ...init, headers: { ...(init.headers as Record<string, string>), host } });
}

export function defaultHostOf(project: string, service: string, environment = "production"): string {
  return `${service}.${environment}.${project}.localhost`;
}
