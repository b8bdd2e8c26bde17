/**
 * ops's own credentials never reach an app (DESIGN §6, Ingress). Browsers do not scope cookies by
 * port, so a console signed in at `http://localhost:8080` sends its session cookie to every app
 * the ingress serves on the same host name; and a token pasted into an app's Authorization header
 * (Bearer, or Basic with the token as password, as git sends it) would let the app act as its
 * owner. The ingress removes both from every request it forwards, reading Authorization with the
 * API's own reader (core/authz/credentials.ts), so it removes whatever ops would accept; and it
 * keeps apps from setting ops's cookie (decision 0520).
 */
import { parseAuthorization, SECURE_SESSION_COOKIE, SESSION_COOKIE } from "../../core/authz/credentials";

/** An ops secret (`opss_`, `opst_`, `opsi_`, `opsd_` and any later `ops<letter>_`): prefix + 49 base62 characters. */
const OPS_SECRET = /ops[a-z]_[0-9A-Za-z]{49}/;

/** Either name of ops's session cookie (plain HTTP, or `__Host-` over HTTPS), whichever ops uses. */
function isSessionCookie(name: string): boolean {
  return name === SESSION_COOKIE || name === SECURE_SESSION_COOKIE;
}

/** The Cookie field value without ops's session cookie, or any cookie whose value is an ops secret (the same string when none). */
export function withoutSessionCookie(value: string): string {
  if (!value.includes("ops")) return value;
  const parts = value.split(";");
  const kept = parts.filter((part) => {
    const eq = part.indexOf("=");
    const name = (eq < 0 ? part : part.slice(0, eq)).trim();
    return !isSessionCookie(name) && !OPS_SECRET.test(eq < 0 ? "" : part.slice(eq + 1));
  });
  return kept.length === parts.length ? value : kept.map((p) => p.trim()).join("; ");
}

/**
 * Whether an Authorization value carries an ops secret: anywhere in it, or in what ops reads from
 * it (a Basic credential decoded as ops decodes it, stray characters and all). `value` is one
 * field's value or, for a request with several, their values joined by ", " as ops sees them.
 */
export function carriesOpsCredential(value: string): boolean {
  if (OPS_SECRET.test(value)) return true;
  const { basicUser, basicPassword } = parseAuthorization(value);
  return (basicPassword !== null && OPS_SECRET.test(basicPassword)) || (basicUser !== null && OPS_SECRET.test(basicUser));
}

/**
 * Whether a Set-Cookie value from an app would set ops's session cookie in the browser: its name
 * (either spelling, in any case), or a nameless cookie (`=ops_session=…`) whose value a browser
 * sends back as `ops_session=…`.
 */
export function setsSessionCookie(value: string): boolean {
  const semi = value.indexOf(";");
  let pair = (semi < 0 ? value : value.slice(0, semi)).trim();
  if (pair.startsWith("=")) pair = pair.slice(1).trim();
  const eq = pair.indexOf("=");
  const name = (eq < 0 ? pair : pair.slice(0, eq)).trim().toLowerCase();
  return name === SESSION_COOKIE || name === SECURE_SESSION_COOKIE.toLowerCase();
}
