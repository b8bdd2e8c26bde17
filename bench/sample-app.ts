/**
 * The small Node app the build benchmarks build (native-build, build-push): two dependencies
 * served as tarballs from a loopback server, a lockfile pointing at it, an `ops.toml`, and the
 * same build commands run by hand in a plain `sh -c` as the baseline.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import path from "node:path";
import { tarGz } from "./registry-seed";
import { DEFAULT_PATH } from "../src/adapters/runtime/process";

export const BUILD = ["npm ci --no-audit --no-fund", "npm run build"];

function dependency(pkg: string): Uint8Array<ArrayBuffer> {
  const code = Array.from({ length: 400 }, (_, i) => `exports.f${i} = (x) => x * ${i} + ${JSON.stringify(pkg)}.length;`).join("\n");
  return tarGz({ "package/package.json": JSON.stringify({ name: pkg, version: "1.0.0", main: "index.js", license: "MIT" }), "package/index.js": code });
}

/** The app's files, with a lockfile pointing at `base` for its two dependencies, and its ops.toml. */
function appFiles(base: string, deps: Record<string, Uint8Array>): Record<string, string> {
  const url = (pkg: string) => `${base}/${pkg}-1.0.0.tgz`;
  const names = Object.keys(deps);
  const integrity = (pkg: string) => `sha512-${createHash("sha512").update(deps[pkg]).digest("base64")}`;
  return {
    "ops.toml": `[services.web]\nbuild = ${JSON.stringify(BUILD)}\nstart = "node dist/server.js"\nport = 3000\noutput = "."\n`,
    "package.json": JSON.stringify({ name: "bench-app", version: "1.0.0", dependencies: Object.fromEntries(names.map((n) => [n, url(n)])), scripts: { build: "node build.js" } }),
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
    "build.js": `const fs = require("fs");\nfs.mkdirSync("dist", { recursive: true });\nconst parts = ${JSON.stringify(names)}.map((n) => Object.keys(require(n)).length);\nfs.writeFileSync("dist/server.js", "require('http').createServer((q, s) => s.end(" + JSON.stringify(JSON.stringify(parts)) + ")).listen(process.env.PORT)\\n");\n`,
  };
}

export interface SampleApp {
  /** A directory holding the app's files. */
  source: string;
  /** The dependency server's port on 127.0.0.1 (a host port builds may reach: OPS_SANDBOX_HOST_PORTS). */
  port: number;
  /** Stop the dependency server. */
  stop(): void;
}

/** Serve the two dependencies on loopback and write the app into `dir`. */
export function sampleApp(dir: string): SampleApp {
  const deps = { "bench-left": dependency("bench-left"), "bench-right": dependency("bench-right") };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const m = /^\/(bench-(?:left|right))-1\.0\.0\.tgz$/.exec(new URL(req.url).pathname);
      return m ? new Response(deps[m[1] as keyof typeof deps]) : new Response("not found", { status: 404 });
    },
  });
  mkdirSync(dir, { recursive: true });
  for (const [rel, text] of Object.entries(appFiles(`http://127.0.0.1:${server.port}`, deps))) writeFileSync(path.join(dir, rel), text);
  return { source: dir, port: server.port as number, stop: () => server.stop(true) };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Run `argv` to its end; throws with its stderr when it fails. */
export async function sh(argv: string[], cwd: string, env: Record<string, string>): Promise<void> {
  const proc = Bun.spawn(argv, { cwd, env, stdout: "ignore", stderr: "pipe", stdin: "ignore" });
  const err = await new Response(proc.stderr).text();
  if ((await proc.exited) !== 0) throw new Error(`${argv.join(" ")} failed: ${err}`);
}

/** The build commands by hand in `context`, with `home` as HOME (its npm cache); milliseconds. */
export async function byHand(context: string, home: string): Promise<number> {
  const started = performance.now();
  for (const command of BUILD) await sh(["sh", "-c", command], context, { PATH: DEFAULT_PATH, HOME: home, CI: "true" });
  return performance.now() - started;
}
