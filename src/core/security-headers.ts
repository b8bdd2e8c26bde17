/**
 * The baseline of security headers every HTTP response of ops carries (API answers, errors,
 * registry protocols, git, /api/docs): no MIME sniffing, no framing, no referrer, and a Content
 * Security Policy. API answers are data, never a document: their policy lets nothing load or run.
 * The OpenAPI page (`/api/docs`) is the one HTML page outside the console; its renderer (Scalar)
 * is a script ops serves itself (docs/decisions/0363), so that page loads nothing from elsewhere. The console's pages send their own stricter-than-default policy (console/module.ts);
 * a header a route sets itself is never overridden.
 */

/** The policy of every response that is not a page: nothing may load, run, frame or submit. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The OpenAPI page: Scalar's script and data from ops, its inline theme; nothing from outside. The
 * hash is that of the empty (whitespace) `<script id="api-reference">` element @elysiajs/swagger
 * writes to carry the configuration, which Chromium would otherwise report as a blocked script.
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self' 'sha256-TcUB1mzXiQO4GxpTRZ0EMpOXKMU3u+n/q1WrgVIcs1I='; style-src 'self' 'unsafe-inline'; font-src 'self' data:; img-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const BASE: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
};

/** The baseline headers for a response to `pathname`. */
export function securityHeaders(pathname: string): Record<string, string> {
  return { ...BASE, "content-security-policy": pathname === "/api/docs" || pathname === "/api/docs/" ? DOCS_CSP : API_CSP };
}

const API_ENTRIES: ReadonlyArray<readonly [string, string]> = Object.freeze(Object.entries(securityHeaders("/")));
const DOCS_ENTRIES: ReadonlyArray<readonly [string, string]> = Object.freeze(Object.entries(securityHeaders("/api/docs")));

/** The same headers as name–value pairs built once (the request hook copies them onto every response). */
export function securityHeaderEntries(pathname: string): ReadonlyArray<readonly [string, string]> {
  return pathname === "/api/docs" || pathname === "/api/docs/" ? DOCS_ENTRIES : API_ENTRIES;
}
