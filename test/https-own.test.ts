/**
 * ops's own listener on HTTPS with OPS_TLS=acme, against pebble: `ops serve` orders a certificate
 * for OPS_PUBLIC_URL's host (HTTP-01 answered by the ingress's plain listener), then serves the
 * API on OPS_LISTEN over HTTPS with it; a restart on the same data dir serves it at once from the
 * sealed copy. OPS_TLS=acme without an https public URL is refused at start.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { rmSync } from "node:fs";
import { eq } from "drizzle-orm";
import { freePort, tempDir } from "./harness";
import { startPebble, type Pebble } from "./pebble";
import { loadConfig } from "../src/core/config";
import { FixedClock } from "../src/core/clock";
import { startServer, type RunningServer } from "../src/serve";
import { certificates } from "../src/domains/certificates/tables";

setDefaultTimeout(120_000);

const httpPort = freePort();
const port = freePort();
const dataDir = tempDir("ops-https-own-");
let pebble: Pebble;
let root = "";

function config() {
  return loadConfig(
    {
      OPS_DATA_DIR: dataDir,
      OPS_LISTEN: `127.0.0.1:${port}`,
      OPS_PUBLIC_URL: `https://ops.example.com:${port}`,
      OPS_TLS: "acme",
      OPS_INGRESS_LISTEN: `127.0.0.1:${httpPort}`,
      OPS_ACME_DIRECTORY: pebble.directoryUrl,
      OPS_ACME_CA_FILE: pebble.caFile,
      OPS_BOOTSTRAP_EMAIL: "owner@ops.test",
      OPS_BOOTSTRAP_PASSWORD: "owner-password-for-tests",
    },
    {},
    dataDir,
  );
}

async function health(): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(["curl", "-sS", "--max-time", "10", "--cacert", root, "--resolve", `ops.example.com:${port}:127.0.0.1`, `https://ops.example.com:${port}/health`], { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code: await p.exited, out, err };
}

async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

beforeAll(async () => {
  pebble = await startPebble(httpPort, freePort());
  root = await pebble.root();
});

afterAll(() => {
  pebble?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("OPS_TLS=acme", () => {
  let running: RunningServer | null = null;
  afterAll(async () => {
    await running?.shutdown("test");
  });

  test("ops orders its own certificate and serves its API over HTTPS on OPS_LISTEN; a restart serves it at once", async () => {
    running = await startServer(config(), { clock: new FixedClock(), logSink: () => undefined });
    const row = () => running!.core.db.select().from(certificates).where(eq(certificates.host, "ops.example.com")).get();
    await until("ops's own certificate", () => row()?.state === "valid");
    await until("HTTPS on OPS_LISTEN", async () => (await health()).code === 0);
    const r = await health();
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    // Plain HTTP is no longer spoken there.
    expect((await fetch(`http://127.0.0.1:${port}/health`).then((x) => x.status).catch(() => "refused")) === 200).toBe(false);
    await running.shutdown("restart");
    running = await startServer(config(), { clock: new FixedClock(), logSink: () => undefined });
    expect((await health()).code).toBe(0);
  });

  test("OPS_TLS=acme needs an https OPS_PUBLIC_URL", () => {
    expect(() => loadConfig({ OPS_DATA_DIR: dataDir, OPS_TLS: "acme", OPS_PUBLIC_URL: "http://ops.example.com" }, {}, dataDir)).toThrow(/OPS_TLS/);
  });
});
