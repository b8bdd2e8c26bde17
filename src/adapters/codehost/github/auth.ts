/**
 * The GitHub App's credentials. GitHub authenticates an App in two steps: a short JWT signed with
 * the App's private key (RS256, `iss` = App id) speaks for the App itself (`/app`,
 * `/app/installations`), and trades for an installation access token (`POST
 * /app/installations/{id}/access_tokens`, one hour) that speaks for the App inside one owner's
 * repositories. Both are cached: the JWT until a minute before it lapses, each installation token
 * until five minutes before its `expires_at`, and concurrent callers share one token request.
 *
 * Times come from `core.clock`; `iat` is set 60 s in the past because GitHub refuses a JWT issued
 * "in the future" by a clock a little ahead of its own.
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { SignJWT } from "jose";
import type { Clock } from "../../../core/clock";
import { OpsError } from "../../../core/errors";

/** How far back `iat` is set (GitHub's advice for clock drift). */
const IAT_SKEW_S = 60;
/** JWT lifetime from `iat`; GitHub refuses an `exp` more than 10 minutes ahead of its clock. */
const JWT_TTL_S = 9 * 60;
/** A JWT is replaced this long before its `exp`. */
const JWT_RENEW_MS = 60_000;
/** An installation token is replaced this long before its `expires_at`. */
const TOKEN_RENEW_MS = 5 * 60_000;

export interface InstallationToken {
  token: string;
  /** Epoch ms. */
  expiresAt: number;
}

/** Fetches a fresh installation token with the App JWT (the REST client's call). */
export type TokenFetcher = (installationId: number, jwt: string) => Promise<InstallationToken>;

export class AppCredentials {
  private key: KeyObject | null = null;
  private jwt: { value: string; renewAt: number } | null = null;
  private readonly tokens = new Map<number, InstallationToken>();
  private readonly pending = new Map<number, Promise<InstallationToken>>();

  constructor(
    private readonly appId: string,
    private readonly keyFile: string,
    private readonly clock: Clock,
  ) {}

  /** The App's private key, read once. GitHub hands out PKCS#1 PEM files; PKCS#8 works too. */
  private privateKey(): KeyObject {
    if (this.key) return this.key;
    let pem: string;
    try {
      pem = readFileSync(this.keyFile, "utf8");
    } catch (e) {
      throw new OpsError("unavailable", "The GitHub App's private key file (OPS_GITHUB_APP_PRIVATE_KEY_FILE) cannot be read.", undefined, { cause: e });
    }
    try {
      const key = createPrivateKey(pem);
      if (key.asymmetricKeyType !== "rsa") throw new Error(`an ${key.asymmetricKeyType} key, not RSA`);
      this.key = key;
      return key;
    } catch (e) {
      throw new OpsError("unavailable", "The GitHub App's private key file (OPS_GITHUB_APP_PRIVATE_KEY_FILE) does not hold an RSA private key.", undefined, { cause: e });
    }
  }

  /** A JWT for the App's own endpoints (cached until a minute before it lapses). */
  async appJwt(): Promise<string> {
    const now = this.clock.now();
    if (this.jwt && now < this.jwt.renewAt) return this.jwt.value;
    const iat = Math.floor(now / 1000) - IAT_SKEW_S;
    const exp = iat + JWT_TTL_S;
    const value = await new SignJWT({}).setProtectedHeader({ alg: "RS256", typ: "JWT" }).setIssuedAt(iat).setExpirationTime(exp).setIssuer(this.appId).sign(this.privateKey());
    this.jwt = { value, renewAt: exp * 1000 - JWT_RENEW_MS };
    return value;
  }

  /** An installation token, from the cache while it has more than five minutes left. */
  async installationToken(installationId: number, fetchToken: TokenFetcher): Promise<string> {
    const cached = this.tokens.get(installationId);
    if (cached && this.clock.now() < cached.expiresAt - TOKEN_RENEW_MS) return cached.token;
    let inflight = this.pending.get(installationId);
    if (!inflight) {
      inflight = (async () => fetchToken(installationId, await this.appJwt()))();
      this.pending.set(installationId, inflight);
      inflight.then(
        (t) => {
          this.tokens.set(installationId, t);
          this.pending.delete(installationId);
        },
        () => this.pending.delete(installationId),
      );
    }
    return (await inflight).token;
  }

  /** Forget an installation's token (GitHub refused it: revoked, or the App was uninstalled). */
  dropToken(installationId: number): void {
    this.tokens.delete(installationId);
  }
}
