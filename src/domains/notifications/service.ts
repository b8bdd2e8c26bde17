/**
 * The notifications domain's public surface. Other domains call `notify(core, t, event)` inside
 * the transaction of the change the notice is about.
 */
export { notify, type NotifyEvent } from "./notices";
export { NOTIFICATION_KINDS, isNotificationKind, type NotificationKind } from "./kinds";
