/**
 * ops's own host and a domain's certificate (issue 32, item 15): a project's domain claimed
 * `ops.example.org` with an uploaded certificate (its own key) while OPS_PUBLIC_URL named another
 * host. ops then starts with OPS_PUBLIC_URL=https://ops.example.org and OPS_TLS=acme: the
 * project's pair must never reach ops's own listener, the ingress stops serving it for that host,
 * and the host's certificate row becomes ops's own (ordered for ops, not for the domain).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import { createTestApp, freePort, expectStatus, tempDir, type TestApp } from "./harness";
import { projectWithOwner, type ProjectCtx } from "./resources-helpers";
import { until } from "./builds-fixtures";
import { ingressOf, startIngressTls } from "../src/adapters/ingress";
import type { PemPair } from "../src/adapters/ingress/tls";
import { certificatesModule } from "../src/domains/certificates";
import { setOwnCertificateSink } from "../src/domains/certificates/service";
import { certificates } from "../src/domains/certificates/tables";

const tlsPort = freePort();
const dir = tempDir("ops-public-host-pem-");
const dataDirs: string[] = [];
let t: TestApp | null = null;
let pair: PemPair;
let own: PemPair[] = [];

/** ops on `dataDir` (its ingress's TLS listener on unless `env` says off), started as `ops serve` starts the certificates. */
async function boot(dataDir: string, env: Record<string, string>): Promise<TestApp> {
  t = await createTestApp({ dataDir, env: { OPS_INGRESS_TLS_LISTEN: `127.0.0.1:${tlsPort}`, OPS_ACME_DIRECTORY: "https://127.0.0.1:1/dir", ...env } });
  setOwnCertificateSink(t.core, (got) => void own.push(got));
  await startIngressTls(t.core);
  await certificatesModule.onServe!(t.core);
  return t;
}

async function close(): Promise<void> {
  if (!t) return;
  await ingressOf(t.core).stop(500);
  await t.close();
  t = null;
}

const row = () => t!.core.db.select().from(certificates).where(eq(certificates.host, "ops.example.org")).get();

/** A data dir where a project's domain holds ops.example.org with its own uploaded pair, served by the ingress. */
async function claimedBeforehand(): Promise<string> {
  const dataDir = tempDir("ops-public-host-tls-");
  dataDirs.push(dataDir);
  await boot(dataDir, { OPS_PUBLIC_URL: "http://old.example.org" });
  const p: ProjectCtx = await projectWithOwner(t!, ["production"]);
  await expectStatus(await p.req("POST", "/resources/service?environment=production", { name: "web", spec: { image: "registry.example/web:1" } }), 201);
  await expectStatus(await p.req("PUT", "/resources/secret-group/tls?environment=production", { spec: { variables: [{ name: "TLS_CERT", kind: "secret" }, { name: "TLS_KEY", kind: "secret" }] } }), 201);
  for (const [name, value] of [["TLS_CERT", pair.cert], ["TLS_KEY", pair.key]]) {
    await expectStatus(await p.req("PUT", `/resources/secret-group/tls/variables/${name}?environment=production`, { value, kind: "secret" }), 200);
  }
  await expectStatus(await p.req("POST", "/resources/domain?environment=production", { name: "grab", spec: { hosts: ["ops.example.org"], service: "web", tls_secret_group: "tls" } }), 201);
  await until("the uploaded certificate", () => row()?.state === "valid");
  expect(ingressOf(t!.core).certificates.pem("ops.example.org")?.cert).toBe(pair.cert);
  await close();
  own = [];
  return dataDir;
}

beforeAll(() => {
  const base = path.join(dir, "grab");
  const r = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj", "/CN=ops.example.org", "-addext", "subjectAltName=DNS:ops.example.org", "-keyout", `${base}.key`, "-out", `${base}.crt`], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
  pair = { cert: readFileSync(`${base}.crt`, "utf8"), key: readFileSync(`${base}.key`, "utf8") };
});

afterAll(async () => {
  await close();
  for (const d of [...dataDirs, dir]) rmSync(d, { recursive: true, force: true });
});

describe("ops's own host and a domain's certificate", () => {
  for (const [listener, env] of [
    ["the ingress's TLS listener on", {}],
    ["the ingress's TLS listener off", { OPS_INGRESS_TLS_LISTEN: "off" }],
  ] as const) {
    test(`${listener}: once OPS_PUBLIC_URL names the domain's host, the project's pair reaches neither ops's own listener nor the ingress, and the row is ops's own`, async () => {
      const dataDir = await claimedBeforehand();
      const app = await boot(dataDir, { OPS_PUBLIC_URL: "https://ops.example.org", OPS_TLS: "acme", ...env });
      expect(own.map((o) => o.key)).not.toContain(pair.key);
      expect(ingressOf(app.core).certificates.pem("ops.example.org")?.cert).not.toBe(pair.cert);
      expect(row()).toMatchObject({ resourceId: null, projectId: null, source: "acme", sealedId: null });
      await close();
    });
  }
});
