/**
 * Who is calling. The access domain's authenticator turns a credential into a `Principal`; the
 * kernel only defines the shape and how it speaks to the audit log.
 */
import type { AuditActor, AuditVia } from "../audit";

export interface Principal {
  operatorId: string;
  kind: "person" | "machine";
  /** Email for a person, handle for a machine. */
  name: string;
  email: string | null;
  displayName: string;
  suspended: boolean;
  /** `console` for a session (bearer or cookie), `token` for a person's minted token, `api-token` for a machine's. */
  via: "console" | "token" | "api-token";
  /** The audit actor: the person's email, or `api-token`. */
  actor: string;
  sessionId: string | null;
  sessionKind: "console" | "cli" | null;
  tokenId: string | null;
  /** The minted token's snapshot of its role at mint time; null for sessions (never narrowed). */
  tokenScopes: readonly string[] | null;
  /** Id of the project a pinned token acts in; null when unpinned or a session. */
  tokenProjectId: string | null;
  tokenProjectSlug: string | null;
  /**
   * The minted token's kind (`api`, `cli`, `mcp`); null or absent for sessions. An `mcp` token is
   * an AI client's: it may do what its scopes allow but never mint tokens or approve devices.
   */
  tokenKind?: "api" | "cli" | "mcp" | null;
  /**
   * The environment policies on a minted token's role (absent for sessions): in a project and
   * environment one of them covers, the token's scopes are narrowed to its `allowed` keys.
   */
  tokenRolePolicies?: ReadonlyArray<{ projectId: string; environment: string; roleId: string; allowed: readonly string[] }>;
  /** True when the credential came from the console cookie (state changes need a matching Origin). */
  viaCookie: boolean;
}

/** Where a request came from; filled by the HTTP app for every request. */
export interface RequestMeta {
  requestId: string;
  ip: string;
  userAgent: string;
}

/** The audit actor for `p` on a request from `meta`. */
export function actorOf(p: Principal | null, meta: Pick<RequestMeta, "ip" | "requestId">): AuditActor {
  if (!p) return { actor: "anonymous", operatorId: null, via: "console" as AuditVia, ip: meta.ip, context: { request: meta.requestId } };
  const context: Record<string, string> = { request: meta.requestId };
  if (p.tokenId) context.token = p.tokenId;
  if (p.sessionId) context.session = p.sessionId;
  return { actor: p.actor, operatorId: p.operatorId, via: p.via, ip: meta.ip, context };
}
