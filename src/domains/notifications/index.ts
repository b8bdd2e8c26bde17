/**
 * The notifications domain module: feed and settings routes, email delivery items.
 * Decisions: docs/decisions/0406-notifications.md.
 */
import type { DomainModule } from "../../core/core";
import { notificationRoutes } from "./routes";
import { defineNotificationJobs } from "./jobs";

export const notificationsModule: DomainModule = {
  name: "notifications",
  install(core) {
    defineNotificationJobs(core);
  },
  routes: notificationRoutes,
};
