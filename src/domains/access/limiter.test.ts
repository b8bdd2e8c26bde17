import { describe, test, expect, afterAll, beforeAll, beforeEach } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";
import { SlidingWindow, signInGuard, LIMITS } from "./limiter";
import { OpsError } from "../../core/errors";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());
// every test starts with empty windows
beforeEach(() => t.clock.advance(60 * 60_000));

const MIN = 60_000;
const login = (email: string, password: string) => t.request("POST", "/api/v1/auth/login", { body: { email, password } });

describe("SlidingWindow", () => {
  test("allows `limit` hits per window, then says how long to wait", () => {
    const w = new SlidingWindow(3, 10_000);
    for (const at of [0, 1000, 2000]) {
      expect(w.retryAfter("k", at)).toBe(0);
      w.hit("k", at);
    }
    expect(w.retryAfter("k", 2500)).toBe(8);
    expect(w.retryAfter("k", 10_001)).toBe(0);
    expect(w.retryAfter("other", 2500)).toBe(0);
    w.reset("k");
    expect(w.retryAfter("k", 2500)).toBe(0);
  });
  test("memory is bounded in keys", () => {
    const w = new SlidingWindow(1, 10_000, 100);
    for (let i = 0; i < 1000; i++) w.hit(`k${i}`, 0);
    expect(w.retryAfter("k999", 1)).toBeGreaterThan(0);
    expect(w.retryAfter("k0", 1)).toBe(0);
  });
});

describe("sign-in limits over HTTP", () => {
  test("429 with Retry-After after 10 failures for an account; unknown and known emails answer alike; the window frees it", async () => {
    const p = await makePerson(t, []);
    const ghost = "ghost-account@ops.test";
    for (let i = 0; i < LIMITS.signInPerAccount.limit; i++) {
      await expectStatus(await login(p.email, `wrong-password-${i}`), 401);
      await expectStatus(await login(ghost, `wrong-password-${i}`), 401);
    }
    const known = await login(p.email, p.password);
    const unknown = await login(ghost, "whatever-password");
    expect(known.headers.get("retry-after")).toBe(unknown.headers.get("retry-after"));
    expect(Number(known.headers.get("retry-after"))).toBeGreaterThan(0);
    const kb = await expectStatus(known, 429);
    const ub = await expectStatus(unknown, 429);
    expect(kb).toEqual(ub);
    expect(kb.error).toBe("rate_limited");
    t.clock.advance(LIMITS.signInPerAccount.windowMs + 1000);
    await expectStatus(await login(p.email, p.password), 200);
  });

  test("429 past 30 failures from one address, whichever accounts", async () => {
    const p = await makePerson(t, []);
    for (let i = 0; i < LIMITS.signInPerAddress.limit; i++) await expectStatus(await login(`spray${i}@ops.test`, "some-password-x"), 401);
    await expectStatus(await login(p.email, p.password), 429);
    t.clock.advance(LIMITS.signInPerAddress.windowMs + 1000);
    await expectStatus(await login(p.email, p.password), 200);
  });

  test("wrong current passwords on POST /auth/password count too", async () => {
    const p = await makePerson(t, []);
    for (let i = 0; i < LIMITS.signInPerAccount.limit; i++) {
      await expectStatus(await t.request("POST", "/api/v1/auth/password", { token: p.session, body: { current_password: `nope-${i}-nope-nope`, new_password: "a-brand-new-password" } }), 422);
    }
    await expectStatus(await t.request("POST", "/api/v1/auth/password", { token: p.session, body: { current_password: p.password, new_password: "a-brand-new-password" } }), 429);
  });
});

describe("the real user is not locked out by an attacker", () => {
  test("an address the account signed in from keeps its own window; a new address waits at most one window", () => {
    const g = signInGuard(t.core);
    const account = "victim@ops.test";
    const home = "198.51.100.7";
    const attacker = "203.0.113.9";
    g.succeed(account, home);
    for (let i = 0; i < 50; i++) {
      try {
        g.check(account, attacker);
        g.fail(account, attacker);
      } catch (e) {
        expect((e as OpsError).status).toBe(429);
      }
    }
    expect(() => g.check(account, attacker)).toThrow(OpsError);
    expect(() => g.check(account, "192.0.2.44")).toThrow(OpsError); // a new address shares the account's window
    expect(() => g.check(account, home)).not.toThrow(); // home is unaffected
    t.clock.advance(15 * MIN + 1000);
    expect(() => g.check(account, "192.0.2.44")).not.toThrow();
  });
});
