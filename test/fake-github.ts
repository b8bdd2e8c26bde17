/**
 * A fake GitHub for the GitHub App host's tests: a `Bun.serve` on a free loopback port answering
 * exactly the REST calls the adapter makes, with GitHub's documented JSON shapes and status codes,
 * backed by real git repositories (test/fake-github-repos.ts). Like GitHub it
 * - verifies the App JWT on `/app…` calls (RS256 under the App's public key, `iss` = App id,
 *   `iat` not in the future, `exp` not past and at most 10 minutes ahead);
 * - hands out installation tokens (`ghs_…`, one hour) and checks one on every repository call:
 *   unknown, expired or revoked → 401, another installation's repository → 404;
 * - redirects `tarball/{ref}` to a download URL carrying a short-lived token;
 * - sends `x-ratelimit-*` headers, and answers a rate limit (403 with `x-ratelimit-remaining: 0`,
 *   or 429 with `retry-after`) or a 5xx when a test asks it to (`failNext`).
 * Every call is recorded (`calls`) so tests can count token requests and retries.
 */
import { createHmac, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodeJwt, jwtVerify } from "jose";
import { freePort } from "./harness";
import type { DomainModule } from "../src/core/core";
import { codeHostFor } from "../src/adapters/codehost";
import { hostWebhookRoutes } from "../src/domains/sources/webhook";
import { FakeRepos, json, notFound, type Answer, type FakeRepo } from "./fake-github-repos";

export type { FakeRepo, FakePull } from "./fake-github-repos";

export interface FakeInstallation {
  id: number;
  login: string;
  type: "User" | "Organization";
  /** A suspended installation is listed but gets no tokens (403), as on GitHub. */
  suspended?: boolean;
}

export interface FakeCall {
  method: string;
  path: string;
  /** How the call authenticated: the App JWT, an installation token, a download token, or nothing valid. */
  auth: "jwt" | "token" | "download" | "none";
  installation: number | null;
  status: number;
}

/** A canned answer for the next matching calls (rate limits, outages). */
export interface Fault {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Only calls whose path matches (default every call). */
  path?: RegExp;
  /** How many calls it answers (default 1). */
  times?: number;
}

export interface FakeGithubOptions {
  appId?: string;
  slug?: string;
  /** The clock tokens and JWTs are checked against (a test's FixedClock); default the real time. */
  now?: () => number;
  /** Entries a recursive tree listing holds before `truncated` (GitHub: 100 000). */
  treeLimit?: number;
  webUrl?: string;
}

const TOKEN_TTL_MS = 3_600_000;
const PAGE_MAX = 100;

export class FakeGithub {
  readonly appId: string;
  readonly slug: string;
  readonly webUrl: string;
  /** The App's private key (PKCS#1 PEM, as GitHub hands it out), in a temp file. */
  readonly privateKeyFile: string;
  readonly calls: FakeCall[] = [];
  /** Every App JWT the fake accepted, in order. */
  readonly jwts: string[] = [];
  readonly installations: FakeInstallation[] = [];
  readonly repos: FakeRepos;
  treeLimit: number;
  /** Webhooks the fake sends: the secret they are signed with. */
  webhookSecret = randomBytes(16).toString("hex");

  private readonly dir = mkdtempSync(path.join(tmpdir(), "fake-github-"));
  private readonly publicKey: KeyObject;
  private readonly tokens = new Map<string, { installation: number; expiresAt: number }>();
  private readonly downloads = new Map<string, { repo: string; sha: string; expiresAt: number }>();
  private faults: Array<Required<Pick<Fault, "status" | "times">> & Fault> = [];
  private server: ReturnType<typeof Bun.serve> | null = null;
  private nextInstallation = 41;
  readonly now: () => number;
  url = "";

  constructor(opts: FakeGithubOptions = {}) {
    this.appId = opts.appId ?? "424242";
    this.slug = opts.slug ?? "ops-test-app";
    this.now = opts.now ?? (() => Date.now());
    this.treeLimit = opts.treeLimit ?? 100_000;
    this.webUrl = opts.webUrl ?? "https://github.example";
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    this.publicKey = publicKey;
    this.privateKeyFile = path.join(this.dir, "app.private-key.pem");
    writeFileSync(this.privateKeyFile, privateKey.export({ type: "pkcs1", format: "pem" }), { mode: 0o600 });
    this.repos = new FakeRepos(() => this.url, this.webUrl, this.now);
  }

  /** Start listening on a free loopback port. */
  static start(opts: FakeGithubOptions = {}): FakeGithub {
    const gh = new FakeGithub(opts);
    const port = freePort();
    gh.server = Bun.serve({ hostname: "127.0.0.1", port, fetch: (req) => gh.handle(req) });
    gh.url = `http://127.0.0.1:${port}`;
    return gh;
  }

  stop(): void {
    this.server?.stop(true);
    this.repos.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The OPS_* settings that point an ops app at this fake. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      OPS_CODE_HOST: "github",
      OPS_GITHUB_APP_ID: this.appId,
      OPS_GITHUB_APP_SLUG: this.slug,
      OPS_GITHUB_APP_PRIVATE_KEY_FILE: this.privateKeyFile,
      OPS_GITHUB_WEBHOOK_SECRET: this.webhookSecret,
      OPS_GITHUB_API_URL: this.url,
      OPS_GITHUB_URL: this.webUrl,
      ...extra,
    };
  }

  /** Install the App on an owner. */
  install(login: string, type: FakeInstallation["type"] = "Organization"): FakeInstallation {
    const inst = { id: this.nextInstallation++, login, type };
    this.installations.push(inst);
    return inst;
  }

  /** Remove an installation (its tokens stop working, as on GitHub). */
  uninstall(id: number): void {
    const i = this.installations.findIndex((x) => x.id === id);
    if (i >= 0) this.installations.splice(i, 1);
    for (const [t, v] of this.tokens) if (v.installation === id) this.tokens.delete(t);
  }

  /** A repository the installation on its owner sees (the owner must have the App installed). */
  createRepo(fullName: string, opts: { private?: boolean; defaultBranch?: string } = {}): FakeRepo {
    const owner = fullName.split("/")[0]!;
    const inst = this.installations.find((i) => i.login.toLowerCase() === owner.toLowerCase());
    if (!inst) throw new Error(`the App is not installed on ${owner}`);
    return this.repos.create(fullName, inst.id, opts);
  }

  repo(fullName: string): FakeRepo {
    const r = this.repos.get(fullName);
    if (!r) throw new Error(`no repository ${fullName}`);
    return r;
  }

  /** Answer the next calls with `fault` (a rate limit, a 5xx …). */
  failNext(fault: Fault): void {
    this.faults.push({ times: 1, ...fault });
  }

  /** Every installation token stops working (GitHub revoked them). */
  revokeTokens(): void {
    this.tokens.clear();
  }

  /** Calls made so far matching `method` and a path pattern. */
  count(method: string, pathRe: RegExp): number {
    return this.calls.filter((c) => c.method === method && pathRe.test(c.path)).length;
  }

  /**
   * Deliver a webhook to `url` as GitHub does: JSON body, `X-GitHub-Event`, `X-GitHub-Delivery`,
   * `X-Hub-Signature-256` (HMAC-SHA256 of the body under `secret`, default the fake's).
   */
  async deliver(url: string, event: string, payload: unknown, opts: { id?: string; secret?: string; signature?: string } = {}): Promise<Response> {
    const body = JSON.stringify(payload);
    const signature = opts.signature ?? `sha256=${createHmac("sha256", opts.secret ?? this.webhookSecret).update(body).digest("hex")}`;
    return fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "user-agent": "GitHub-Hookshot/fake", "x-github-event": event, "x-github-delivery": opts.id ?? crypto.randomUUID(), "x-hub-signature-256": signature },
      body,
    });
  }

  /** The `push` payload GitHub sends for a ref update of `repo`. */
  pushPayload(fullName: string, ref: string, before: string, after: string, sender = "octo-dev") {
    const repo = this.repo(fullName);
    return {
      ref,
      before,
      after,
      created: /^0+$/.test(before),
      deleted: /^0+$/.test(after),
      forced: false,
      repository: this.repos.repoJson(repo),
      pusher: { name: sender, email: `${sender}@users.noreply.github.test` },
      sender: { login: sender, id: 1, type: "User" },
      installation: { id: repo.installationId, node_id: `I_${repo.installationId}` },
      commits: [],
      head_commit: null,
    };
  }

  // ---- serving ---------------------------------------------------------------------------------

  private async handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const call: FakeCall = { method: req.method, path: url.pathname + url.search, auth: "none", installation: null, status: 0 };
    this.calls.push(call);
    let answer: Answer;
    try {
      answer = await this.route(req, url, call);
    } catch (e) {
      answer = json(500, { message: `fake GitHub failed: ${(e as Error).message}` });
    }
    call.status = answer.status;
    const headers: Record<string, string> = {
      "x-github-media-type": "github.v3; format=json",
      "x-ratelimit-limit": "5000",
      "x-ratelimit-remaining": "4999",
      "x-ratelimit-reset": String(Math.floor(this.now() / 1000) + 3600),
      ...answer.headers,
    };
    if (answer.raw) return new Response(answer.raw as Uint8Array<ArrayBuffer>, { status: answer.status, headers });
    if (answer.body === undefined) return new Response(null, { status: answer.status, headers });
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
  }

  private fault(pathname: string): Answer | null {
    const i = this.faults.findIndex((f) => !f.path || f.path.test(pathname));
    if (i < 0) return null;
    const f = this.faults[i]!;
    if (--f.times <= 0) this.faults.splice(i, 1);
    return { status: f.status, headers: f.headers, body: f.body ?? { message: "fault", documentation_url: "https://docs.github.com/rest" } };
  }

  /** The App JWT of a request, verified as GitHub does; null when it is not acceptable. */
  private async verifyJwt(req: Request): Promise<boolean> {
    const token = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
    if (!token || token.startsWith("ghs_")) return false;
    try {
      const { payload, protectedHeader } = await jwtVerify(token, this.publicKey, { algorithms: ["RS256"], issuer: this.appId, currentDate: new Date(this.now()) });
      const nowS = Math.floor(this.now() / 1000);
      if (protectedHeader.alg !== "RS256" || typeof payload.iat !== "number" || typeof payload.exp !== "number") return false;
      const ok = payload.iat <= nowS && payload.exp > nowS && payload.exp <= nowS + 600;
      if (ok) this.jwts.push(token);
      return ok;
    } catch {
      return false;
    }
  }

  /** The installation a request's token speaks for, or null. */
  private tokenOf(req: Request): number | null {
    const m = /^(?:Bearer|token) (ghs_[A-Za-z0-9]+)$/.exec(req.headers.get("authorization") ?? "");
    const t = m ? this.tokens.get(m[1]!) : undefined;
    if (!t || t.expiresAt <= this.now()) return null;
    return t.installation;
  }

  private page<T>(items: T[], url: URL): { items: T[]; headers: Record<string, string> } {
    const per = Math.min(PAGE_MAX, Math.max(1, Number(url.searchParams.get("per_page") ?? 30)));
    const page = Math.max(1, Number(url.searchParams.get("page") ?? 1));
    const slice = items.slice((page - 1) * per, page * per);
    const headers: Record<string, string> = {};
    if (page * per < items.length) {
      const next = new URL(url);
      next.searchParams.set("page", String(page + 1));
      next.searchParams.set("per_page", String(per));
      headers.link = `<${this.url}${next.pathname}${next.search}>; rel="next"`;
    }
    return { items: slice, headers };
  }

  private async body(req: Request): Promise<Record<string, unknown>> {
    const text = await req.text();
    if (text === "") return {};
    const v = JSON.parse(text);
    return v && typeof v === "object" ? v : {};
  }

  private installationJson(i: FakeInstallation) {
    return {
      id: i.id,
      account: { login: i.login, id: i.id * 7, type: i.type },
      app_id: Number(this.appId),
      app_slug: this.slug,
      target_type: i.type,
      suspended_at: i.suspended ? new Date(this.now()).toISOString() : null,
      repository_selection: "selected",
      html_url: `${this.webUrl}/organizations/${i.login}/settings/installations/${i.id}`,
      permissions: { contents: "write", pull_requests: "write", checks: "write", statuses: "write", deployments: "write", metadata: "read" },
      events: ["push"],
    };
  }

  private async route(req: Request, url: URL, call: FakeCall): Promise<Answer> {
    const p = url.pathname;
    const m = req.method;
    const faulted = this.fault(p);
    if (faulted) return faulted;

    // The download host: its URL carries its own token.
    const dl = /^\/_codeload\/([^/]+)\/([^/]+)\/legacy\.tar\.gz\/([0-9a-f]{40})$/.exec(p);
    if (dl && m === "GET") {
      const grant = this.downloads.get(url.searchParams.get("token") ?? "");
      if (!grant || grant.expiresAt <= this.now() || grant.sha !== dl[3] || grant.repo.toLowerCase() !== `${dl[1]}/${dl[2]}`.toLowerCase()) return notFound();
      call.auth = "download";
      return { status: 200, raw: this.repos.archive(this.repo(grant.repo), grant.sha), headers: { "content-type": "application/x-gzip", "content-disposition": `attachment; filename=${dl[1]}-${dl[2]}-${dl[3]!.slice(0, 7)}.tar.gz` } };
    }

    // App endpoints: the JWT.
    if (p === "/app" || p.startsWith("/app/")) {
      if (!(await this.verifyJwt(req))) return json(401, { message: "A JSON web token could not be decoded", documentation_url: "https://docs.github.com/rest" });
      call.auth = "jwt";
      if (p === "/app" && m === "GET") {
        return json(200, { id: Number(this.appId), slug: this.slug, name: "ops test app", owner: { login: "ops-org" }, html_url: `${this.webUrl}/apps/${this.slug}`, events: ["push"] });
      }
      if (p === "/app/installations" && m === "GET") {
        const { items, headers } = this.page(this.installations.map((i) => this.installationJson(i)), url);
        return json(200, items, headers);
      }
      const tok = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(p);
      if (tok && m === "POST") {
        const inst = this.installations.find((i) => i.id === Number(tok[1]));
        if (!inst) return notFound();
        if (inst.suspended) return json(403, { message: "This installation has been suspended", documentation_url: "https://docs.github.com/rest" });
        const token = `ghs_${randomBytes(18).toString("hex")}`;
        const expiresAt = this.now() + TOKEN_TTL_MS;
        this.tokens.set(token, { installation: inst.id, expiresAt });
        return json(201, { token, expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z"), permissions: this.installationJson(inst).permissions, repository_selection: "selected" });
      }
      return notFound();
    }

    // Everything else: an installation token.
    const installation = this.tokenOf(req);
    if (installation === null) return json(401, { message: "Bad credentials", documentation_url: "https://docs.github.com/rest" });
    call.auth = "token";
    call.installation = installation;

    if (p === "/installation/repositories" && m === "GET") {
      const all = this.repos.all().filter((r) => r.installationId === installation);
      const { items, headers } = this.page(all.map((r) => this.repos.repoJson(r)), url);
      return json(200, { total_count: all.length, repository_selection: "selected", repositories: items }, headers);
    }

    const rm = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(p);
    if (!rm) return notFound();
    const repo = this.repos.get(`${decodeURIComponent(rm[1]!)}/${decodeURIComponent(rm[2]!)}`);
    if (!repo || repo.installationId !== installation) return notFound();
    return this.repoRoute(req, url, repo, rm[3] ?? "");
  }

  private async repoRoute(req: Request, url: URL, repo: FakeRepo, tail: string): Promise<Answer> {
    const m = req.method;
    const r = this.repos;
    const seg = (re: RegExp) => re.exec(tail);
    let x: RegExpExecArray | null;
    if (tail === "" && m === "GET") return json(200, r.repoJson(repo));
    if ((x = seg(/^\/git\/ref\/(.+)$/)) && m === "GET") return r.getRef(repo, decodeURIComponent(x[1]!));
    if ((x = seg(/^\/git\/tags\/([^/]+)$/)) && m === "GET") return r.getTag(repo, x[1]!);
    if ((x = seg(/^\/git\/commits\/([^/]+)$/)) && m === "GET") return r.getGitCommit(repo, x[1]!);
    if ((x = seg(/^\/commits\/([^/]+)$/)) && m === "GET") return r.getCommit(repo, decodeURIComponent(x[1]!));
    if ((x = seg(/^\/git\/trees\/([^/]+)$/)) && m === "GET") return r.getTree(repo, x[1]!, ["1", "true"].includes(url.searchParams.get("recursive") ?? ""), this.treeLimit);
    if ((x = seg(/^\/git\/blobs\/([^/]+)$/)) && m === "GET") return r.getBlob(repo, x[1]!);
    if ((x = seg(/^\/compare\/(.+?)\.\.\.(.+)$/)) && m === "GET") return r.compare(repo, decodeURIComponent(x[1]!), decodeURIComponent(x[2]!));
    if ((x = seg(/^\/tarball\/(.+)$/)) && m === "GET") {
      const sha = r.resolve(repo, decodeURIComponent(x[1]!));
      if (!sha) return notFound();
      const token = randomBytes(12).toString("hex");
      this.downloads.set(token, { repo: repo.fullName, sha, expiresAt: this.now() + 5 * 60_000 });
      return { status: 302, headers: { location: `${this.url}/_codeload/${repo.owner}/${repo.name}/legacy.tar.gz/${sha}?token=${token}` } };
    }
    if (tail === "/git/blobs" && m === "POST") return r.createBlob(repo, await this.body(req));
    if (tail === "/git/trees" && m === "POST") return r.createTree(repo, await this.body(req));
    if (tail === "/git/commits" && m === "POST") return r.createCommit(repo, await this.body(req), this.slug);
    if (tail === "/git/refs" && m === "POST") return r.createRef(repo, await this.body(req));
    if (tail === "/pulls" && m === "POST") return r.createPull(repo, await this.body(req));
    if ((x = seg(/^\/pulls\/(\d+)(\/merge)?$/))) {
      const pr = repo.pulls.find((q) => q.number === Number(x![1]));
      if (!pr) return notFound();
      if (!x[2] && m === "GET") return json(200, r.pullJson(repo, pr));
      if (!x[2] && m === "PATCH") return r.updatePull(repo, pr, await this.body(req));
      if (x[2] && m === "PUT") return r.mergePull(repo, pr, await this.body(req), this.slug);
    }
    if (tail === "/check-runs" && m === "POST") return r.createCheckRun(repo, await this.body(req));
    if ((x = seg(/^\/check-runs\/(\d+)$/)) && m === "PATCH") return r.updateCheckRun(repo, Number(x[1]), await this.body(req));
    if ((x = seg(/^\/statuses\/([^/]+)$/)) && m === "POST") return r.createStatus(repo, x[1]!, await this.body(req));
    if (tail === "/deployments" && m === "POST") return r.createDeployment(repo, await this.body(req));
    if ((x = seg(/^\/deployments\/(\d+)\/statuses$/)) && m === "POST") return r.createDeploymentStatus(repo, Number(x[1]), await this.body(req));
    return notFound();
  }
}

/**
 * Mounts `POST /api/v1/host/webhook` the way the sources domain does (its routes `.use` the
 * plugin, its body limits include the host's), for apps built with the domains of this branch.
 * Mounting it twice is harmless: Elysia keeps one plugin of a name.
 */
export const hostWebhookModule: DomainModule = {
  name: "host-webhook",
  routes: (core) => hostWebhookRoutes(core),
  bodyLimits: (core) => codeHostFor(core).bodyLimits?.() ?? [],
};

/** The claims of a JWT (for tests that check what the adapter signed). */
export function jwtClaims(token: string) {
  return decodeJwt(token);
}
