/**
 * ACME (RFC 8555) through `acme-client` (decision 0342): one account per data dir, its P-256 key
 * in `keys/acme-account.pem` (0600, made on first use), found again by that key at every order with
 * its contact set to OPS_ACME_EMAIL or to none (decision 0532), HTTP-01 only, answered by the ingress's
 * plain listener from `pending` (token → key authorization). ops never checks DNS or fetches its
 * own challenge first: the ACME server's view is the one that counts. The library's own retries
 * are off (a 429 with a Retry-After of an hour must not hold an order open): a failure ends the
 * order with a reason, and the certificates domain decides when to try again.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import https from "node:https";
import path from "node:path";
import { X509Certificate } from "node:crypto";
import type * as AcmeClient from "acme-client";

/**
 * The library (with axios, node-forge and @peculiar/x509 behind it) loads on the first order, not
 * at start: most servers never order a certificate, and loading it costs about 100 ms of start-up
 * and megabytes held for good (decision 0640).
 */
let loaded: Promise<typeof AcmeClient> | null = null;
const library = (): Promise<typeof AcmeClient> => (loaded ??= import("acme-client"));

export interface AcmeSettings {
  directoryUrl: string;
  email: string | null;
  /** PEM the ACME server's own certificate is checked against (a private CA); null = the system's. */
  caFile: string | null;
}

export interface Issued {
  cert: string;
  key: string;
  notBefore: number;
  notAfter: number;
}

/** Why an order failed, and whether the server said it was rate-limited (then no retry for a while). */
export class AcmeOrderError extends Error {
  constructor(
    message: string,
    readonly rateLimited: boolean,
  ) {
    super(message);
    this.name = "AcmeOrderError";
  }
}

/** The account key, made (P-256, 0600) under `<dataDir>/keys/` on first use. */
export async function accountKey(dataDir: string): Promise<Buffer> {
  const file = path.join(dataDir, "keys", "acme-account.pem");
  if (existsSync(file)) return readFileSync(file);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const acme = await library();
  const key = await acme.crypto.createPrivateEcdsaKey("P-256");
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, key, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return key;
}

/** The validity of a PEM certificate (its first one), in ms since the epoch. */
export function validity(certPem: string): { notBefore: number; notAfter: number } {
  const x = new X509Certificate(certPem);
  return { notBefore: Date.parse(x.validFrom), notAfter: Date.parse(x.validTo) };
}

let configuredCa: string | null | undefined;

/** Point the library's HTTP client at the ACME server's CA (process-wide: one setting per server). */
function configureHttp(acme: typeof AcmeClient, caFile: string | null): void {
  if (configuredCa === caFile) return;
  configuredCa = caFile;
  acme.axios.defaults.httpsAgent = caFile ? new https.Agent({ ca: readFileSync(caFile, "utf8") }) : undefined;
  (acme.axios.defaults as { acmeSettings?: { retryMaxAttempts: number } }).acmeSettings!.retryMaxAttempts = 0;
}

const RATE_LIMITED = /rate.?limit|too many/i;

/**
 * Order a certificate for `hosts` with HTTP-01: the key authorization sits in `pending` while the
 * server validates, and goes once the order ends either way.
 */
export async function orderCertificate(settings: AcmeSettings, key: Buffer, hosts: string[], pending: Map<string, string>): Promise<Issued> {
  const acme = await library();
  configureHttp(acme, settings.caFile);
  const client = new acme.Client({ directoryUrl: settings.directoryUrl, accountKey: key, backoffAttempts: 10, backoffMin: 500, backoffMax: 10_000 });
  const [certKey, csr] = await acme.crypto.createCsr({ altNames: hosts }, await acme.crypto.createPrivateEcdsaKey("P-256"));
  const tokens: string[] = [];
  try {
    // Decision 0532: the account is found (or made) here with its contact always stated, so that
    // `auto()` skips its own registration, whose follow-up update is empty when there is no email.
    await client.createAccount({ termsOfServiceAgreed: true, contact: settings.email ? [`mailto:${settings.email}`] : [] });
    const cert = await client.auto({
      csr,
      termsOfServiceAgreed: true,
      challengePriority: ["http-01"],
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        if (challenge.type !== "http-01") throw new Error(`only http-01 is answered, not ${challenge.type}`);
        tokens.push(challenge.token);
        pending.set(challenge.token, keyAuthorization);
        // An ingress in another process (decision 0600) must have the answer before the CA asks.
        await (pending as { synced?: () => Promise<void> }).synced?.();
      },
      challengeRemoveFn: async (_authz, challenge) => {
        pending.delete(challenge.token);
      },
    });
    const keyPem = certKey.toString();
    return { cert, key: keyPem, ...validity(cert) };
  } catch (e) {
    const message = ((e as Error).message || String(e)).replace(/\s+/g, " ").trim().slice(0, 500);
    throw new AcmeOrderError(message, RATE_LIMITED.test(message));
  } finally {
    for (const t of tokens) pending.delete(t);
  }
}
