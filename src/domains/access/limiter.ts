/**
 * Brute-force limits for sign-in and MFA confirmation, in memory per Core (one process serves
 * one estate; a restart forgets the counts, which only ever favours the real user).
 *
 * Failures are counted in sliding windows. Three keys are checked before a password is verified:
 * - the client address: 30 failed attempts per 15 minutes, whatever the accounts;
 * - the account from addresses it never signed in from: 10 failures per 15 minutes;
 * - the account from an address it signed in from successfully in the last 30 days (its own
 *   window per address): 10 failures per 15 minutes.
 * So a guessing attacker gets at most 10 tries per account per 15 minutes, while the real user at
 * their usual address is never locked out by someone else's failures, and at a new address for at
 * most 15 minutes after the attack stops. Unknown emails are counted exactly like known ones, so
 * a 429 says nothing about whether an account exists.
 *
 * MFA confirmation: 5 wrong codes per account per 5 minutes and 20 per address per 15 minutes.
 */
import { coreLocal, type Core } from "../../core/core";
import { OpsError } from "../../core/errors";

const MINUTE = 60_000;

/** Hits per key inside a sliding window; bounded in keys (oldest keys are dropped first). */
export class SlidingWindow {
  private readonly hits = new Map<string, number[]>();
  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly maxKeys = 50_000,
  ) {}

  private live(key: string, now: number): number[] {
    const list = this.hits.get(key);
    if (!list) return [];
    const from = now - this.windowMs;
    let i = 0;
    while (i < list.length && list[i] <= from) i++;
    if (i > 0) list.splice(0, i);
    if (list.length === 0) this.hits.delete(key);
    return list;
  }

  hit(key: string, now: number): void {
    const list = this.live(key, now);
    if (list.length === 0) {
      if (this.hits.size >= this.maxKeys) {
        const oldest = this.hits.keys().next().value;
        if (oldest !== undefined) this.hits.delete(oldest);
      }
      this.hits.set(key, list);
    }
    list.push(now);
    if (list.length > this.limit) list.splice(0, list.length - this.limit);
  }

  /** Seconds until one more attempt is allowed; 0 when allowed now. */
  retryAfter(key: string, now: number): number {
    const list = this.live(key, now);
    if (list.length < this.limit) return 0;
    return Math.max(1, Math.ceil((list[0] + this.windowMs - now) / 1000));
  }

  reset(key: string): void {
    this.hits.delete(key);
  }
}

export const LIMITS = {
  signInPerAddress: { limit: 30, windowMs: 15 * MINUTE },
  signInPerAccount: { limit: 10, windowMs: 15 * MINUTE },
  signInPerTrustedAddress: { limit: 10, windowMs: 15 * MINUTE },
  trustedAddressMs: 30 * 24 * 60 * MINUTE,
  mfaPerAccount: { limit: 5, windowMs: 5 * MINUTE },
  mfaPerAddress: { limit: 20, windowMs: 15 * MINUTE },
} as const;

export interface Guard {
  /** Throw 429 (with Retry-After) when `account` from `ip` must wait. */
  check(account: string, ip: string): void;
  fail(account: string, ip: string): void;
  succeed(account: string, ip: string): void;
}

function tooMany(seconds: number): OpsError {
  return new OpsError("rate_limited", "Too many failed attempts; wait a little and try again.", { retry_after: seconds }, { headers: { "retry-after": String(seconds) } });
}

function makeSignInGuard(core: Core): Guard {
  const byAddress = new SlidingWindow(LIMITS.signInPerAddress.limit, LIMITS.signInPerAddress.windowMs);
  const byAccount = new SlidingWindow(LIMITS.signInPerAccount.limit, LIMITS.signInPerAccount.windowMs);
  const byTrusted = new SlidingWindow(LIMITS.signInPerTrustedAddress.limit, LIMITS.signInPerTrustedAddress.windowMs);
  /** account → (address → last successful sign-in). */
  const trusted = new Map<string, Map<string, number>>();
  const isTrusted = (account: string, ip: string, now: number) => {
    const at = trusted.get(account)?.get(ip);
    return at !== undefined && now - at < LIMITS.trustedAddressMs;
  };
  const pair = (account: string, ip: string) => `${account}\u0000${ip}`;
  return {
    check(account, ip) {
      const now = core.clock.now();
      const wait = Math.max(
        byAddress.retryAfter(ip, now),
        isTrusted(account, ip, now) ? byTrusted.retryAfter(pair(account, ip), now) : byAccount.retryAfter(account, now),
      );
      if (wait > 0) throw tooMany(wait);
    },
    fail(account, ip) {
      const now = core.clock.now();
      byAddress.hit(ip, now);
      if (isTrusted(account, ip, now)) byTrusted.hit(pair(account, ip), now);
      else byAccount.hit(account, now);
    },
    succeed(account, ip) {
      const now = core.clock.now();
      byTrusted.reset(pair(account, ip));
      let m = trusted.get(account);
      if (!m) {
        if (trusted.size >= 50_000) {
          const oldest = trusted.keys().next().value;
          if (oldest !== undefined) trusted.delete(oldest);
        }
        m = new Map();
        trusted.set(account, m);
      }
      m.delete(ip);
      m.set(ip, now);
      if (m.size > 20) m.delete(m.keys().next().value as string);
    },
  };
}

function makeMfaGuard(core: Core): Guard {
  const byAccount = new SlidingWindow(LIMITS.mfaPerAccount.limit, LIMITS.mfaPerAccount.windowMs);
  const byAddress = new SlidingWindow(LIMITS.mfaPerAddress.limit, LIMITS.mfaPerAddress.windowMs);
  return {
    check(account, ip) {
      const now = core.clock.now();
      const wait = Math.max(byAccount.retryAfter(account, now), byAddress.retryAfter(ip, now));
      if (wait > 0) throw tooMany(wait);
    },
    fail(account, ip) {
      const now = core.clock.now();
      byAccount.hit(account, now);
      byAddress.hit(ip, now);
    },
    succeed(account) {
      byAccount.reset(account);
    },
  };
}

/** The sign-in guard of `core` (one per Core). */
export function signInGuard(core: Core): Guard {
  return coreLocal<Guard>(core, "access.signin-guard", () => makeSignInGuard(core));
}

/** The MFA-confirmation guard of `core` (one per Core). */
export function mfaGuard(core: Core): Guard {
  return coreLocal<Guard>(core, "access.mfa-guard", () => makeMfaGuard(core));
}
