/**
 * Smart HTTP at `/git/<owner>/<repo>.git` (clone, fetch, push; protocol v2 and v0), served by the
 * system's `git http-backend` as a CGI program spawned per request, with the request body streamed
 * into it and its output streamed back — never held whole in memory.
 *
 * Authentication is ops's own: HTTP Basic with any user name and an ops token as the password (what
 * git sends from a credential helper or a `https://x:<token>@…` URL), or `Authorization: Bearer`.
 * Anonymous requests get 401 with `WWW-Authenticate: Basic realm="ops"` so git asks for
 * credentials. The owner is a project slug: fetching needs `sources.read` there and pushing
 * `sources.save`, decided by the authorization macro (a refusal is audited like any 403).
 * Pushes are capped by `receive.maxInputSize` (git itself refuses a larger pack and tells the
 * client why); after receive-pack has written the refs, a post-receive hook has listed them in a
 * per-request file and each updated ref is delivered to the push subscribers before the response
 * ends, so `git push` returns once ops has recorded the push.
 */
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { Elysia, t } from "elysia";
import type { Core, ErrorStyle } from "../../../core/core";
import { authzPlugin, type AuthContext } from "../../../core/authz/plugin";
import { actorOf } from "../../../core/authz/principal";
import { auditAllowed, writeAudit } from "../../../core/audit";
import { tx } from "../../../core/db/client";
import { OpsError } from "../../../core/errors";
import { uuidv7 } from "../../../core/ids";
import type { NormalisedError } from "../../../core/errors";
import type { PushSubscribers } from "../push";
import { gitEnv, httpBackendArgv } from "./git";
import { ReceivePackAnswer } from "./sideband";
import { existingRepoDir, parseRepoName } from "./repos";
import { knownInstallation } from "./records";

export const GIT_PREFIX = "/git/";
const TAG = ["git"];
const RAW = Symbol("git raw body");

/** The CGI program's status and headers; `rest` is the body read with them, `reader` the remainder. */
async function readCgiHead(stdout: ReadableStream<Uint8Array>): Promise<{ status: number; headers: Headers; rest: Uint8Array; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = stdout.getReader();
  let buf = new Uint8Array(0);
  let end = -1;
  let sepLen = 4;
  while (end < 0) {
    const { value, done } = await reader.read();
    if (done) break;
    const from = Math.max(0, buf.length - 3);
    const next = new Uint8Array(buf.length + value.length);
    next.set(buf);
    next.set(value, buf.length);
    buf = next;
    for (let i = from; i < buf.length - 1; i++) {
      if (buf[i] === 10 && buf[i + 1] === 10) {
        end = i;
        sepLen = 2;
        break;
      }
      if (i < buf.length - 3 && buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) {
        end = i;
        sepLen = 4;
        break;
      }
    }
    if (buf.length > 64 * 1024 && end < 0) break;
  }
  if (end < 0) throw new OpsError("internal", "The git host gave no answer.");
  const headers = new Headers();
  let status = 200;
  for (const line of Buffer.from(buf.subarray(0, end)).toString("latin1").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i <= 0) continue;
    const name = line.slice(0, i).trim();
    const value = line.slice(i + 1).trim();
    if (name.toLowerCase() === "status") status = Number.parseInt(value, 10) || 500;
    else headers.append(name, value);
  }
  return { status, headers, rest: buf.subarray(end + sepLen), reader };
}

/** Parse the post-receive hook's `<old> <new> <ref>` lines. */
/** The refs the update hook refused (one per line), and the file removed. */
function readRefusedRefs(file: string): string[] {
  try {
    return readFileSync(file, "utf8").split("\n").map((l) => l.trim()).filter((l) => l.startsWith("refs/"));
  } catch {
    return [];
  } finally {
    rmSync(file, { force: true });
  }
}

function readPushLog(file: string): Array<{ before: string; after: string; ref: string }> {
  let textLog = "";
  try {
    textLog = readFileSync(file, "utf8");
  } catch {
    return [];
  } finally {
    rmSync(file, { force: true });
  }
  const out: Array<{ before: string; after: string; ref: string }> = [];
  for (const line of textLog.split("\n")) {
    const m = /^([0-9a-f]{40}) ([0-9a-f]{40}) (refs\/\S+)$/.exec(line.trim());
    if (m) out.push({ before: m[1]!, after: m[2]!, ref: m[3]! });
  }
  return out;
}

export interface GitHttpDeps {
  root: string;
  pushes: PushSubscribers;
}

type Service = "git-upload-pack" | "git-receive-pack";

/** Run `git http-backend` for one request and stream its answer back. */
async function serveCgi(core: Core, deps: GitHttpDeps, req: { request: Request; owner: string; name: string; tail: string; query: string; auth: AuthContext; service: Service }): Promise<Response> {
  const { request, auth } = req;
  const repo = `${req.owner}/${req.name}`;
  existingRepoDir(deps.root, repo);
  const pushLog = req.service === "git-receive-pack" && request.method === "POST" ? path.join(core.config.dataDir, "run", `git-push-${uuidv7()}`) : null;
  const headers = request.headers;
  const cgi: Record<string, string> = {
    GATEWAY_INTERFACE: "CGI/1.1",
    GIT_PROJECT_ROOT: deps.root,
    GIT_HTTP_EXPORT_ALL: "1",
    PATH_INFO: `/${req.owner}/${req.name}.git/${req.tail}`,
    REQUEST_METHOD: request.method,
    QUERY_STRING: req.query,
    REMOTE_USER: auth.principal.name,
    REMOTE_ADDR: auth.meta.ip,
    CONTENT_TYPE: headers.get("content-type") ?? "",
  };
  const len = headers.get("content-length");
  if (len !== null) cgi.CONTENT_LENGTH = len;
  const encoding = headers.get("content-encoding");
  if (encoding) cgi.HTTP_CONTENT_ENCODING = encoding;
  const protocol = headers.get("git-protocol");
  if (protocol) cgi.HTTP_GIT_PROTOCOL = protocol;
  if (pushLog) cgi.OPS_PUSH_LOG = pushLog;
  // A release tag publishes the project's modules: without packages.publish the update hook refuses it.
  const refusedLog = pushLog && !auth.permissions.has("packages.publish") ? `${pushLog}.refused` : null;
  if (refusedLog) {
    cgi.OPS_TAG_REFUSAL = `ops: a release tag on a modules/ tree publishes packages; your access does not include packages.publish in ${req.owner}`;
    cgi.OPS_PUSH_REFUSED = refusedLog;
  }

  const proc = Bun.spawn(httpBackendArgv(), {
    // Without a tag to refuse, the update hook would pass every ref: it is not run at all.
    env: gitEnv({ root: deps.root, maxPushBytes: core.config.gitMaxPushBytes, extra: cgi, hooks: refusedLog ? "all" : "push-log" }),
    cwd: deps.root,
    stdin: request.method === "POST" && request.body ? request.body : "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr).text();
  // What the subscribers tell the pusher (`remote:` lines, decision 0430); one `say` per push.
  const lines: string[] = [];
  const say = (line: string) => void lines.push(line);
  let finished: Promise<void> | null = null;
  const finish = () =>
    (finished ??= (async () => {
      const [code, errText] = await Promise.all([proc.exited, stderr]);
      if (code !== 0 || errText.trim() !== "") core.log.warn("git http-backend", { repo, service: req.service, code, stderr: errText.trim().slice(0, 2000) });
      if (!pushLog) return;
      const refused = refusedLog ? readRefusedRefs(refusedLog) : [];
      for (const ref of refused) {
        writeAudit(core, core.db, { ...actorOf(auth.principal, auth.meta), action: "packages.publish", target: `source:${repo}`, outcome: "denied", reason: `lacks packages.publish in ${req.owner}`, project: req.owner, context: { op: "push", ref } });
      }
      const installationId = knownInstallation(core, req.owner);
      const updates = readPushLog(pushLog);
      // The refs are written by git; the audit records who moved which, one row per ref.
      if (updates.length > 0) {
        tx(core.db, (t) => {
          for (const u of updates) {
            auditAllowed(core, t, actorOf(auth.principal, auth.meta), "sources.save", `source:${repo}`, { project: req.owner }, { op: "push", ref: u.ref, before: u.before, after: u.after });
          }
        });
      }
      for (const u of updates) {
        await deps.pushes.deliver({ repo, installationId, ref: u.ref, before: u.before, after: u.after, pusher: auth.principal.actor === "api-token" ? auth.principal.name : auth.principal.actor, at: core.clock.now(), say });
      }
    })());

  let head: Awaited<ReturnType<typeof readCgiHead>>;
  try {
    head = await readCgiHead(proc.stdout);
  } catch (e) {
    proc.kill();
    await finish();
    throw e;
  }
  const { reader } = head;
  let rest: Uint8Array | null = head.rest.length > 0 ? head.rest : null;
  const answer = pushLog ? new ReceivePackAnswer() : null;
  const pass = (chunk: Uint8Array) => (answer ? answer.feed(chunk) : chunk);
  // One stream from git's stdout to the client: chunks pass as they come, and the push is
  // reported (finish) before the response ends, its lines before receive-pack's final flush.
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const chunk = rest ?? (await reader.read()).value;
        rest = null;
        if (!chunk) break;
        const out = pass(chunk);
        if (out.length === 0) continue;
        controller.enqueue(out);
        return;
      }
      await finish();
      if (answer) {
        const tail = answer.end(lines);
        if (tail.length > 0) controller.enqueue(tail);
      }
      controller.close();
    },
    async cancel() {
      await reader.cancel().catch(() => {});
      await finish();
    },
  });
  return new Response(body, { status: head.status, headers: head.headers });
}

/** The repository name without `.git`, or 404. */
function nameOf(params: { slug: string; repo: string }): string {
  const parsed = parseRepoName(`${params.slug}/${params.repo}`);
  if (!parsed) throw new OpsError("not_found", "No such repository.");
  return parsed.name;
}

/** Plain-text errors (git prints them as `remote: …` lines), and Basic challenges on 401. */
export function gitErrorStyle(): ErrorStyle {
  return {
    prefix: GIT_PREFIX,
    render(n: NormalisedError, request: Request): Response {
      const headers: Record<string, string> = { "content-type": "text/plain; charset=utf-8", ...n.headers };
      if (n.status === 401) headers["www-authenticate"] = 'Basic realm="ops"';
      return new Response(request.method === "HEAD" ? null : `${n.message}\n`, { status: n.status, headers });
    },
  };
}

/** The `/git/` routes of the built-in host. */
export function gitHttpRoutes(core: Core, deps: GitHttpDeps) {
  // The owner is the project slug (`:slug`), so the macro evaluates the permission in that project.
  const read = { key: "sources.read" as const, environment: "none" as const };
  const save = { key: "sources.save" as const, environment: "none" as const };
  const params = t.Object({ slug: t.String(), repo: t.String() });
  const detail = (summary: string) => ({ tags: TAG, summary, "x-protocol": "git" }) as Record<string, unknown>;
  const gitErrors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, t.String({ description: "A plain-text message git prints" })]));

  return new Elysia({ name: "codehost-builtin-git", prefix: "/git" })
    .use(authzPlugin(core))
    .get(
      "/:slug/:repo/info/refs",
      ({ params, query, request, auth }) => {
        const name = nameOf(params);
        if (query.service === "git-receive-pack" && !auth.permissions.has("sources.save")) {
          // Refused at discovery so git prints the reason before it builds a pack; the push route
          // itself is guarded by the macro with sources.save.
          writeAudit(core, core.db, { ...actorOf(auth.principal, auth.meta), action: "sources.save", target: `/git/${params.slug}/${params.repo}`, outcome: "denied", reason: `lacks sources.save in ${params.slug}`, project: params.slug });
          throw new OpsError("forbidden", `Your access does not include sources.save in ${params.slug}: pushing is refused.`, { permission: "sources.save" });
        }
        return serveCgi(core, deps, { request, owner: params.slug, name, tail: "info/refs", query: `service=${query.service}`, auth, service: query.service });
      },
      {
        permission: read,
        params,
        query: t.Object({ service: t.Union([t.Literal("git-upload-pack"), t.Literal("git-receive-pack")], { description: "The smart HTTP service (dumb HTTP is not served)" }) }),
        detail: detail("Ref advertisement for clone, fetch (sources.read) and push (sources.save as well)"),
        response: { 200: t.Any({ description: "application/x-git-*-advertisement" }), ...gitErrors(401, 403, 404, 422) },
      },
    )
    .post(
      "/:slug/:repo/git-upload-pack",
      ({ params, request, auth }) => serveCgi(core, deps, { request, owner: params.slug, name: nameOf(params), tail: "git-upload-pack", query: "", auth, service: "git-upload-pack" }),
      {
        permission: read,
        parse: () => RAW,
        params,
        detail: detail("Clone and fetch (upload-pack, protocol v2 or v0)"),
        response: { 200: t.Any({ description: "application/x-git-upload-pack-result" }), ...gitErrors(401, 403, 404) },
      },
    )
    .post(
      "/:slug/:repo/git-receive-pack",
      ({ params, request, auth }) => serveCgi(core, deps, { request, owner: params.slug, name: nameOf(params), tail: "git-receive-pack", query: "", auth, service: "git-receive-pack" }),
      {
        permission: save,
        parse: () => RAW,
        params,
        detail: detail("Push (receive-pack); packs over OPS_GIT_MAX_PUSH_BYTES are refused"),
        response: { 200: t.Any({ description: "application/x-git-receive-pack-result" }), ...gitErrors(401, 403, 404, 413) },
      },
    );
}
