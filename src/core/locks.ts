/**
 * In-process mutual exclusion by key: work on one key runs one at a time, in arrival order, while
 * work on other keys goes on. For read-modify-write sequences that span awaits (an upload's
 * PATCHes, a repository's signature manifest) within one Core; the locks live in `core.locals`.
 */
import type { Core } from "./core";

/** Run `fn` after every earlier call with the same `namespace` and `id` has settled. */
export async function withKeyLock<T>(core: Core, namespace: string, id: string, fn: () => Promise<T>): Promise<T> {
  const slot = `locks.${namespace}`;
  let locks = core.locals.get(slot) as Map<string, Promise<unknown>> | undefined;
  if (!locks) core.locals.set(slot, (locks = new Map()));
  const prev = locks.get(id) ?? Promise.resolve();
  const run = prev.catch(() => undefined).then(fn);
  locks.set(id, run);
  try {
    return await run;
  } finally {
    if (locks.get(id) === run) locks.delete(id);
  }
}
