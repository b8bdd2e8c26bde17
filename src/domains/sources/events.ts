/**
 * What the sources domain announces. `PUSH` fires once per updated ref of a push, for each project
 * the repository is connected to, after the ref is written and `last_event_at` recorded; the
 * builds domain subscribes to it.
 */
import { topic } from "../../core/events";

export interface PushEvent {
  /** The project's slug. */
  project: string;
  sourceId: string;
  /** `owner/repo`. */
  repo: string;
  /** Full ref: `refs/heads/main`, `refs/tags/v1.0.0`. */
  ref: string;
  /** Previous sha (40 zeros for a new ref). */
  before: string;
  /** New sha (40 zeros for a deleted ref). */
  after: string;
  /** Who pushed (the ops actor; for a machine token its handle; on GitHub the login). */
  pusher: string;
  /** Tell the pusher one line (`remote: …` on the built-in host; unset on GitHub): HostPush.say. */
  say?: (line: string) => void;
}

export const PUSH = topic<PushEvent>("sources.push");
