/**
 * Push subscribers, shared by the host implementations: a host calls `deliver` once per updated
 * ref after the ref is written; every subscriber runs in registration order (one that throws is
 * logged, the others still run, and the pusher is told), and `deliver` resolves when all have finished.
 */
import type { Logger } from "../../core/log";
import type { HostPush, PushHandler } from "./types";

export class PushSubscribers {
  private handlers: PushHandler[] = [];

  constructor(private readonly log: Logger) {}

  /** Add a subscriber; returns the unsubscribe function. */
  on(handler: PushHandler): () => void {
    this.handlers.push(handler);
    return () => {
      this.handlers = this.handlers.filter((h) => h !== handler);
    };
  }

  /** Hand one push to every subscriber. */
  async deliver(push: HostPush): Promise<void> {
    for (const h of [...this.handlers]) {
      try {
        await h(push);
      } catch (err) {
        this.log.error("push subscriber failed", { repo: push.repo, ref: push.ref, err });
        push.say?.(`${push.ref}: ops could not finish acting on this push (the server log says why); the ref is updated`);
      }
    }
  }
}
