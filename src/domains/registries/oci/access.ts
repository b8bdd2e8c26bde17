/**
 * Errors and access checks of the OCI distribution routes.
 *
 * The `/v2/` data routes are declared `public: true` for the ops macro: they carry no ops token
 * but a registry JWT, and the ops permission decision was made when `/v2/token` issued it. Every
 * handler calls `requireAccess` first, which verifies the JWT and answers the distribution
 * protocol's way: 401 with a `WWW-Authenticate: Bearer realm,service,scope` challenge (plus
 * `error="invalid_token"` or `"insufficient_scope"`) so the client fetches a token, and 403
 * DENIED when the token service already refused that action.
 */
import type { Core } from "../../../core/core";
import { OpsError, type ErrorCode } from "../../../core/errors";
import { registryService, tokenRealm } from "./keys";
import { verifyRegistryToken, type Action, type RegistryGrant } from "./token";

const STATUS_CODE: Record<number, ErrorCode> = {
  400: "bad_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  413: "payload_too_large",
  416: "range_not_satisfiable",
};

/** An error in the distribution spec's terms: HTTP status, spec code (BLOB_UNKNOWN …), message. */
export function ociError(status: keyof typeof STATUS_CODE, code: string, message: string, detail?: unknown, headers: Record<string, string> = {}): OpsError {
  return new OpsError(STATUS_CODE[status], message, { oci: code, ...(detail === undefined ? {} : { detail }) }, { headers });
}

const DEFAULT_CODE: Record<number, string> = {
  400: "UNSUPPORTED",
  401: "UNAUTHORIZED",
  403: "DENIED",
  404: "NAME_UNKNOWN",
  405: "UNSUPPORTED",
  413: "SIZE_INVALID",
  416: "RANGE_INVALID",
  422: "UNSUPPORTED",
  429: "TOOMANYREQUESTS",
};

export const API_VERSION_HEADER = { "docker-distribution-api-version": "registry/2.0" } as const;

/** The challenge a client answers by fetching a token. */
export function challenge(core: Core, scope: string | null, error?: "invalid_token" | "insufficient_scope"): string {
  let v = `Bearer realm="${tokenRealm(core)}",service="${registryService(core)}"`;
  if (scope) v += `,scope="${scope}"`;
  if (error) v += `,error="${error}"`;
  return v;
}

/** Render any error under `/v2/` as the distribution spec's `{"errors":[{code,message,detail}]}`. */
export function renderOciError(core: Core) {
  return (n: { status: number; code: string; message: string; details?: Record<string, unknown>; headers: Record<string, string> }, request: Request): Response => {
    const oci = typeof n.details?.oci === "string" ? n.details.oci : (DEFAULT_CODE[n.status] ?? "UNKNOWN");
    const detail = n.details && "detail" in n.details ? n.details.detail : n.details && !("oci" in n.details) ? n.details : {};
    const headers: Record<string, string> = { "content-type": "application/json", ...API_VERSION_HEADER, ...n.headers };
    if (n.status === 401 && !Object.keys(headers).some((h) => h.toLowerCase() === "www-authenticate")) {
      const pathname = new URL(request.url).pathname;
      headers["www-authenticate"] = pathname === "/v2/token" ? `Basic realm="ops registry token service"` : challenge(core, null);
    }
    const body = JSON.stringify({ errors: [{ code: oci, message: n.message, detail: detail ?? {} }] });
    return new Response(request.method === "HEAD" ? null : body, { status: n.status, headers });
  };
}

/** The bearer JWT of a request, or null. */
function bearerOf(request: Request): string | null {
  const h = request.headers.get("authorization") ?? "";
  return /^bearer\s+/i.test(h) ? h.replace(/^bearer\s+/i, "").trim() || null : null;
}

/** Verify the request's registry token; 401 with a challenge when it is missing or invalid. */
export async function requireToken(core: Core, request: Request, scope: string | null): Promise<RegistryGrant> {
  const jwt = bearerOf(request);
  const grant = jwt ? await verifyRegistryToken(core, jwt) : null;
  if (!grant) {
    throw ociError(401, "UNAUTHORIZED", jwt ? "The registry token is invalid or expired." : "Authentication required.", undefined, {
      "www-authenticate": challenge(core, scope, jwt ? "invalid_token" : undefined),
    });
  }
  return grant;
}

/** Verify the token and that it grants `actions` on `repository` (see the file comment). */
export async function requireAccess(core: Core, request: Request, repository: string, actions: readonly Action[]): Promise<RegistryGrant> {
  const scope = `repository:${repository}:${actions.join(",")}`;
  const grant = await requireToken(core, request, scope);
  const have = grant.access.get(repository) ?? new Set<string>();
  const missing = actions.filter((a) => !have.has(a));
  if (missing.length === 0) return grant;
  const refused = grant.denied.get(repository) ?? new Set<string>();
  const detail = missing.map((a) => ({ Type: "repository", Name: repository, Action: a }));
  if (missing.some((a) => refused.has(a))) {
    throw ociError(403, "DENIED", `Your access does not allow ${missing.join(" and ")} on ${repository}.`, detail);
  }
  throw ociError(401, "UNAUTHORIZED", "The registry token does not cover this request.", detail, { "www-authenticate": challenge(core, scope, "insufficient_scope") });
}
