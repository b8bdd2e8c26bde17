/**
 * The notifications domain's public surface. Other domains call `notify(core, t, event)` inside
 * the transaction of the change the notice is about.
 */
export { notify, notifyEstate, lastEstateNoticeAt, type NotifyEvent } from "./notices";
export { NOTIFICATION_KINDS, ESTATE_NOTIFICATION_KINDS, isNotificationKind, type NotificationKind, type EstateNotificationKind } from "./kinds";
export { installNoticeForwarder, type ForwardedNotice } from "./forward";
