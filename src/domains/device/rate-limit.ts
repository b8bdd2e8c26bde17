/**
 * Per-address request counting for the throttled device routes (a sliding window over the
 * Core's clock). In memory, per Core: a restart forgets the counts, which only ever lets a
 * client through early; a single `ops serve` owns its address space.
 */
import { coreLocal, type Core } from "../../core/core";
import { OpsError } from "../../core/errors";

interface Window {
  hits: Map<string, number[]>;
}

function windowOf(core: Core, name: string): Window {
  const key = `device.rate.${name}`;
  return coreLocal<Window>(core, key, () => ({ hits: new Map() }));
}

/**
 * Count one request from `address` against `limit` per `windowMs`; throw 429 `rate_limited`
 * (with `retry-after`) past the limit. Refused requests are not counted.
 */
export function takeRate(core: Core, name: string, address: string, limit: number, windowMs: number, message: string): void {
  const now = core.clock.now();
  const w = windowOf(core, name);
  const since = now - windowMs;
  const list = (w.hits.get(address) ?? []).filter((at) => at > since);
  if (list.length >= limit) {
    const retry = Math.max(1, Math.ceil((list[0] + windowMs - now) / 1000));
    w.hits.set(address, list);
    throw new OpsError("rate_limited", message, undefined, { headers: { "retry-after": String(retry) } });
  }
  list.push(now);
  w.hits.set(address, list);
  if (w.hits.size > 10_000) {
    for (const [k, v] of w.hits) if (v.every((at) => at <= since)) w.hits.delete(k);
  }
}
