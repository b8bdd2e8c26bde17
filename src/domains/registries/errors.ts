/**
 * Error renderers for the registry protocols, which each define their own error body:
 * npm `{"error": "…"}` (printed after the status line), cargo `{"errors":[{"detail": "…"}]}`
 * (printed as "the remote server responded with an error"), OCI `{"errors":[{code,message,detail}]}`
 * (see oci/access.ts).
 */
import type { Core, ErrorStyle } from "../../core/core";
import type { NormalisedError } from "../../core/errors";
import { renderOciError } from "./oci/access";

function json(status: number, body: unknown, headers: Record<string, string>, request: Request): Response {
  return new Response(request.method === "HEAD" ? null : JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

export function registryErrorStyles(core: Core): ErrorStyle[] {
  return [
    { prefix: "/npm/", render: (n: NormalisedError, request) => json(n.status, { error: n.message }, n.headers, request) },
    { prefix: "/cargo/", render: (n: NormalisedError, request) => json(n.status, { errors: [{ detail: n.message }] }, n.headers, request) },
    { prefix: "/v2/", render: renderOciError(core) },
  ];
}
