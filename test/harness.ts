/**
 * The test harness: `createTestApp()` gives a real Core on a temp data dir with the real embedded
 * migrations, a fixed clock, captured logs, and a live HTTP listener on a loopback port. The
 * scheduler is not started: tests move the clock and call `core.scheduler.runDue()` / `runNow()`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "bun:test";
import { Database } from "bun:sqlite";
import { loadConfig } from "../src/core/config";
import { FixedClock } from "../src/core/clock";
import { createCore, createHttpApp, closeCore, maxBodyLimit, type HttpApp } from "../src/app";
import type { Core, DomainModule } from "../src/core/core";
import type { Principal } from "../src/core/authz/principal";

export interface RequestOptions {
  body?: unknown;
  /** Bearer credential (session bearer or minted token). */
  token?: string;
  headers?: Record<string, string>;
  /** Send the body as is (string/bytes) instead of JSON. */
  raw?: BodyInit;
}

export interface TestApp {
  core: Core;
  app: HttpApp;
  /** Base URL of the live listener, e.g. http://127.0.0.1:43121 */
  url: string;
  port: number;
  clock: FixedClock;
  dataDir: string;
  /** Every log line the app wrote, as JSON text. */
  logs: string[];
  request(method: string, path: string, opts?: RequestOptions): Promise<Response>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Extra OPS_* settings. */
  env?: Record<string, string>;
  modules?: readonly DomainModule[];
  clock?: FixedClock;
  /** Reuse a data dir (e.g. to restart on the same state); not deleted on close. */
  dataDir?: string;
}

/** A loopback port that was free a moment ago. */
export function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
  const port = s.port as number;
  s.stop(true);
  return port;
}

/** A temp directory removed by the caller (or by `createTestApp`'s close). */
export function tempDir(prefix = "ops-test-"): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

export async function createTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? tempDir();
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig(
    {
      OPS_DATA_DIR: dataDir,
      OPS_LISTEN: `127.0.0.1:${port}`,
      OPS_PUBLIC_URL: url,
      OPS_LOG_LEVEL: "info",
      OPS_BOOTSTRAP_EMAIL: "owner@ops.test",
      OPS_BOOTSTRAP_PASSWORD: "owner-password-for-tests",
      // No test app takes the ingress's default port; a test that routes through it names one.
      OPS_INGRESS_LISTEN: "off",
      ...opts.env,
    },
    {},
    dataDir,
  );
  const clock = opts.clock ?? new FixedClock();
  const logs: string[] = [];
  const core = createCore(config, { clock, logSink: (line) => logs.push(line), modules: opts.modules });
  const app = createHttpApp(core);
  app.listen({ hostname: "127.0.0.1", port, maxRequestBodySize: maxBodyLimit(core) });

  const request = (method: string, p: string, o: RequestOptions = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let body: BodyInit | undefined = o.raw;
    if (o.body !== undefined && body === undefined) {
      body = JSON.stringify(o.body);
      headers["content-type"] ??= "application/json";
    }
    return fetch(url + p, { method, headers, body, redirect: "manual" });
  };

  let closed = false;
  return {
    core,
    app,
    url,
    port,
    clock,
    dataDir,
    logs,
    request,
    async close() {
      if (closed) return;
      closed = true;
      await app.stop(true);
      await closeCore(core);
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Assert the status and return the parsed body (JSON when it is JSON, else text). On a mismatch
 * the failure message carries the body, so a failing test says why.
 */
export async function expectStatus<T = any>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  let body: unknown = text;
  if ((res.headers.get("content-type") ?? "").includes("json") && text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  if (res.status !== status) {
    throw new Error(`expected HTTP ${status}, got ${res.status} for ${res.url}\n${typeof body === "string" ? body : JSON.stringify(body, null, 2)}`);
  }
  expect(res.status).toBe(status);
  return body as T;
}

/** Poll `url` until it answers `status` (a server starting up), or fail after `ms`. */
export async function waitFor(url: string, status = 200, ms = 20_000): Promise<Response> {
  const deadline = Date.now() + ms;
  let last = "no answer";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.status === status) return res;
      last = `HTTP ${res.status}`;
      await res.arrayBuffer();
    } catch (e) {
      last = (e as Error).message;
    }
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not answer ${status} within ${ms} ms (last: ${last})`);
}

/** True when SQLite's integrity_check of `file` is "ok". */
export function integrityOk(file: string): boolean {
  const db = new Database(file, { readonly: true });
  try {
    return JSON.stringify(db.query("PRAGMA integrity_check").all()) === JSON.stringify([{ integrity_check: "ok" }]);
  } finally {
    db.close();
  }
}

/**
 * A principal for kernel tests that stand in for the access domain (fake access hooks): a person
 * `<name>@ops.test` signed in with a console session. Domain tests create real ones through the
 * access domain's services instead.
 */
export function fakePrincipal(name: string, over: Partial<Principal> = {}): Principal {
  return {
    operatorId: `op-${name}`,
    kind: "person",
    name: `${name}@ops.test`,
    email: `${name}@ops.test`,
    displayName: name,
    suspended: false,
    via: "console",
    actor: `${name}@ops.test`,
    sessionId: `s-${name}`,
    sessionKind: "console",
    tokenId: null,
    tokenScopes: null,
    tokenProjectId: null,
    tokenProjectSlug: null,
    viaCookie: false,
    ...over,
  };
}
