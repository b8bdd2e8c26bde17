/**
 * The alerts domain: alert rules over metrics and logs evaluated on the scheduler, silences, and
 * outbound channels (signed webhooks, Slack, Discord) with a delivery log; notices of the
 * notifications domain reach these channels too.
 * Decisions: docs/decisions/0650-alerts-and-outbound-channels.md.
 */
import type { DomainModule } from "../../core/core";
import { alertRoutes } from "./routes";
import { defineDeliveryItem } from "./deliveries";
import { defineEvaluateTask } from "./evaluate";
import { installForwarder } from "./forward";

export const alertsModule: DomainModule = {
  name: "alerts",
  install(core) {
    defineDeliveryItem(core);
    defineEvaluateTask(core);
    installForwarder(core);
  },
  routes: alertRoutes,
};
