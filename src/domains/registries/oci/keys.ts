/**
 * The registry token issuer key: an ECDSA P-256 key in `keys/registry-token.pem` (PKCS#8, mode
 * 0600) that signs the ES256 JWTs `/v2/token` hands out and verifies them on `/v2/`.
 *
 * With the embedded registry (OPS_REGISTRY unset) the key is generated on first start. When
 * OPS_REGISTRY names an external registry, ops never generates one: that registry must trust the
 * issuer's public key, so the operator places the key (and configures its public half, also
 * written as `keys/registry-token.jwks.json`, in the registry). Without a key `/v2/token` answers
 * 503.
 */
import { existsSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { generateKeyPairSync, createPublicKey } from "node:crypto";
import path from "node:path";
import { importPKCS8, importJWK, calculateJwkThumbprint, type JWK } from "jose";
import { coreLocal, type Core } from "../../../core/core";

export const KEY_FILE = "registry-token.pem";
export const JWKS_FILE = "registry-token.jwks.json";

export interface IssuerKey {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  kid: string;
  jwk: JWK;
}

const LOCAL = "registries.issuer-key";

export function keyPath(core: Core): string {
  return path.join(core.config.dataDir, "keys", KEY_FILE);
}

/** Write the public half as a JWKS (what an external registry is configured to trust). */
async function writeJwks(core: Core, pem: string): Promise<{ jwk: JWK; kid: string }> {
  const jwk = createPublicKey(pem).export({ format: "jwk" }) as JWK;
  const kid = await calculateJwkThumbprint(jwk);
  const file = path.join(core.config.dataDir, "keys", JWKS_FILE);
  const body = JSON.stringify({ keys: [{ ...jwk, kid, alg: "ES256", use: "sig" }] }, null, 2) + "\n";
  if (!existsSync(file) || readFileSync(file, "utf8") !== body) writeFileSync(file, body, { mode: 0o644 });
  return { jwk, kid };
}

/** Generate the issuer key when the embedded registry is in use and none exists yet. */
export function ensureIssuerKey(core: Core): void {
  if (core.config.registry !== null) return;
  const file = keyPath(core);
  if (existsSync(file)) return;
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const pem = privateKey.export({ type: "pkcs8", format: "pem" }) as string;
  try {
    writeFileSync(file, pem, { mode: 0o600, flag: "wx" });
  } catch (e) {
    // Another process of the same data dir won the race: use its key.
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  chmodSync(file, 0o600);
  core.log.info("registry token issuer key generated", { file: path.join("keys", KEY_FILE) });
}

/** The issuer key, or null when none is configured. Loaded once per Core. */
export function issuerKey(core: Core): Promise<IssuerKey | null> {
  return coreLocal<Promise<IssuerKey | null>>(core, LOCAL, async () => {
    const file = keyPath(core);
    if (!existsSync(file)) return null;
    const pem = readFileSync(file, "utf8");
    const privateKey = (await importPKCS8(pem, "ES256")) as CryptoKey;
    const { jwk, kid } = await writeJwks(core, pem);
    const publicKey = (await importJWK({ ...jwk, alg: "ES256" }, "ES256")) as CryptoKey;
    return { privateKey, publicKey, kid, jwk };
  });
}

/** The `service` (JWT audience) clients name: OPS_REGISTRY, else the public URL's host. */
export function registryService(core: Core): string {
  return core.config.registry ?? new URL(core.config.publicUrl).host;
}

/** The JWT issuer: the estate's public URL. */
export function registryIssuer(core: Core): string {
  return core.config.publicUrl;
}

/** Where clients fetch tokens (the challenge's realm). */
export function tokenRealm(core: Core): string {
  return `${core.config.publicUrl}/v2/token`;
}
