/**
 * Uploaded certificates: a domain naming a secret group serves the group's TLS_CERT and TLS_KEY by
 * SNI (no ACME order), a rotated value is served after the next `certificates.orders` run, a pair
 * that does not name the host or a group without one shows as failing, and a group that does not
 * exist is a 422; a certificate the sealed secrets store kept from loading is served once unsealed.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { createTestApp, freePort, expectStatus, tempDir, type TestApp } from "./harness";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { ingressOf, startIngressTls } from "../src/adapters/ingress";
import { certificatesModule } from "../src/domains/certificates";
import { certificates } from "../src/domains/certificates/tables";
import { ORDERS_TASK } from "../src/domains/certificates/orders";

let t: TestApp;
let p: ProjectCtx;
let app: ReturnType<typeof Bun.serve>;
const tlsPort = freePort();
const dir = tempDir("ops-uploaded-");

function selfSigned(host: string, name: string): { cert: string; key: string; file: string } {
  const base = path.join(dir, name);
  const r = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj", `/CN=${host}`, "-addext", `subjectAltName=DNS:${host}`, "-keyout", `${base}.key`, "-out", `${base}.crt`], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
  return { cert: readFileSync(`${base}.crt`, "utf8"), key: readFileSync(`${base}.key`, "utf8"), file: `${base}.crt` };
}

async function curl(host: string, ca: string): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(["curl", "-sS", "--max-time", "10", "--cacert", ca, "--resolve", `${host}:${tlsPort}:127.0.0.1`, `https://${host}:${tlsPort}/x`], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  return { code: await proc.exited, out };
}

const row = (host: string) => t.core.db.select().from(certificates).where(eq(certificates.host, host)).get();

async function setVar(group: string, name: string, value: string) {
  await expectStatus(await p.req("PUT", `/resources/secret-group/${group}/variables/${name}?environment=production`, { value, kind: "secret" }), 200);
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_INGRESS_TLS_LISTEN: `127.0.0.1:${tlsPort}`, OPS_ACME_DIRECTORY: "https://127.0.0.1:1/dir" } });
  await startIngressTls(t.core);
  await certificatesModule.onServe!(t.core);
  app = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("uploaded ok") });
  p = await projectWithOwner(t, ["production"]);
  await expectStatus(await p.req("POST", "/resources/service?environment=production", { name: "web", spec: { image: "registry.example/web:1" } }), 201);
  await expectStatus(await p.req("PUT", "/resources/secret-group/tls?environment=production", { spec: { variables: [{ name: "TLS_CERT", kind: "secret" }, { name: "TLS_KEY", kind: "secret" }] } }), 201);
});

afterAll(async () => {
  await ingressOf(t.core).stop(500);
  await t?.close();
  app?.stop(true);
});

describe("uploaded certificates", () => {
  test("a domain naming a secret group with TLS_CERT and TLS_KEY is served over HTTPS with them; no order is made", async () => {
    const one = selfSigned("up.example.com", "one");
    await setVar("tls", "TLS_CERT", one.cert);
    await setVar("tls", "TLS_KEY", one.key);
    await expectStatus(await p.req("POST", "/resources/domain?environment=production", { name: "up", spec: { hosts: ["up.example.com"], service: "web", tls_secret_group: "tls" } }), 201);
    ingressOf(t.core).setService({ service: { project: p.slug, environment: "production", service: "web" }, routes: [{ hosts: ["up.example.com"] }], upstreams: [{ host: "127.0.0.1", port: app.port! }] });
    await until("the uploaded certificate", () => row("up.example.com")?.state === "valid");
    expect(row("up.example.com")).toMatchObject({ source: "uploaded", nextAttemptAt: null, reason: null });
    expect((await curl("up.example.com", one.file)).out).toBe("uploaded ok");
    const got = await expectStatus(await p.req("GET", "/resources/domain/up?environment=production"), 200);
    expect(got.status.detail.certificate.hosts[0]).toMatchObject({ host: "up.example.com", source: "uploaded", state: "valid" });
  });

  test("a rotated pair is served after the next run; a pair that does not name the host is failing, and the old one stays served", async () => {
    const two = selfSigned("up.example.com", "two");
    await setVar("tls", "TLS_CERT", two.cert);
    await setVar("tls", "TLS_KEY", two.key);
    await t.core.scheduler.runNow(ORDERS_TASK);
    expect((await curl("up.example.com", two.file)).out).toBe("uploaded ok");
    const other = selfSigned("other.example.com", "other");
    await setVar("tls", "TLS_CERT", other.cert);
    await setVar("tls", "TLS_KEY", other.key);
    await t.core.scheduler.runNow(ORDERS_TASK);
    expect(row("up.example.com")).toMatchObject({ state: "failing", reason: 'the certificate in "tls" does not name up.example.com' });
    expect((await curl("up.example.com", two.file)).out).toBe("uploaded ok");
  });

  test("a certificate that could not be loaded while the secrets store was sealed is served once it is unsealed", async () => {
    const ingress = ingressOf(t.core);
    ingress.certificates.delete("up.example.com");
    t.core.secrets.seal("test");
    await t.core.scheduler.runNow(ORDERS_TASK);
    expect(ingress.certificates.pem("up.example.com")).toBeNull();
    t.core.secrets.unseal(readFileSync(path.join(t.dataDir, "keys", "secrets.key"), "utf8"));
    await t.core.scheduler.runNow(ORDERS_TASK);
    expect(ingress.certificates.pem("up.example.com")).not.toBeNull();
  });

  test("a secret group that does not exist is a 422 naming the field", async () => {
    const res = await p.req("POST", "/resources/domain?environment=production", { name: "nope", spec: { hosts: ["nope.example.com"], service: "web", tls_secret_group: "missing" } });
    const body = await expectStatus(res, 422);
    expect(JSON.stringify(body)).toContain("spec.tls_secret_group");
  });
});
