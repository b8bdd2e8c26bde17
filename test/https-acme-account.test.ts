/**
 * One ACME account for every order, against Debian's pebble (issue 32, item 18): ops without
 * OPS_ACME_EMAIL orders certificates for three domains one after another and renews one; then it
 * starts again on the same data dir with OPS_ACME_EMAIL set, and again without it, and orders each
 * time with the same account key. Every order after the first finds the account by its key, and
 * the server must not be sent an update that changes nothing (pebble refuses it: "Use POST-as-GET
 * to retrieve account data instead of doing an empty update"); the account's contact follows
 * OPS_ACME_EMAIL.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { createTestApp, freePort, expectStatus, tempDir, type TestApp } from "./harness";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { httpsGet, served, startPebble, type Pebble } from "./pebble";
import { until } from "./builds-fixtures";
import * as acme from "acme-client";
import { ingressOf, startIngress, startIngressTls } from "../src/adapters/ingress";
import { certificatesModule } from "../src/domains/certificates";
import { certificates } from "../src/domains/certificates/tables";
import { ORDERS_TASK } from "../src/domains/certificates/orders";

setDefaultTimeout(120_000);

const httpPort = freePort();
const tlsPort = freePort();
const dataDir = tempDir();
let pebble: Pebble;
let root = "";
let app: ReturnType<typeof Bun.serve>;
let t: TestApp | null = null;

/** ops on `dataDir` with its ingress (plain and TLS) on the ports pebble validates against. */
async function start(env: Record<string, string> = {}): Promise<{ t: TestApp; p: ProjectCtx }> {
  t = await createTestApp({
    dataDir,
    env: { OPS_INGRESS_LISTEN: `127.0.0.1:${httpPort}`, OPS_INGRESS_TLS_LISTEN: `127.0.0.1:${tlsPort}`, OPS_ACME_DIRECTORY: pebble.directoryUrl, OPS_ACME_CA_FILE: pebble.caFile, ...env },
  });
  startIngress(t.core);
  await startIngressTls(t.core);
  await certificatesModule.onServe!(t.core);
  const p = await projectWithOwner(t, ["production"]);
  await expectStatus(await p.req("POST", "/resources/service?environment=production", { name: "web", spec: { image: "registry.example/web:1" } }), 201);
  return { t, p };
}

async function stop(): Promise<void> {
  if (!t) return;
  await ingressOf(t.core).stop(1000);
  await t.close();
  t = null;
}

function cert(host: string) {
  return t!.core.db.select().from(certificates).where(eq(certificates.host, host)).get();
}

/** A domain for `host`, routed to the test app as a rollout would, and its certificate once the order ends either way. */
async function issue(c: { t: TestApp; p: ProjectCtx }, name: string, host: string) {
  await expectStatus(await c.p.req("POST", "/resources/domain?environment=production", { name, spec: { hosts: [host], service: "web" } }), 201);
  ingressOf(c.t.core).setService({ service: { project: c.p.slug, environment: "production", service: name }, routes: [{ hosts: [host], redirectHttp: true }], upstreams: [{ host: "127.0.0.1", port: app.port! }] });
  return until(`the order for ${host}`, () => {
    const row = cert(host);
    return row && row.state !== "issuing" ? row : null;
  });
}

/** The account pebble holds for `key`, read as RFC 8555 §7.3.1 says: newAccount with onlyReturnExisting (then a POST-as-GET). */
function account(key: string) {
  return new acme.Client({ directoryUrl: pebble.directoryUrl, accountKey: key }).createAccount({ onlyReturnExisting: true });
}

beforeAll(async () => {
  pebble = await startPebble(httpPort, tlsPort);
  root = await pebble.root();
  app = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(`app ${new URL(req.url).hostname}`) });
});

afterAll(async () => {
  await stop();
  app?.stop(true);
  pebble?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("one ACME account for every order (pebble)", () => {
  test("with no OPS_ACME_EMAIL, three domains ordered one after another each get a certificate, and one of them renews", async () => {
    const c = await start();
    for (const [name, host] of [["one", "one.example.com"], ["two", "two.example.com"], ["three", "three.example.com"]] as const) {
      const row = await issue(c, name, host);
      expect({ host, state: row.state, reason: row.reason }).toEqual({ host, state: "valid", reason: null });
      expect(await served(tlsPort, host, "-ext subjectAltName")).toContain(`DNS:${host}`);
      expect((await httpsGet(root, tlsPort, host)).out).toBe(`app ${host}`);
    }
    // The second certificate is renewed at two thirds of its lifetime, by the same account.
    const before = cert("two.example.com")!;
    const oldSerial = await served(tlsPort, "two.example.com", "-serial");
    c.t.clock.set(before.nextAttemptAt! + 1);
    await c.t.core.scheduler.runNow(ORDERS_TASK);
    const after = cert("two.example.com")!;
    expect({ state: after.state, reason: after.reason, failures: after.failures }).toEqual({ state: "valid", reason: null, failures: 0 });
    expect(await served(tlsPort, "two.example.com", "-serial")).not.toBe(oldSerial);
    expect((await httpsGet(root, tlsPort, "two.example.com", "/")).out).toBe("app two.example.com");
  });

  test("started again on the same data dir with OPS_ACME_EMAIL, then without it, ops orders with the same account key each time", async () => {
    const key = readFileSync(path.join(dataDir, "keys", "acme-account.pem"), "utf8");
    await stop();
    const withEmail = await start({ OPS_ACME_EMAIL: "certs@ops.test" });
    expect(await issue(withEmail, "four", "four.example.com")).toMatchObject({ state: "valid", reason: null });
    expect((await account(key)).contact).toEqual(["mailto:certs@ops.test"]);
    await stop();
    const without = await start();
    expect(await issue(without, "five", "five.example.com")).toMatchObject({ state: "valid", reason: null });
    expect((await account(key)).contact ?? []).toEqual([]);
    expect(readFileSync(path.join(dataDir, "keys", "acme-account.pem"), "utf8")).toBe(key);
  });
});
