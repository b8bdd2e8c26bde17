/**
 * Server self-update (docs/decisions/0388): read the release manifest at OPS_UPDATE_URL, check the
 * entry for this platform against a release key pinned in the binary (Ed25519 over
 * `ops-release/1 <version> <target> <sha256>`), refuse a downgrade unless allowed, download the
 * binary next to the one it replaces while hashing it, refuse any byte that does not match the
 * signed SHA-256, check that it runs and reports the signed version, then rename it over the old
 * one (atomic on one file system). The caller restarts (SIGHUP: src/reexec.ts).
 */
import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { chmodSync, renameSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import path from "node:path";
import { t } from "elysia";
import { Value } from "@sinclair/typebox/value";
import { OpsError } from "../../core/errors";

declare const OPS_RELEASE_PUBLIC_KEY: string | undefined;

/** The release key compiled in by `bun run build --release-key`, or null (a checkout, or none given). */
export function pinnedReleaseKeys(): KeyObject[] {
  const pem = typeof OPS_RELEASE_PUBLIC_KEY === "string" ? OPS_RELEASE_PUBLIC_KEY : "";
  return pem === "" ? [] : [createPublicKey(pem)];
}

export const ReleaseManifest = t.Object({
  version: t.String({ pattern: "^\\d+\\.\\d+\\.\\d+([-+][0-9A-Za-z.-]+)?$" }),
  targets: t.Record(
    t.String({ pattern: "^[a-z0-9]+-[a-z0-9]+$" }),
    t.Object({ url: t.String({ minLength: 1, maxLength: 2048 }), sha256: t.String({ pattern: "^[0-9a-f]{64}$" }), signature: t.String({ maxLength: 1024 }) }),
  ),
});
export type ReleaseManifest = typeof ReleaseManifest.static;

/** The bytes a release entry's signature covers. */
export function signedText(version: string, target: string, sha256: string): string {
  return `ops-release/1 ${version} ${target} ${sha256}`;
}

export interface SelfUpdateOptions {
  manifestUrl: string;
  keys: KeyObject[];
  currentVersion: string;
  /** e.g. linux-x64 */
  target: string;
  /** The binary to replace. */
  binaryPath: string;
  allowDowngrade?: boolean;
  maxBytes?: number;
}

export type SelfUpdateResult = { updated: false; version: string; reason: string } | { updated: true; from: string; version: string; sha256: string; bytes: number };

async function fetchManifest(url: string): Promise<ReleaseManifest> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(30_000), redirect: "follow" });
  } catch (e) {
    throw new OpsError("bad_gateway", `The release manifest at ${url} could not be read: ${(e as Error).message}`);
  }
  if (res.status !== 200) throw new OpsError("bad_gateway", `The release manifest at ${url} answered ${res.status}.`);
  let body: unknown;
  try {
    body = JSON.parse(await res.text());
  } catch {
    throw new OpsError("bad_gateway", `The release manifest at ${url} is not JSON.`);
  }
  if (!Value.Check(ReleaseManifest, body)) throw new OpsError("bad_gateway", `The release manifest at ${url} is not an ops release manifest.`);
  return body;
}

/** Check for, verify and install the release for this platform. */
export async function selfUpdate(o: SelfUpdateOptions): Promise<SelfUpdateResult> {
  if (o.keys.length === 0) throw new OpsError("conflict", "This ops has no release key compiled in (a build without --release-key): it cannot verify a release, so it does not update itself.");
  const m = await fetchManifest(o.manifestUrl);
  const entry = m.targets[o.target];
  if (!entry) throw new OpsError("not_found", `The release ${m.version} has no binary for ${o.target}.`);
  const data = Buffer.from(signedText(m.version, o.target, entry.sha256));
  const sig = Buffer.from(entry.signature, "base64");
  if (!o.keys.some((k) => verify(null, data, k, sig))) throw new OpsError("refused", `The release ${m.version} for ${o.target} is not signed by the release key this ops trusts.`);
  const order = Bun.semver.order(m.version, o.currentVersion.replace(/-dev$/, ""));
  if (order === 0 && !o.currentVersion.endsWith("-dev")) return { updated: false, version: m.version, reason: `ops ${m.version} is already the current release` };
  if (order < 0 && !o.allowDowngrade) throw new OpsError("refused", `The release ${m.version} is older than this ops (${o.currentVersion}); pass --allow-downgrade to go back.`);

  const dir = path.dirname(o.binaryPath);
  const tmp = path.join(dir, `.ops-update-${process.pid}-${Date.now()}`);
  const max = o.maxBytes ?? 1024 * 1024 * 1024;
  try {
    const res = await fetch(new URL(entry.url, o.manifestUrl), { signal: AbortSignal.timeout(600_000) });
    if (res.status !== 200 || !res.body) throw new OpsError("bad_gateway", `The release binary answered ${res.status}.`);
    const hash = new Bun.CryptoHasher("sha256");
    const out = await open(tmp, "w", 0o700);
    let bytes = 0;
    try {
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.byteLength;
        if (bytes > max) throw new OpsError("payload_too_large", `The release binary is larger than ${max} bytes.`);
        hash.update(value);
        await out.write(value);
      }
      await out.sync();
    } finally {
      await out.close();
    }
    const got = hash.digest("hex");
    if (got !== entry.sha256) throw new OpsError("refused", `The downloaded binary's SHA-256 ${got} is not the signed ${entry.sha256}: refused, nothing replaced.`);
    chmodSync(tmp, 0o755);
    const ran = Bun.spawnSync([tmp, "version"], { stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin" } });
    const said = ran.stdout.toString().trim();
    if (ran.exitCode !== 0 || said !== `ops ${m.version}`) throw new OpsError("refused", `The downloaded binary does not run as ops ${m.version} (it said "${said.slice(0, 80)}"): nothing replaced.`);
    renameSync(tmp, o.binaryPath);
    return { updated: true, from: o.currentVersion, version: m.version, sha256: got, bytes };
  } finally {
    rmSync(tmp, { force: true });
  }
}
