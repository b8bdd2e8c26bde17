/**
 * How ops reads a credential from a request's fields: the `Authorization` value (Bearer, a bare
 * token as cargo sends it, Basic with the token as password as git sends it) and the console's
 * session cookie. One reader serves the API (plugin.ts) and the ingress, which removes from what
 * it forwards exactly what ops would accept (DESIGN §6, Ingress): a second, stricter reader let
 * `Basic<TAB>…` and base64 with stray characters through the ingress while the API took them
 * (decision 0520).
 */

/** The console's session cookie over plain HTTP. */
export const SESSION_COOKIE = "ops_session";
/**
 * The console's session cookie when ops is served over HTTPS: a browser takes a `__Host-` cookie
 * only from a secure origin, for `Path=/` and with no `Domain`, so no app on a sibling host (nor
 * one served over plain HTTP on ops's host) can plant it.
 */
export const SECURE_SESSION_COOKIE = "__Host-ops_session";

/** The session cookie's name for ops served at `publicUrl` (OPS_PUBLIC_URL). */
export function sessionCookieName(publicUrl: string): string {
  return publicUrl.startsWith("https:") ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
}

/** What an `Authorization` value carries, as ops reads it. */
export interface AuthorizationCredentials {
  /** `Bearer X` → X; a bare `X` without whitespace (cargo) → X. */
  bearer: string | null;
  basicUser: string | null;
  basicPassword: string | null;
}

const NONE: AuthorizationCredentials = Object.freeze({ bearer: null, basicUser: null, basicPassword: null });

/**
 * Read an `Authorization` value (several fields arrive joined by ", ", as the fetch API joins
 * them). Lenient, as authentication is: the scheme in any case, any whitespace after it, base64
 * decoded as Buffer does (characters outside the alphabet skipped).
 */
export function parseAuthorization(value: string | null): AuthorizationCredentials {
  const auth = value?.trim() ?? "";
  if (auth === "") return NONE;
  if (/^bearer\s+/i.test(auth)) return { bearer: auth.replace(/^bearer\s+/i, "").trim() || null, basicUser: null, basicPassword: null };
  if (/^basic\s+/i.test(auth)) {
    const decoded = Buffer.from(auth.replace(/^basic\s+/i, "").trim(), "base64").toString("utf8");
    const i = decoded.indexOf(":");
    return { bearer: null, basicUser: i < 0 ? decoded : decoded.slice(0, i), basicPassword: i < 0 ? null : decoded.slice(i + 1) };
  }
  return /\s/.test(auth) ? NONE : { bearer: auth, basicUser: null, basicPassword: null };
}

/** The value of cookie `name` in a Cookie field (percent-decoded), or null. */
export function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    if (part.slice(0, i).trim() === name) return decodeURIComponent(part.slice(i + 1).trim());
  }
  return null;
}
