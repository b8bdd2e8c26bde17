/**
 * Docker registry token auth: `/v2/token` turns an ops token (the basic-auth password) into a
 * short-lived ES256 JWT whose `access` claim lists what the caller may do, and `/v2/` routes
 * verify that JWT without calling back. The ops permission decision happens here, once per
 * token: `pull` needs `packages.read` and `push` needs `packages.publish` in the project the
 * repository `<project>/<service>` belongs to. Requested actions that are refused are audited as
 * denials and recorded in the token (`ops.denied`), so the registry can answer a final 403
 * DENIED instead of asking the client to fetch yet another token.
 */
import { SignJWT, jwtVerify } from "jose";
import type { Core } from "../../../core/core";
import type { Principal, RequestMeta } from "../../../core/authz/principal";
import { actorOf } from "../../../core/authz/principal";
import { evaluate } from "../../../core/authz/effective";
import { writeAudit } from "../../../core/audit";
import { iso } from "../../../core/clock";
import { uuidv7 } from "../../../core/ids";
import { OpsError } from "../../../core/errors";
import { issuerKey, registryIssuer, registryService } from "./keys";

export const TOKEN_TTL_SECONDS = 300;

export type Action = "pull" | "push";

export interface AccessEntry {
  type: "repository";
  name: string;
  actions: string[];
}

export interface RequestedScope {
  type: string;
  name: string;
  actions: string[];
}

/** The registry's view of a verified token. */
export interface RegistryGrant {
  subject: string;
  /** The audit actor (a person's email, or `api-token`). */
  actor: string;
  operatorId: string | null;
  via: "console" | "token" | "api-token";
  tokenId: string | null;
  access: Map<string, Set<string>>;
  denied: Map<string, Set<string>>;
}

/**
 * Parse `scope` values: `type[(class)]:name:actions`, several per value separated by spaces. The
 * name may contain `:` (a `host:port/` prefix), so the type ends at the first `:` and the actions
 * start after the last.
 */
export function parseScopes(values: readonly string[]): RequestedScope[] {
  const out: RequestedScope[] = [];
  for (const value of values) {
    for (const s of value.split(" ").filter(Boolean)) {
      const first = s.indexOf(":");
      const last = s.lastIndexOf(":");
      if (first < 0 || last === first) continue;
      const type = s.slice(0, first).replace(/\(.*\)$/, "");
      out.push({ type, name: s.slice(first + 1, last), actions: s.slice(last + 1).split(",").filter(Boolean) });
    }
  }
  return out;
}

/** What `principal` may do on repository `name` (`<project>/<service>`). */
function allowedActions(core: Core, principal: Principal, name: string): Set<Action> {
  const out = new Set<Action>();
  const slug = name.split("/")[0];
  const project = core.access.findProject(slug);
  if (!project || name.split("/").length !== 2) return out;
  const perms = evaluate(principal, core.access.grants(principal), { kind: "project", projectId: project.id, environment: null }).permissions;
  if (perms.has("packages.read")) out.add("pull");
  if (perms.has("packages.publish") && !project.archived) out.add("push");
  return out;
}

export interface RegistryTokenResponse {
  token: string;
  access_token: string;
  expires_in: number;
  issued_at: string;
}

/** Issue a registry token (see the file comment). 400 unknown service, 503 no issuer key. */
export async function issueRegistryToken(core: Core, principal: Principal, meta: RequestMeta, service: string, scopes: readonly string[]): Promise<RegistryTokenResponse> {
  if (service !== registryService(core)) throw new OpsError("bad_request", `Unknown registry service "${service}"; this server issues tokens for "${registryService(core)}".`);
  const key = await issuerKey(core);
  if (!key) throw new OpsError("unavailable", "No registry token issuer key is configured (keys/registry-token.pem).");
  const access: AccessEntry[] = [];
  const denied: AccessEntry[] = [];
  for (const scope of parseScopes(scopes)) {
    if (scope.type !== "repository") continue;
    const allowed = allowedActions(core, principal, scope.name);
    const wanted = new Set(scope.actions.flatMap((a) => (a === "*" ? ["pull", "push"] : [a])));
    const granted = [...wanted].filter((a) => allowed.has(a as Action));
    const refused = [...wanted].filter((a) => !allowed.has(a as Action));
    if (granted.length > 0) access.push({ type: "repository", name: scope.name, actions: granted });
    if (refused.length > 0) {
      denied.push({ type: "repository", name: scope.name, actions: refused });
      for (const a of refused) {
        writeAudit(core, core.db, {
          ...actorOf(principal, meta),
          action: a === "pull" ? "packages.read" : "packages.publish",
          target: `image:${scope.name}`,
          outcome: "denied",
          reason: `registry token refused ${a} on ${scope.name}`,
          project: core.access.findProject(scope.name.split("/")[0])?.slug ?? null,
        });
      }
    }
  }
  const now = Math.floor(core.clock.now() / 1000);
  const jwt = await new SignJWT({
    access,
    ops: { op: principal.operatorId, act: principal.actor, via: principal.via, tok: principal.tokenId, denied },
  })
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: key.kid })
    .setIssuer(registryIssuer(core))
    .setSubject(principal.name)
    .setAudience(service)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + TOKEN_TTL_SECONDS)
    .setJti(uuidv7(core.clock.now()))
    .sign(key.privateKey);
  return { token: jwt, access_token: jwt, expires_in: TOKEN_TTL_SECONDS, issued_at: iso(now * 1000) };
}

function toMap(entries: unknown): Map<string, Set<string>> {
  const m = new Map<string, Set<string>>();
  if (!Array.isArray(entries)) return m;
  for (const e of entries as AccessEntry[]) {
    if (e?.type !== "repository" || typeof e.name !== "string" || !Array.isArray(e.actions)) continue;
    const set = m.get(e.name) ?? new Set<string>();
    for (const a of e.actions) set.add(a);
    m.set(e.name, set);
  }
  return m;
}

/** Verify a registry JWT (signature, issuer, audience, time with 60 s leeway); null when it fails. */
export async function verifyRegistryToken(core: Core, jwt: string): Promise<RegistryGrant | null> {
  const key = await issuerKey(core);
  if (!key) return null;
  try {
    const { payload } = await jwtVerify(jwt, key.publicKey, {
      issuer: registryIssuer(core),
      audience: registryService(core),
      algorithms: ["ES256"],
      currentDate: new Date(core.clock.now()),
      clockTolerance: 60,
    });
    const ops = (payload.ops ?? {}) as { op?: string; act?: string; via?: RegistryGrant["via"]; tok?: string | null; denied?: unknown };
    return {
      subject: payload.sub ?? "",
      actor: ops.act ?? payload.sub ?? "",
      operatorId: ops.op ?? null,
      via: ops.via ?? "token",
      tokenId: ops.tok ?? null,
      access: toMap(payload.access),
      denied: toMap(ops.denied),
    };
  } catch {
    return null;
  }
}

/**
 * A pull-only token of one repository for the nodes of an engine runtime (OPS_RUNTIME=docker or
 * swarm, decision 0615): ops asks the engine to run an image it already verified, and the engine
 * (every node Swarm may place the task on, now or after a node is lost) presents this to the
 * registry as a bearer token. It grants `pull` on `repository` and nothing else, for `ttlSeconds`.
 */
export async function issueRuntimePullToken(core: Core, repository: string, ttlSeconds: number): Promise<string> {
  const key = await issuerKey(core);
  if (!key) throw new OpsError("unavailable", "No registry token issuer key is configured (keys/registry-token.pem).");
  const now = Math.floor(core.clock.now() / 1000);
  return new SignJWT({ access: [{ type: "repository", name: repository, actions: ["pull"] }], ops: { act: "runtime", via: "api-token", tok: null, denied: [] } })
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: key.kid })
    .setIssuer(registryIssuer(core))
    .setSubject("ops-runtime")
    .setAudience(registryService(core))
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + ttlSeconds)
    .setJti(uuidv7(core.clock.now()))
    .sign(key.privateKey);
}
