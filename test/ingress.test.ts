/**
 * The ingress with real replicas (the test image pushed with skopeo, pulled, unpacked and run by
 * the process runtime) and real clients (fetch, curl, WebSocket): routing by Host (exact,
 * wildcard, the default `<service>.<environment>.<project>.localhost`) and path prefix,
 * round-robin, X-Forwarded-*, a WebSocket echo, bodies streamed both ways, the 502 and 404 pages,
 * a dead replica skipped, zero failed requests across repeated switches and real rollouts
 * (switch, drain, stop the old replicas), draining on stop, and `ops serve` starting it.
 */
import { describe, test as bunTest, expect, beforeAll, afterAll } from "bun:test";
import { createHash } from "node:crypto";
import path from "node:path";
import { createTestApp, freePort, tempDir, type TestApp } from "./harness";
import { prepareTestImage, until, type PreparedImage } from "./runtime-fixtures";
import { run } from "./support/registries";
import { createProcessRuntime } from "../src/adapters/runtime/process-runtime";
import { createIngress, defaultHost, type Ingress, type ServiceRef, type Upstream } from "../src/adapters/ingress";
import type { ReplicaStatus, Runtime } from "../src/adapters/runtime/types";
import { startServer } from "../src/serve";
import { loadConfig } from "../src/core/config";
import { FixedClock } from "../src/core/clock";

/** Real processes on a shared 2-core machine: every test gets 90 s, whatever default the run has. */
const test = (name: string, fn: () => unknown) => bunTest(name, fn as () => Promise<void>, 90_000);

let t: TestApp;
let prepared: PreparedImage;
let runtime: Runtime;
let ingress: Ingress;
let base: string;
let web: ServiceRef;
let setA: Upstream[];

const up = (s: ReplicaStatus): Upstream => ({ host: s.host, port: s.port });

async function startReplica(id: string): Promise<ReplicaStatus> {
  await runtime.start({ id, image: prepared.image, env: [["REPLICA_NAME", id]], labels: { service: "web" } });
  return until(`${id} running`, () => runtime.status(id)?.state === "running" && runtime.status(id));
}

function routeWeb(upstreams: Upstream[]): void {
  ingress.setService({
    service: web,
    routes: [{ hosts: ["shop.example.com", "*.shop.test"] }, { hosts: ["api.example.com"], pathPrefix: "/v1" }],
    upstreams,
  });
}

const via = (host: string, p = "/", init: RequestInit = {}) => fetch(`${base}${p}`, { ...init, headers: { ...(init.headers as Record<string, string>), host } });

beforeAll(async () => {
  t = await createTestApp();
  prepared = await prepareTestImage(t);
  runtime = createProcessRuntime({ graceMs: 2000 });
  ingress = createIngress({ downMs: 500 });
  base = ingress.listen("127.0.0.1", freePort()).url;
  web = { project: prepared.cast.project.slug, environment: "production", service: "web" };
  setA = [up(await startReplica("a1")), up(await startReplica("a2"))];
  routeWeb(setA);
}, 120_000);
afterAll(async () => {
  await ingress?.stop(500);
  await runtime?.stopAll(500);
  await t?.close();
}, 120_000);

describe("routing", () => {
  test("by Host, round-robin over the replicas: exact, wildcard and default hosts", async () => {
    const who = async (host: string) => ((await (await via(host)).json()) as { replica: string }).replica;
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await who("shop.example.com"));
    expect(seen[0]).not.toBe(seen[1]);
    expect(seen).toEqual([seen[0], seen[1], seen[0], seen[1]]);
    expect(["a1", "a2"]).toContain(await who("deep.sub.shop.test"));
    expect(["a1", "a2"]).toContain(await who("SHOP.example.com:8081"));
    expect(defaultHost(web)).toBe(`web.production.${web.project}.localhost`);
    expect(["a1", "a2"]).toContain(await who(defaultHost(web)));
  });

  test("longest path prefix on segment boundaries; 404 page for an unknown host or path", async () => {
    expect((await via("api.example.com", "/v1/orders?x=1")).status).toBe(200);
    expect((await via("api.example.com", "/v1")).status).toBe(200);
    const other = await via("api.example.com", "/v10");
    expect(other.status).toBe(404);
    await other.text();
    const res = await via("nobody.example.org", "/x");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(await res.text()).toContain("No service answers <code>nobody.example.org/x</code>");
    // The bare suffix of a wildcard is not covered by it.
    expect((await via("shop.test")).status).toBe(404);
  });

  test("X-Forwarded-For, X-Real-IP and Forwarded from the peer (the client's own dropped), -Proto and -Host, the original Host kept (curl)", async () => {
    const home = tempDir("ops-curl-");
    const res = await run(["curl", "-sS", "-H", "Host: shop.example.com", "-H", "X-Forwarded-For: 203.0.113.9", `${base}/headers`], { cwd: home });
    expect(res.code).toBe(0);
    const h = JSON.parse(res.stdout) as Record<string, string>;
    expect(h.host).toBe("shop.example.com");
    expect(h["x-forwarded-for"]).toBe("127.0.0.1");
    expect(h["x-real-ip"]).toBe("127.0.0.1");
    expect(h.forwarded).toBe("for=127.0.0.1;host=shop.example.com;proto=http");
    expect(h["x-forwarded-proto"]).toBe("http");
    expect(h["x-forwarded-host"]).toBe("shop.example.com");
    expect(h["user-agent"]).toStartWith("curl/");
  });

  test("a WebSocket through the ingress: text, binary, subprotocol, close", async () => {
    const BunWebSocket = WebSocket as unknown as new (url: string, o: Bun.WebSocketOptions) => WebSocket;
    const ws = new BunWebSocket(`${base.replace("http", "ws")}/socket`, { headers: { host: "shop.example.com" }, protocols: ["chat.v2", "chat.v1"] });
    ws.binaryType = "arraybuffer";
    const got: Array<string | ArrayBuffer> = [];
    const next = () => until("a message", () => got.shift(), 5000, 5);
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error("the WebSocket did not open"));
    });
    ws.onmessage = (ev) => got.push(ev.data as string | ArrayBuffer);
    expect(ws.protocol).toBe("chat.v2");
    ws.send("hello");
    expect(await next()).toBe("echo:hello");
    const bin = new Uint8Array(100_000).map((_, i) => i % 251);
    ws.send(bin);
    expect(new Uint8Array((await next()) as ArrayBuffer)).toEqual(bin);
    const closed = new Promise<CloseEvent>((resolve) => (ws.onclose = resolve));
    ws.close(1000, "done");
    expect((await closed).code).toBe(1000);
  });

  test("request and response bodies stream both ways (full duplex, nothing read whole)", async () => {
    // Each chunk must come back through the ingress before the next is sent: impossible if either
    // direction buffered the body.
    const chunks = 64;
    const size = 256 * 1024;
    let sent = 0;
    let echoed = 0;
    let waitEcho: (() => void) | null = null;
    const hashOut = createHash("sha256");
    const body = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        if (sent === chunks) return ctrl.close();
        const c = new Uint8Array(size).fill(sent % 256);
        hashOut.update(c);
        ctrl.enqueue(c);
        sent++;
        const target = sent * size;
        if (echoed < target) await new Promise<void>((r) => (waitEcho = r));
      },
    });
    const res = await via("shop.example.com", "/echo", { method: "POST", body, duplex: "half" } as RequestInit);
    expect(res.status).toBe(200);
    const hashIn = createHash("sha256");
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      hashIn.update(value);
      echoed += value.byteLength;
      if (echoed >= sent * size && waitEcho) {
        const w = waitEcho as () => void;
        waitEcho = null;
        w();
      }
    }
    expect(echoed).toBe(chunks * size);
    expect(hashIn.digest("hex")).toBe(hashOut.digest("hex"));
  });

  test("a large download streams: its first bytes arrive before the replica wrote the rest", async () => {
    const total = 200 * 1024 * 1024;
    const res = await via("shop.example.com", `/bytes?n=${total}`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(first.value!.byteLength).toBeGreaterThan(0);
    // Only now does the replica write the rest (whichever of the two served it).
    for (const u of setA) await fetch(`http://${u.host}:${u.port}/release`).then((r) => r.text());
    let n = first.value!.byteLength;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.byteLength;
    }
    expect(n).toBe(total);
  });

  test("a large upload streams through to the replica (200 MiB)", async () => {
    const total = 200 * 1024 * 1024;
    const chunk = new Uint8Array(1024 * 1024).fill(7);
    let left = total;
    const body = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        if (left === 0) return ctrl.close();
        ctrl.enqueue(chunk);
        left -= chunk.byteLength;
      },
    });
    const res = await via("shop.example.com", "/echo", { method: "PUT", body, duplex: "half" } as RequestInit);
    let n = 0;
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.byteLength;
    }
    expect(n).toBe(total);
  });
});

describe("failures", () => {
  test("502 page naming the service when no replica answers, or when it has none", async () => {
    const dead: ServiceRef = { project: web.project, environment: "staging", service: "api" };
    ingress.setService({ service: dead, routes: [{ hosts: ["dead.example.com"] }], upstreams: [{ host: "127.0.0.1", port: freePort() }] });
    const res = await via("dead.example.com");
    expect(res.status).toBe(502);
    const html = await res.text();
    expect(html).toContain("<strong>api</strong>");
    expect(html).toContain("environment <code>staging</code>");
    ingress.setService({ service: dead, routes: [{ hosts: ["dead.example.com"] }], upstreams: [] });
    const none = await via("dead.example.com");
    expect(none.status).toBe(502);
    expect(await none.text()).toContain("no healthy replica");
    ingress.removeService(dead);
    expect((await via("dead.example.com")).status).toBe(404);
  });

  test("a replica that refuses connections is skipped: every GET still answers", async () => {
    routeWeb([...setA, { host: "127.0.0.1", port: freePort() }]);
    for (let i = 0; i < 12; i++) expect((await via("shop.example.com")).status).toBe(200);
    routeWeb(setA);
  });

  test("replicas marked unhealthy get no traffic", async () => {
    routeWeb([{ ...setA[0], healthy: false }, setA[1]]);
    const names = new Set<string>();
    for (let i = 0; i < 6; i++) names.add(((await (await via("shop.example.com")).json()) as { replica: string }).replica);
    expect([...names]).toEqual(["a2"]);
    routeWeb(setA);
  });
});

/**
 * A bounded loop of at most `max` requests from `concurrency` workers, ending early once `stop()`
 * says so and holding new requests while `held()` says so; `served` counts who served what as it
 * goes. Resolves with the failures.
 */
async function load(opts: { max: number; concurrency: number; served: Map<string, number>; stop?: () => boolean; held?: () => boolean; path?: string }): Promise<{ failures: string[] }> {
  const p = opts.path ?? "/";
  const failures: string[] = [];
  const served = opts.served;
  let issued = 0;
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (issued < opts.max && !opts.stop?.()) {
        if (opts.held?.()) {
          await Bun.sleep(5);
          continue;
        }
        issued++;
        try {
          const res = await via("shop.example.com", p);
          const text = await res.text();
          if (res.status !== 200) failures.push(`HTTP ${res.status}: ${text.slice(0, 200)}`);
          else {
            const who = (JSON.parse(text) as { replica: string }).replica;
            served.set(who, (served.get(who) ?? 0) + 1);
          }
        } catch (e) {
          failures.push((e as Error).message);
        }
      }
    }),
  );
  return { failures };
}

/** Resolves once every one of `ids` has served a request of the load. */
const servedBy = (served: Map<string, number>, ids: string[]) => until(`${ids.join(", ")} serving`, () => ids.every((id) => (served.get(id) ?? 0) > 0), 60_000, 5);

describe("switching", () => {
  test("zero failed requests across repeated switches between two live replica sets", async () => {
    const setB = [up(await startReplica("b1")), up(await startReplica("b2"))];
    let switching = true;
    let switches = 0;
    const flipper = (async () => {
      while (switching) {
        routeWeb(switches % 2 === 0 ? setB : setA);
        switches++;
        await Bun.sleep(15);
      }
    })();
    // Requests run until the table has switched more than ten times and every replica of both sets has served.
    const served = new Map<string, number>();
    const { failures } = await load({ max: 100_000, concurrency: 8, served, stop: () => switches > 10 && ["a1", "a2", "b1", "b2"].every((r) => (served.get(r) ?? 0) > 0) });
    switching = false;
    await flipper;
    expect(failures).toEqual([]);
    expect(switches).toBeGreaterThan(10);
    for (const r of ["a1", "a2", "b1", "b2"]) expect(served.get(r) ?? 0).toBeGreaterThan(0);
    routeWeb(setA);
    await runtime.stop("b1", 1000);
    await runtime.stop("b2", 1000);
  });

  test("zero failed requests across rollouts: start new replicas, switch, drain the old, stop them", async () => {
    let live = setA;
    let liveIds = ["a1", "a2"];
    let done = false;
    let held = false;
    const served = new Map<string, number>();
    const loader = load({ max: 200_000, concurrency: 6, served, stop: () => done, held: () => held });
    const rounds: string[][] = [];
    for (let round = 0; round < 3; round++) {
      const ids = [`r${round}-1`, `r${round}-2`];
      const fresh = [up(await startReplica(ids[0])), up(await startReplica(ids[1]))];
      // Every replica of the set about to be switched away from has served the load.
      await servedBy(served, liveIds);
      // A slow request caught on an old replica must finish there: the load is held until the
      // old replicas are idle, so the first request in flight to them is the slow one.
      held = true;
      expect(await ingress.drained(live, 10_000)).toBe(true);
      const slow = via("shop.example.com", "/slow?ms=1000");
      await until("the slow request on an old replica", () => live.some((u) => ingress.inflight(u) > 0), 20_000, 2);
      held = false;
      routeWeb(fresh);
      expect(await ingress.drained(live, 10_000)).toBe(true);
      const slowRes = await slow;
      expect(slowRes.status).toBe(200);
      expect(await slowRes.text()).toMatch(new RegExp(`^slow done (${liveIds.join("|")})$`));
      for (const id of liveIds) await runtime.stop(id, 2000);
      rounds.push(ids);
      live = fresh;
      liveIds = ids;
    }
    await servedBy(served, liveIds);
    done = true;
    const { failures } = await loader;
    expect(failures).toEqual([]);
    for (const ids of rounds) for (const id of ids) expect(served.get(id) ?? 0).toBeGreaterThan(0);
    setA = live;
  });
});

describe("shutdown", () => {
  test("stop drains: a request in flight finishes, new connections are refused", async () => {
    const own = createIngress();
    const url = own.listen("127.0.0.1", freePort()).url;
    own.setService({ service: web, routes: [{ hosts: ["shop.example.com"] }], upstreams: setA });
    const inFlight = fetch(`${url}/slow?ms=500`, { headers: { host: "shop.example.com" } });
    await until("the request in flight", () => own.exchanges() > 0, 20_000, 2);
    const stopping = own.stop(5000);
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.text()).toStartWith("slow done");
    await stopping;
    await expect(fetch(`${url}/`, { headers: { host: "shop.example.com" } })).rejects.toThrow();
  });

  test("ops serve starts the ingress on OPS_INGRESS_LISTEN and drains it on shutdown; a taken port is logged, not fatal", async () => {
    const dataDir = tempDir("ops-ingress-serve-");
    const port = freePort();
    const ingressPort = freePort();
    const logs: string[] = [];
    const quiet = { OPS_BOOTSTRAP_EMAIL: "owner@ops.test", OPS_BOOTSTRAP_PASSWORD: "owner-password-for-tests" };
    const config = loadConfig({ ...quiet, OPS_DATA_DIR: dataDir, OPS_LISTEN: `127.0.0.1:${port}`, OPS_INGRESS_LISTEN: `127.0.0.1:${ingressPort}` }, {}, dataDir);
    const running = await startServer(config, { clock: new FixedClock(), logSink: (l) => logs.push(l) });
    expect(running.ingressUrl).toBe(`http://127.0.0.1:${ingressPort}`);
    const { ingressOf } = await import("../src/adapters/ingress");
    ingressOf(running.core).setService({ service: web, routes: [], upstreams: setA });
    // The table reaches the data plane's ingress process over its socket, a moment later.
    let res = await fetch(`${running.ingressUrl}/`, { headers: { host: defaultHost(web) } });
    for (let i = 0; i < 100 && res.status === 404; i++) {
      await Bun.sleep(20);
      res = await fetch(`${running.ingressUrl}/`, { headers: { host: defaultHost(web) } });
    }
    expect(res.status).toBe(200);
    expect(((await res.json()) as { replica: string }).replica).toBeTruthy();

    // A second server on the same ingress port: its API serves, the ingress error is logged.
    const dataDir2 = tempDir("ops-ingress-serve-");
    const logs2: string[] = [];
    const config2 = loadConfig({ ...quiet, OPS_DATA_DIR: dataDir2, OPS_LISTEN: `127.0.0.1:${freePort()}`, OPS_INGRESS_LISTEN: `127.0.0.1:${ingressPort}` }, {}, dataDir2);
    const second = await startServer(config2, { clock: new FixedClock(), logSink: (l) => logs2.push(l) });
    expect(second.ingressUrl).toBeNull();
    expect((await fetch(`${second.url}/health`)).status).toBe(200);
    const err = logs2.map((l) => JSON.parse(l)).find((l) => l.msg.startsWith("the ingress could not listen"));
    expect(err).toMatchObject({ level: "error", listen: `127.0.0.1:${ingressPort}`, setting: "OPS_INGRESS_LISTEN" });
    await second.shutdown("test");

    await running.shutdown("test");
    await expect(fetch(`http://127.0.0.1:${ingressPort}/`)).rejects.toThrow();
    expect(logs.map((l) => JSON.parse(l).msg)).toContain("the ingress is serving");
    void path;
  });
});
