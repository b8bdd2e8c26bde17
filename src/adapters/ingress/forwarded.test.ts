/** Forwarding fields from the peer, and a trusted proxy's chain kept and appended to. */
import { describe, test, expect } from "bun:test";
import { forwardedFields, peerAddress, trustedProxies } from "./forwarded";
import { parseRequestHead } from "./request-parser";
import { carriesOpsCredential, setsSessionCookie, withoutSessionCookie } from "./credentials";

const client = parseRequestHead("GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 6.6.6.6, 10.0.0.7\r\nX-Real-IP: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: shop.test").forwarding;

describe("forwarding fields", () => {
  test("an untrusted peer: every field from its address, the client's own dropped", () => {
    const none = trustedProxies([]);
    expect(forwardedFields(client, "203.0.113.5", false, none, "a", "http")).toBe("\r\nx-forwarded-for: 203.0.113.5\r\nx-forwarded-proto: http\r\nx-forwarded-host: a\r\nx-real-ip: 203.0.113.5\r\nforwarded: for=203.0.113.5;host=a;proto=http");
    expect(forwardedFields(client, "::1", false, none, "a:8081", "http")).toContain('\r\nforwarded: for="[::1]";host="a:8081";proto=http');
  });

  test("a trusted peer: the chain appended to, its proto and host believed, X-Real-IP the first untrusted hop from the right", () => {
    const trusted = trustedProxies(["10.0.0.0/8", "127.0.0.1"]);
    expect([trusted.has("10.1.2.3"), trusted.has("127.0.0.1"), trusted.has("127.0.0.2"), trusted.has("::1"), trusted.has("nonsense")]).toEqual([true, true, false, false, false]);
    expect(forwardedFields(client, "127.0.0.1", true, trusted, "a", "http")).toBe(
      "\r\nx-forwarded-for: 6.6.6.6, 10.0.0.7, 127.0.0.1\r\nx-forwarded-proto: https\r\nx-forwarded-host: shop.test\r\nx-real-ip: 6.6.6.6\r\nforwarded: for=6.6.6.6, for=127.0.0.1;host=a;proto=http",
    );
    expect(() => trustedProxies(["10.0.0.0/33"])).toThrow();
    expect(() => trustedProxies(["example.com"])).toThrow();
    expect(peerAddress("::ffff:10.0.0.1")).toBe("10.0.0.1");
  });
});

describe("ops's credentials", () => {
  const token = `opss_${"Z".repeat(49)}`;
  test("the session cookie goes, other cookies stay in their order", () => {
    expect(withoutSessionCookie(`a=1; ops_session=${token}; b=2`)).toBe("a=1; b=2");
    expect(withoutSessionCookie("ops_session=x")).toBe("");
    expect(withoutSessionCookie(`other=${token}`)).toBe("");
    const same = "a=1;b=2";
    expect(withoutSessionCookie(same)).toBe(same);
  });
  test("an Authorization carrying an ops secret, in any scheme or in Basic credentials", () => {
    expect(carriesOpsCredential(`Bearer ${token}`)).toBe(true);
    expect(carriesOpsCredential(token)).toBe(true);
    expect(carriesOpsCredential(`Basic ${Buffer.from(`git:${token}`).toString("base64")}`)).toBe(true);
    expect(carriesOpsCredential(`Basic ${Buffer.from("user:password").toString("base64")}`)).toBe(false);
    expect(carriesOpsCredential("Bearer app-token")).toBe(false);
  });
  test("what an app may not set: ops's session cookie by either name, in any case, or as a nameless cookie", () => {
    for (const v of ["ops_session=x", " ops_session =x; Path=/", "__Host-ops_session=x; Secure", "OPS_SESSION=x", "=ops_session=x", "= __Host-ops_session=x", "ops_session"]) expect([v, setsSessionCookie(v)]).toEqual([v, true]);
    for (const v of ["a=ops_session", "ops_session_x=1", "x=1; ops_session=2", "__Secure-ops_session=1"]) expect([v, setsSessionCookie(v)]).toEqual([v, false]);
  });
});
