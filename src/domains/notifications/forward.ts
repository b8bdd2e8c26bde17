/**
 * Outbound channels for notices (webhooks, Slack, Discord) belong to the alerts domain, which
 * sits above this one: it installs a forwarder at start-up and `notify` calls it inside the
 * event's transaction, so a channel's delivery exists exactly when the notice does
 * (docs/decisions/0650-alerts-and-outbound-channels.md).
 */
import type { Core } from "../../core/core";
import type { Tx } from "../../core/db/client";

export interface ForwardedNotice {
  kind: string;
  projectId: string;
  params: Record<string, string | number | boolean>;
  link: string | null;
}

export type NoticeForwarder = (t: Tx, notice: ForwardedNotice) => void;

const KEY = "notifications.forwarder";

/** Install the function that hands each project notice to the outbound channels. */
export function installNoticeForwarder(core: Core, forward: NoticeForwarder): void {
  core.locals.set(KEY, forward);
}

/** Hand `notice` to the installed forwarder, if any, inside `t`. */
export function forwardNotice(core: Core, t: Tx, notice: ForwardedNotice): void {
  (core.locals.get(KEY) as NoticeForwarder | undefined)?.(t, notice);
}
