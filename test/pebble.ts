/**
 * Debian's `pebble` (the ACME test CA of the Let's Encrypt project) and `pebble-challtestsrv` (its
 * DNS, answering every A query with 127.0.0.1), both on loopback ports of their own. pebble
 * validates HTTP-01 on `httpPort` (the ingress's plain listener in the tests) and issues
 * certificates signed by a root made at its start (`root()`). Below it, what the HTTPS suites ask
 * of the ingress's TLS listener with real clients (curl, openssl s_client).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "./harness";

export interface Pebble {
  directoryUrl: string;
  /** PEM of pebble's own HTTPS listener (OPS_ACME_CA_FILE). */
  caFile: string;
  /** The root that signs issued certificates, written to a file (curl --cacert). */
  root(): Promise<string>;
  /** Make `host` resolve to `ip` for pebble (e.g. an address nothing listens on). */
  resolve(host: string, ip: string): Promise<void>;
  stop(): void;
}

async function until(what: string, ok: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await ok().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`pebble: ${what} did not come up`);
    await Bun.sleep(50);
  }
}

export async function startPebble(httpPort: number, tlsPort: number): Promise<Pebble> {
  const dir = mkdtempSync(path.join(tmpdir(), "ops-pebble-"));
  const gen = Bun.spawnSync(
    ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem")],
    { stderr: "pipe" },
  );
  if (gen.exitCode !== 0) throw new Error(gen.stderr.toString());
  const [acme, mgmt, dns, dnsMgmt] = [freePort(), freePort(), freePort(), freePort()];
  writeFileSync(
    path.join(dir, "pebble.json"),
    JSON.stringify({ pebble: { listenAddress: `127.0.0.1:${acme}`, managementListenAddress: `127.0.0.1:${mgmt}`, certificate: path.join(dir, "cert.pem"), privateKey: path.join(dir, "key.pem"), httpPort, tlsPort, ocspResponderURL: "", externalAccountBindingRequired: false } }),
  );
  const procs: Subprocess[] = [];
  procs.push(Bun.spawn(["pebble-challtestsrv", "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dns01", `127.0.0.1:${dns}`, "-http01", "", "-https01", "", "-tlsalpn01", "", "-management", `127.0.0.1:${dnsMgmt}`], { stdout: "ignore", stderr: "ignore" }));
  procs.push(Bun.spawn(["pebble", "-config", path.join(dir, "pebble.json"), "-dnsserver", `127.0.0.1:${dns}`], { env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0" }, stdout: "ignore", stderr: "ignore" }));
  const caFile = path.join(dir, "cert.pem");
  const ca = readFileSync(caFile, "utf8");
  const get = (url: string, init: RequestInit = {}) => fetch(url, { ...init, tls: { ca } } as RequestInit);
  await until("the ACME directory", async () => (await get(`https://127.0.0.1:${acme}/dir`)).ok);
  await until("its DNS", async () => (await fetch(`http://127.0.0.1:${dnsMgmt}/clear-a`, { method: "POST", body: JSON.stringify({ host: "nothing.test." }) })).ok);
  return {
    directoryUrl: `https://127.0.0.1:${acme}/dir`,
    caFile,
    async root() {
      const pem = await (await get(`https://127.0.0.1:${mgmt}/roots/0`)).text();
      const file = path.join(dir, "root.pem");
      writeFileSync(file, pem);
      return file;
    },
    async resolve(host, ip) {
      await fetch(`http://127.0.0.1:${dnsMgmt}/clear-a`, { method: "POST", body: JSON.stringify({ host: `${host}.` }) });
      const r = await fetch(`http://127.0.0.1:${dnsMgmt}/add-a`, { method: "POST", body: JSON.stringify({ host: `${host}.`, addresses: [ip] }) });
      if (!r.ok) throw new Error(`challtestsrv add-a: ${r.status}`);
    },
    stop() {
      for (const p of procs) p.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Run curl (silent, errors shown, 15 s at most) with `args`. */
export async function curl(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn(["curl", "-sS", "--max-time", "15", ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code: await proc.exited, out, err };
}

/** What `openssl x509 <args>` says of the certificate served on `tlsPort` for `host` (async: the server is in this process). */
export async function served(tlsPort: number, host: string, args: string): Promise<string> {
  const proc = Bun.spawn(["sh", "-c", `echo | timeout 10 openssl s_client -connect 127.0.0.1:${tlsPort} -servername ${host} 2>/dev/null | openssl x509 -noout ${args}`], { stdout: "pipe" });
  return await new Response(proc.stdout).text();
}

/** GET `https://host:tlsPort<path>` with curl trusting only `rootFile`, the host resolved to 127.0.0.1. */
export function httpsGet(rootFile: string, tlsPort: number, host: string, p = "/") {
  return curl(["--cacert", rootFile, "--resolve", `${host}:${tlsPort}:127.0.0.1`, `https://${host}:${tlsPort}${p}`]);
}
