/**
 * In-process domain events: one domain announces that something happened (a push landed, an image
 * was signed, a rollout finished) and others react, without the announcer importing them. The
 * kernel knows no topic: a domain declares its topics with `topic<Payload>("domain.what")` next
 * to its service and exports them.
 *
 * Emit after the transaction that made the fact true has committed: a subscriber may read the
 * rows. Subscribers run in registration order; one that throws is logged and the others still
 * run. `emit` resolves when every subscriber has finished, so a test can await the reaction.
 */
import type { Logger } from "./log";

/** A named event with its payload type. */
export interface EventTopic<T> {
  readonly name: string;
  /** Carries the payload type only; never set. */
  readonly __payload?: T;
}

/** Declare a topic (stable name `domain.what`). */
export function topic<T>(name: string): EventTopic<T> {
  return { name };
}

export type EventHandler<T> = (payload: T) => void | Promise<void>;

export class EventBus {
  private readonly handlers = new Map<string, Array<EventHandler<unknown>>>();

  constructor(private readonly log: Logger) {}

  /** Subscribe; returns the unsubscribe function. */
  on<T>(t: EventTopic<T>, handler: EventHandler<T>): () => void {
    const list = this.handlers.get(t.name) ?? [];
    list.push(handler as EventHandler<unknown>);
    this.handlers.set(t.name, list);
    return () => {
      const cur = this.handlers.get(t.name);
      if (cur) this.handlers.set(t.name, cur.filter((h) => h !== handler));
    };
  }

  /** Run every subscriber of `t` with `payload`; resolves when all have finished. */
  async emit<T>(t: EventTopic<T>, payload: T): Promise<void> {
    for (const h of this.handlers.get(t.name) ?? []) {
      try {
        await h(payload);
      } catch (err) {
        this.log.error("event subscriber failed", { topic: t.name, err });
      }
    }
  }
}
