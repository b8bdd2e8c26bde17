/**
 * HTTPS for domains against Debian's pebble: a domain created with the TLS listener on gets its
 * certificate through a real HTTP-01 validation answered by the ingress's plain listener; curl
 * trusting only pebble's root reaches the app over HTTPS by SNI; plain HTTP is redirected with
 * 308; a second domain is added while the listener serves the first; the clock drives a renewal;
 * an order whose challenge nobody answers shows on the domain's status with a notification, and
 * waits out its backoff; the account key is 0600 and certificates are sealed at rest.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { createTestApp, freePort, expectStatus, type TestApp } from "./harness";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { curl, httpsGet, served as servedBy, startPebble, type Pebble } from "./pebble";
import { ingressOf, startIngress, startIngressTls } from "../src/adapters/ingress";
import { certificatesModule } from "../src/domains/certificates";
import { certificates } from "../src/domains/certificates/tables";
import { BACKOFF_MS, ORDERS_TASK } from "../src/domains/certificates/orders";
import { notices } from "../src/domains/notifications/tables";

setDefaultTimeout(120_000);

let t: TestApp;
let pebble: Pebble;
let p: ProjectCtx;
let app: ReturnType<typeof Bun.serve>;
let root = "";
const httpPort = freePort();
const tlsPort = freePort();

const https = (host: string, p = "/") => httpsGet(root, tlsPort, host, p);
const served = (host: string, args: string) => servedBy(tlsPort, host, args);

function cert(host: string) {
  return t.core.db.select().from(certificates).where(eq(certificates.host, host)).get();
}

async function until<T>(what: string, fn: () => T | null | undefined | false, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** Route the domain's hosts to the test app, as a rollout would. */
function route(service: string, hosts: string[]): void {
  ingressOf(t.core).setService({ service: { project: p.slug, environment: "production", service }, routes: [{ hosts, redirectHttp: true }], upstreams: [{ host: "127.0.0.1", port: app.port! }] });
}

async function domain(name: string, hosts: string[], extra: Record<string, unknown> = {}) {
  await expectStatus(await p.req("POST", "/resources/domain?environment=production", { name, spec: { hosts, service: "web", ...extra } }), 201);
}

beforeAll(async () => {
  pebble = await startPebble(httpPort, tlsPort);
  t = await createTestApp({
    env: { OPS_INGRESS_LISTEN: `127.0.0.1:${httpPort}`, OPS_INGRESS_TLS_LISTEN: `127.0.0.1:${tlsPort}`, OPS_ACME_DIRECTORY: pebble.directoryUrl, OPS_ACME_CA_FILE: pebble.caFile, OPS_ACME_EMAIL: "certs@ops.test" },
  });
  startIngress(t.core);
  await startIngressTls(t.core);
  await certificatesModule.onServe!(t.core);
  app = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(`app ${new URL(req.url).pathname} via ${req.headers.get("x-forwarded-proto")}`) });
  p = await projectWithOwner(t, ["production"]);
  await expectStatus(await p.req("POST", "/resources/service?environment=production", { name: "web", spec: { image: "registry.example/web:1" } }), 201);
  root = await pebble.root();
});

afterAll(async () => {
  await ingressOf(t.core).stop(1000);
  await t?.close();
  app?.stop(true);
  pebble?.stop();
});

describe("HTTPS with ACME (pebble)", () => {
  test("a new domain's host is validated over HTTP-01 by the ingress, served by SNI, and curl reaches the app over HTTPS", async () => {
    await domain("shop", ["shop.example.com"]);
    route("web", ["shop.example.com"]);
    const row = await until("a certificate", () => cert("shop.example.com")?.state === "valid" && cert("shop.example.com"));
    expect(row.reason).toBeNull();
    expect(row.notAfter).toBeGreaterThan(Date.now());
    const r = await https("shop.example.com", "/cart?x=1");
    expect(r.err).toBe("");
    expect(r.out).toBe("app /cart via https");
    // The domain's status says so.
    const got = await expectStatus(await p.req("POST", "/resources/domain/shop/observe?environment=production"), 200);
    expect(got.status.summary).toContain("certificate valid until ");
    expect(got.status.detail.certificate.hosts[0]).toMatchObject({ host: "shop.example.com", source: "acme", state: "valid" });
  });

  test("plain HTTP to the domain is redirected with 308, path and query kept", async () => {
    const r = await curl(["-i", "-H", "host: shop.example.com", `http://127.0.0.1:${httpPort}/a/b?c=d`]);
    expect(r.out).toMatch(/^HTTP\/1\.1 308 /);
    expect(r.out).toContain(`location: https://shop.example.com:${tlsPort}/a/b?c=d\r\n`);
  });

  test("a second domain added while the listener serves the first gets its own certificate; the first is still served", async () => {
    await domain("blog", ["blog.example.com"]);
    route("web", ["shop.example.com", "blog.example.com"]);
    await until("the second certificate", () => cert("blog.example.com")?.state === "valid");
    expect((await https("blog.example.com", "/post")).out).toBe("app /post via https");
    expect((await https("shop.example.com", "/again")).out).toBe("app /again via https");
    const subject = await served("blog.example.com", "-ext subjectAltName");
    expect(subject).toContain("DNS:blog.example.com");
    expect(subject).not.toContain("shop.example.com");
  });

  test("the clock at two thirds of the lifetime renews the certificate; the new one is served", async () => {
    const start = t.clock.now();
    const before = cert("shop.example.com")!;
    const renewAt = before.notBefore! + Math.floor(((before.notAfter! - before.notBefore!) * 2) / 3);
    expect(before.nextAttemptAt).toBe(renewAt);
    t.clock.set(renewAt - 60_000);
    await t.core.scheduler.runNow(ORDERS_TASK);
    expect(cert("shop.example.com")!.sealedId).toBe(before.sealedId);
    expect(cert("shop.example.com")!.notBefore).toBe(before.notBefore);
    const oldSerial = await served("shop.example.com", "-serial");
    expect(oldSerial).toStartWith("serial=");
    t.clock.set(renewAt + 1);
    await t.core.scheduler.runNow(ORDERS_TASK);
    const after = cert("shop.example.com")!;
    expect(after.state).toBe("valid");
    expect(after.nextAttemptAt).toBeGreaterThan(t.clock.now());
    expect(await served("shop.example.com", "-serial")).not.toBe(oldSerial);
    expect((await https("shop.example.com", "/renewed")).out).toBe("app /renewed via https");
    t.clock.set(start);
  });

  test("an order whose challenge nobody answers fails: the reason on the domain's status, a notification, a backoff", async () => {
    await pebble.resolve("down.example.com", "127.0.0.2");
    await domain("down", ["down.example.com"]);
    const row = await until("a failed order", () => cert("down.example.com")?.state === "failing" && cert("down.example.com"));
    expect(row.reason).toMatch(/127\.0\.0\.2|connection refused|connect/i);
    expect(row.failures).toBe(1);
    expect(row.nextAttemptAt).toBe(t.clock.now() + BACKOFF_MS[0]!);
    const got = await expectStatus(await p.req("GET", "/resources/domain/down?environment=production"), 200);
    expect(got.status.state).toBe("error");
    expect(got.status.summary).toContain("certificate failing: down.example.com: ");
    const sent = t.core.db.select().from(notices).where(eq(notices.kind, "certificate.failing")).all();
    expect(sent.length).toBe(1);
    expect(JSON.parse(sent[0]!.params)).toMatchObject({ project: p.slug, domain: "down", host: "down.example.com" });
    // Not retried before its backoff; retried (and noticed no second time) after it.
    await t.core.scheduler.runNow(ORDERS_TASK);
    expect(cert("down.example.com")!.failures).toBe(1);
    t.clock.advance(BACKOFF_MS[0]!);
    await t.core.scheduler.runNow(ORDERS_TASK);
    expect(cert("down.example.com")!.failures).toBe(2);
    expect(cert("down.example.com")!.nextAttemptAt).toBe(t.clock.now() + BACKOFF_MS[1]!);
    expect(t.core.db.select().from(notices).where(eq(notices.kind, "certificate.failing")).all().length).toBe(1);
    // No certificate, no redirect: the host still answers on plain HTTP.
    expect((await curl(["-H", "host: down.example.com", `http://127.0.0.1:${httpPort}/`])).out).not.toContain("308");
  });

  test("writing the failing domain again (retry now) orders at once; once DNS points here it is issued", async () => {
    await pebble.resolve("down.example.com", "127.0.0.1");
    const cur = await expectStatus(await p.req("GET", "/resources/domain/down?environment=production"), 200);
    await expectStatus(await p.req("PUT", "/resources/domain/down?environment=production", { spec: cur.spec }), 200);
    await until("the retried order", () => cert("down.example.com")?.failures === 0 || cert("down.example.com")!.failures > 2);
    expect(cert("down.example.com")!.reason).toBeNull();
    expect(cert("down.example.com")!.state).toBe("valid");
    expect(cert("down.example.com")!.failures).toBe(0);
  });

  test("a domain with tls false gets no certificate; deleting a domain stops serving its certificate", async () => {
    await domain("open", ["open.example.com"], { tls: false });
    await Bun.sleep(100);
    expect(cert("open.example.com")).toBeUndefined();
    await expectStatus(await p.req("DELETE", "/resources/domain/blog?environment=production"), 204);
    await until("the row to go", () => !cert("blog.example.com"));
    expect(ingressOf(t.core).certificates.names()).not.toContain("blog.example.com");
  });

  test("the account key is 0600 under keys/, and no certificate key is stored in the clear", async () => {
    const key = path.join(t.dataDir, "keys", "acme-account.pem");
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(readFileSync(key, "utf8")).toContain("PRIVATE KEY");
    const db = readFileSync(path.join(t.dataDir, "ops.db"), "latin1") + readFileSync(path.join(t.dataDir, "ops.db-wal"), "latin1");
    expect(db).not.toContain("PRIVATE KEY");
    expect(db).not.toContain("BEGIN CERTIFICATE");
  });
});
