/**
 * The one reader of credentials the API and the ingress share: what it takes from an
 * Authorization value (leniently, as authentication is), and the session cookie's name.
 */
import { describe, test, expect } from "bun:test";
import { cookieValue, parseAuthorization, sessionCookieName } from "./credentials";

const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("parseAuthorization", () => {
  test("Bearer and a bare token, any case and whitespace after the scheme", () => {
    for (const v of ["Bearer tok", "bearer\ttok", "BEARER   tok  ", " tok "]) expect([v, parseAuthorization(v).bearer]).toEqual([v, "tok"]);
    expect(parseAuthorization("two words")).toEqual({ bearer: null, basicUser: null, basicPassword: null });
    expect(parseAuthorization("")).toEqual({ bearer: null, basicUser: null, basicPassword: null });
    expect(parseAuthorization(null)).toEqual({ bearer: null, basicUser: null, basicPassword: null });
  });

  test("Basic: decoded as Buffer decodes base64, skipping characters outside the alphabet; two fields joined by ', ' read as one", () => {
    const enc = b64("git:secret-token");
    for (const v of [`Basic ${enc}`, `basic\t${enc}`, `Basic ${enc.slice(0, 5)}!*.${enc.slice(5)}`, `Basic ${enc.slice(0, 8)}, ${enc.slice(8)}`]) {
      expect([v, parseAuthorization(v)]).toEqual([v, { bearer: null, basicUser: "git", basicPassword: "secret-token" }]);
    }
    expect(parseAuthorization(`Basic ${b64("only-user")}`)).toEqual({ bearer: null, basicUser: "only-user", basicPassword: null });
  });
});

describe("the session cookie", () => {
  test("is ops_session over HTTP and __Host-ops_session over HTTPS; read by its exact name", () => {
    expect(sessionCookieName("http://127.0.0.1:8080")).toBe("ops_session");
    expect(sessionCookieName("https://ops.example.com")).toBe("__Host-ops_session");
    expect(cookieValue("a=1; __Host-ops_session=x; ops_session=y", "__Host-ops_session")).toBe("x");
    expect(cookieValue("a=1; __Host-ops_session=x; ops_session=y", "ops_session")).toBe("y");
    expect(cookieValue("OPS_SESSION=z", "ops_session")).toBeNull();
  });
});
