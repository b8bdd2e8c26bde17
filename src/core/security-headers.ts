/**
 * The baseline of security headers every HTTP response of ops carries (API answers, errors,
 * registry protocols, git, /api/docs): no MIME sniffing, no framing, no referrer, and a Content
 * Security Policy. API answers are data, never a document: their policy lets nothing load or run.
 * The OpenAPI page (`/api/docs`) is the one HTML page outside the console; its renderer (Scalar)
 * loads one script from its CDN, so that page's policy allows that script host and nothing else
 * that runs. The console's pages send their own stricter-than-default policy (console/module.ts);
 * a header a route sets itself is never overridden.
 */

/** The policy of every response that is not a page: nothing may load, run, frame or submit. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The OpenAPI page: Scalar's script from its CDN, its inline theme, data fetched from ops only. */
export const DOCS_CSP =
  "default-src 'none'; script-src https://cdn.jsdelivr.net; style-src 'unsafe-inline' https:; font-src https: data:; img-src 'self' data: https:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const BASE: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
};

/** The baseline headers for a response to `pathname`. */
export function securityHeaders(pathname: string): Record<string, string> {
  return { ...BASE, "content-security-policy": pathname === "/api/docs" || pathname === "/api/docs/" ? DOCS_CSP : API_CSP };
}
