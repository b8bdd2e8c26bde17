/**
 * A replica's telemetry credential (docs/decisions/0651): an HS256 JWT that ops mints for each
 * replica it starts and hands it in `OTEL_EXPORTER_OTLP_HEADERS`. It names one project (by id),
 * environment and service, and is good for nothing but sending OTLP to `/otlp/v1/{logs,traces,
 * metrics}` as that service (replica-intake.ts), for INGEST_CREDENTIAL_TTL_MS.
 *
 * Signed rather than stored: a replica starts with no write to ops.db, a restart mints a fresh
 * one, and checking one costs an HMAC and no query. The key is `keys/otlp-ingest.key` (32 random
 * bytes, mode 0600, made on first use), independent of the secrets store: sealing it or rotating
 * its master key does not cut every replica's telemetry off.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { SignJWT, jwtVerify, decodeProtectedHeader } from "jose";
import { coreLocal, type Core } from "../../core/core";
import { OpsError } from "../../core/errors";

/** How long a replica's credential is good for: it is minted anew at every start (decision 0651). */
export const INGEST_CREDENTIAL_TTL_MS = 14 * 86_400_000;
/** The JWT `typ` that marks an ops ingest credential (other JWTs, e.g. the registry's, are not read here). */
export const INGEST_TYP = "ops-otlp-ingest+jwt";
const AUDIENCE = "ops-otlp-ingest";
const ISSUER = "ops";
export const KEY_FILE = "otlp-ingest.key";

/** Whom a credential lets send: one service of one environment of one project. */
export interface IngestIdentity {
  projectId: string;
  environment: string;
  service: string;
}

/** A verified credential. */
export interface IngestClaim extends IngestIdentity {
  /** The credential's own id (its share of the intake's bounds). */
  id: string;
  /** Epoch ms. */
  expiresAt: number;
}

/** The signing key, made on first use (another process of the same data dir may win the race). */
function keyOf(core: Core): Uint8Array {
  return coreLocal(core, "observability.ingest-key", () => {
    const dir = path.join(core.config.dataDir, "keys");
    const file = path.join(dir, KEY_FILE);
    if (!existsSync(file)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      try {
        writeFileSync(file, randomBytes(32).toString("hex") + "\n", { mode: 0o600, flag: "wx" });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      }
      chmodSync(file, 0o600);
    }
    const key = Buffer.from(readFileSync(file, "utf8").trim(), "hex");
    if (key.length !== 32) throw new OpsError("unavailable", `keys/${KEY_FILE} is not 64 hex characters.`);
    return new Uint8Array(key);
  });
}

/** Mint a credential for a replica of `who`; good for INGEST_CREDENTIAL_TTL_MS from now. */
export async function mintIngestCredential(core: Core, who: IngestIdentity): Promise<{ token: string; expiresAt: number }> {
  const now = core.clock.now();
  const expiresAt = now + INGEST_CREDENTIAL_TTL_MS;
  const token = await new SignJWT({ prj: who.projectId, env: who.environment, svc: who.service })
    .setProtectedHeader({ alg: "HS256", typ: INGEST_TYP })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(`${who.projectId}/${who.environment}/${who.service}`)
    .setJti(randomBytes(12).toString("base64url"))
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(expiresAt / 1000))
    .sign(keyOf(core));
  return { token, expiresAt };
}

/**
 * The ingest credential an `Authorization` header carries, or null when it carries something else
 * (an ops token, another JWT, nothing): those are the permission macro's to decide.
 */
export function ingestCredentialOf(authorization: string | null): string | null {
  if (!authorization || !/^bearer /i.test(authorization)) return null;
  const token = authorization.slice(7).trim();
  if (!token.startsWith("eyJ") || token.split(".").length !== 3) return null;
  try {
    return decodeProtectedHeader(token).typ === INGEST_TYP ? token : null;
  } catch {
    return null;
  }
}

/** Verify a credential: signature, audience, expiry (on ops's clock). Throws 401 saying why. */
export async function verifyIngestCredential(core: Core, token: string): Promise<IngestClaim> {
  try {
    const { payload } = await jwtVerify(token, keyOf(core), { algorithms: ["HS256"], issuer: ISSUER, audience: AUDIENCE, typ: INGEST_TYP, currentDate: new Date(core.clock.now()) });
    const { prj, env, svc, jti, exp } = payload as { prj?: unknown; env?: unknown; svc?: unknown; jti?: string; exp?: number };
    if (typeof prj !== "string" || typeof env !== "string" || typeof svc !== "string" || !jti || !exp) throw new Error("claims");
    return { projectId: prj, environment: env, service: svc, id: jti, expiresAt: exp * 1000 };
  } catch (e) {
    const expired = (e as { code?: string }).code === "ERR_JWT_EXPIRED";
    throw new OpsError("unauthorized", expired ? "This replica's telemetry credential has expired: restart or redeploy the service for a new one." : "The telemetry credential is not valid.");
  }
}
