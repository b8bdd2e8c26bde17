/**
 * ops's own credentials never reach an app (DESIGN §6, Ingress). Browsers do not scope cookies by
 * port, so a console signed in at `http://localhost:8080` sends its `ops_session` cookie to every
 * app the ingress serves on the same host name; and a token pasted into an app's Authorization
 * header (Bearer, or Basic with the token as password, as git sends it) would let the app act as
 * its owner. The ingress removes both from every request it forwards.
 */
import { SESSION_COOKIE } from "../../core/authz/plugin";

/** An ops secret (`opss_`, `opst_`, `opsi_`, `opsd_` and any later `ops<letter>_`): prefix + 49 base62 characters. */
const OPS_SECRET = /ops[a-z]_[0-9A-Za-z]{49}/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** The Cookie field value without ops's session cookie, or any cookie whose value is an ops secret (the same string when none). */
export function withoutSessionCookie(value: string): string {
  if (!value.includes(SESSION_COOKIE) && !value.includes("ops")) return value;
  const parts = value.split(";");
  const kept = parts.filter((part) => {
    const eq = part.indexOf("=");
    const name = (eq < 0 ? part : part.slice(0, eq)).trim();
    return name !== SESSION_COOKIE && !OPS_SECRET.test(eq < 0 ? "" : part.slice(eq + 1));
  });
  return kept.length === parts.length ? value : kept.map((p) => p.trim()).join("; ");
}

/** Whether an Authorization value carries an ops secret: as a bearer, in Basic credentials, or anywhere in it. */
export function carriesOpsCredential(value: string): boolean {
  if (OPS_SECRET.test(value)) return true;
  const sp = value.indexOf(" ");
  const creds = (sp < 0 ? value : value.slice(sp + 1)).trim();
  if (creds.length < 8 || !BASE64.test(creds)) return false;
  return OPS_SECRET.test(Buffer.from(creds, "base64").toString("latin1"));
}
