/**
 * The GitHub REST client of the App host: every call goes through `call`, which authenticates (App
 * JWT or an installation token), sends the versioned GitHub media type, and turns GitHub's
 * failures into ops errors the same way for every method:
 * - rate limits (403/429 with `x-ratelimit-remaining: 0` or a `retry-after`) and 5xx answers are
 *   `unavailable` (503) with `retry-after` when GitHub said how long, or the rate-limit reset time;
 *   a GET answered 5xx (or not answered) is tried once more first, after a short backoff;
 * - an installation token GitHub refuses (401: revoked, expired early) is dropped and the call made
 *   once more with a fresh one; a refused App JWT is 503 naming the settings to check;
 * - statuses the caller lists in `expect` (404 for "does not exist", 422 for "already exists") are
 *   answers and come back to it; any other 404 is `not_found`, 403/409/422 are `conflict` with
 *   GitHub's message, anything else unexpected is `bad_gateway`.
 * Bodies and error messages never carry a token.
 */
import type { Clock } from "../../../core/clock";
import type { Logger } from "../../../core/log";
import { OpsError } from "../../../core/errors";
import type { AppCredentials, InstallationToken } from "./auth";

const API_VERSION = "2022-11-28";
const TIMEOUT_MS = 30_000;
/** Backoff before the one retry of an idempotent call. */
const RETRY_BACKOFF_MS = 250;

/** Who a call speaks for: the App itself (JWT) or the App inside one installation. */
export type CallAuth = "app" | { installation: number };

export interface CallOptions {
  method?: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  /** Path under the API URL, segments already encoded. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  auth: CallAuth;
  /** Statuses besides 2xx that the caller handles itself. */
  expect?: number[];
  accept?: string;
  timeoutMs?: number;
}

export interface CallResult<T> {
  status: number;
  headers: Headers;
  data: T;
}

/** GitHub's error body. */
interface GithubError {
  message?: string;
  errors?: Array<{ message?: string; code?: string; field?: string } | string>;
}

/** `/repos/{owner}/{repo}` with each part encoded. */
export function repoPath(repo: string): string {
  const [owner, name] = repo.split("/");
  return `/repos/${encodeURIComponent(owner ?? "")}/${encodeURIComponent(name ?? "")}`;
}

/** GitHub's message of an error answer, with its field errors, for a human. */
export function githubMessage(data: unknown): string {
  const e = (data ?? {}) as GithubError;
  const extra = (e.errors ?? []).map((x) => (typeof x === "string" ? x : (x.message ?? [x.field, x.code].filter(Boolean).join(" ")))).filter(Boolean);
  const base = typeof e.message === "string" && e.message !== "" ? e.message : "no message";
  return extra.length > 0 ? `${base} (${extra.join("; ")})` : base;
}

/** No answer at all (connection refused, reset, timed out): 503, and worth one retry for a GET. */
class Unreachable extends OpsError {
  constructor(cause: unknown) {
    super("unavailable", "GitHub cannot be reached right now; try again shortly.", undefined, { cause, headers: { "retry-after": "30" } });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class GithubClient {
  constructor(
    private readonly apiUrl: string,
    private readonly creds: AppCredentials,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly userAgent: string,
  ) {}

  /** One REST call, decoded as JSON (or text), with the failure handling described above. */
  async call<T = unknown>(opts: CallOptions): Promise<CallResult<T>> {
    const res = await this.send(opts);
    const text = await res.text();
    let data: unknown = text;
    if ((res.headers.get("content-type") ?? "").includes("json") && text !== "") {
      try {
        data = JSON.parse(text);
      } catch {
        throw new OpsError("bad_gateway", `GitHub answered ${opts.method ?? "GET"} ${opts.path} with malformed JSON.`);
      }
    }
    if (res.status >= 200 && res.status < 300) return { status: res.status, headers: res.headers, data: data as T };
    if (opts.expect?.includes(res.status)) return { status: res.status, headers: res.headers, data: data as T };
    throw this.failure(opts, res, data);
  }

  /**
   * Download what a redirect of the API points at (an archive on GitHub's download host), without
   * the App's credentials: the URL carries its own short-lived token. Non-2xx answers fail as in `call`.
   */
  async download(location: string, timeoutMs: number): Promise<Response> {
    const url = new URL(location, this.apiUrl);
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new OpsError("bad_gateway", "GitHub's download link is not an HTTP URL.");
    let res: Response;
    try {
      res = await fetch(url, { headers: { "user-agent": this.userAgent }, redirect: "follow", signal: AbortSignal.timeout(timeoutMs) });
    } catch (e) {
      this.log.warn("github download unreachable", { host: url.host, err: String(e) });
      throw new OpsError("unavailable", "GitHub's download host cannot be reached right now; try again shortly.", undefined, { cause: e, headers: { "retry-after": "30" } });
    }
    if (res.status >= 200 && res.status < 300) return res;
    const text = await res.text();
    throw this.failure({ path: `download ${url.pathname}`, auth: "app" }, res, text);
  }

  /** Every page of a list call (`Link: rel="next"`), 100 per page. */
  async paginate<T>(opts: CallOptions, items: (data: unknown) => T[]): Promise<T[]> {
    const out: T[] = [];
    let query: Record<string, string | number | undefined> = { ...opts.query, per_page: 100 };
    let path = opts.path;
    for (let page = 0; page < 1000; page++) {
      const r = await this.call({ ...opts, path, query });
      out.push(...items(r.data));
      const next = /<([^>]+)>;\s*rel="next"/.exec(r.headers.get("link") ?? "")?.[1];
      if (!next) return out;
      const url = new URL(next, this.apiUrl);
      const base = new URL(this.apiUrl);
      if (url.origin !== base.origin) throw new OpsError("bad_gateway", "GitHub's next page link points at another host.");
      path = url.pathname.slice(base.pathname.replace(/\/$/, "").length);
      query = Object.fromEntries(url.searchParams);
    }
    throw new OpsError("bad_gateway", `GitHub's list ${opts.path} did not end after 1000 pages.`);
  }

  /** Trade the App JWT for an installation token (`POST /app/installations/{id}/access_tokens`). */
  readonly fetchInstallationToken = async (installationId: number, jwt: string): Promise<InstallationToken> => {
    const res = await this.fetchOnce({ method: "POST", path: `/app/installations/${installationId}/access_tokens`, auth: "app" }, `Bearer ${jwt}`);
    const text = await res.text();
    let data: unknown = null;
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
    if (res.status === 201 || res.status === 200) {
      const d = data as { token?: unknown; expires_at?: unknown };
      const expiresAt = typeof d.expires_at === "string" ? Date.parse(d.expires_at) : NaN;
      if (typeof d.token !== "string" || Number.isNaN(expiresAt)) throw new OpsError("bad_gateway", "GitHub's installation token answer lacks a token or its expiry.");
      return { token: d.token, expiresAt };
    }
    if (res.status === 404) throw new OpsError("conflict", `The GitHub App is not installed there any more (installation ${installationId} is gone).`);
    throw this.failure({ method: "POST", path: `/app/installations/${installationId}/access_tokens`, auth: "app" }, res, data);
  };

  private async authorization(auth: CallAuth): Promise<string> {
    if (auth === "app") return `Bearer ${await this.creds.appJwt()}`;
    return `Bearer ${await this.creds.installationToken(auth.installation, this.fetchInstallationToken)}`;
  }

  /** Send with one retry: a refused installation token is renewed; an idempotent call is repeated after a 5xx or no answer. */
  private async send(opts: CallOptions): Promise<Response> {
    const idempotent = (opts.method ?? "GET") === "GET";
    let renewed = false;
    let retried = false;
    for (;;) {
      const authorization = await this.authorization(opts.auth);
      let res: Response;
      try {
        res = await this.fetchOnce(opts, authorization);
      } catch (e) {
        if (idempotent && !retried && e instanceof Unreachable) {
          retried = true;
          await sleep(RETRY_BACKOFF_MS);
          continue;
        }
        throw e;
      }
      if (res.status === 401 && opts.auth !== "app" && !renewed) {
        await res.arrayBuffer();
        renewed = true;
        this.creds.dropToken(opts.auth.installation);
        continue;
      }
      if (res.status >= 500 && idempotent && !retried) {
        await res.arrayBuffer();
        retried = true;
        await sleep(RETRY_BACKOFF_MS);
        continue;
      }
      return res;
    }
  }

  private async fetchOnce(opts: CallOptions, authorization: string): Promise<Response> {
    const url = new URL(this.apiUrl + opts.path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      accept: opts.accept ?? "application/vnd.github+json",
      authorization,
      "user-agent": this.userAgent,
      "x-github-api-version": API_VERSION,
    };
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    try {
      return await fetch(url, {
        method: opts.method ?? "GET",
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        redirect: "manual",
        signal: AbortSignal.timeout(opts.timeoutMs ?? TIMEOUT_MS),
      });
    } catch (e) {
      this.log.warn("github unreachable", { method: opts.method ?? "GET", path: opts.path, err: String(e) });
      throw new Unreachable(e);
    }
  }

  /** Seconds until a rate-limited call may be retried, or null when the answer is not a rate limit. */
  private rateLimited(res: Response): number | null {
    if (res.status !== 403 && res.status !== 429) return null;
    const after = res.headers.get("retry-after");
    if (after !== null && /^\d+$/.test(after.trim())) return Math.max(1, Number(after.trim()));
    if (res.headers.get("x-ratelimit-remaining") === "0") {
      const reset = Number(res.headers.get("x-ratelimit-reset"));
      return Number.isFinite(reset) && reset > 0 ? Math.max(1, Math.ceil(reset - this.clock.now() / 1000)) : 60;
    }
    return res.status === 429 ? 60 : null;
  }

  private failure(opts: CallOptions, res: Response, data: unknown): OpsError {
    const what = `${opts.method ?? "GET"} ${opts.path}`;
    const limited = this.rateLimited(res);
    if (limited !== null) {
      this.log.warn("github rate limit", { call: what, status: res.status, retryAfter: limited });
      return new OpsError("unavailable", `GitHub's rate limit for the App is spent; try again in ${limited} s.`, { retry_after: limited }, { headers: { "retry-after": String(limited) } });
    }
    if (res.status >= 500) {
      const after = res.headers.get("retry-after");
      const headers: Record<string, string> = after !== null && /^\d+$/.test(after.trim()) ? { "retry-after": after.trim() } : {};
      this.log.warn("github unavailable", { call: what, status: res.status });
      return new OpsError("unavailable", `GitHub answered ${res.status}; try again shortly.`, undefined, { headers });
    }
    const message = githubMessage(data);
    if (res.status === 401) {
      this.log.error("github refused the app's credentials", { call: what, message });
      return new OpsError("unavailable", "GitHub refused the App's credentials: check OPS_GITHUB_APP_ID and the private key file.");
    }
    if (res.status === 404) return new OpsError("not_found", `GitHub has nothing at ${what} for the App (missing, or not visible to its installation).`);
    if (res.status === 403 || res.status === 405 || res.status === 409 || res.status === 422) return new OpsError("conflict", `GitHub refused ${what}: ${message}`);
    this.log.error("github answered unexpectedly", { call: what, status: res.status, message });
    return new OpsError("bad_gateway", `GitHub answered ${what} with HTTP ${res.status}.`);
  }
}
