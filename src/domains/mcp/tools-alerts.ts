/**
 * Alert tools: a project's alert rules with their state, and the deliveries sent to its channels
 * (status, attempts, the receiver's last error). Reads only: rules and channels are changed in the
 * console or the API, where a channel's URL is given once and never read back.
 */
import { listDeliveries, listRules } from "../alerts/service";
import { READS, count, type ToolSpec } from "./tool-kit";

const PROJECT = { slug: "project" };
const describe = { project: "Project slug" };

interface Rule {
  name: string;
  state: string;
}
interface Delivery {
  channel: string;
  event: string;
  state: string;
}

export const ALERT_TOOLS: ToolSpec[] = [
  {
    name: "list_alert_rules",
    title: "List alert rules",
    description: "A project's alert rules (a metric over or under a threshold for a duration, or a log query matching N times in a window) with their state: ok, pending or firing, the last value and any silence.",
    route: "GET /api/v1/projects/:slug/alert-rules",
    args: { rename: PROJECT, describe },
    permission: { key: "obs.read", environment: "none" },
    annotations: READS,
    run: (c) => listRules(c.core, c.project),
    text: (r: Rule[], c) => {
      const firing = r.filter((x) => x.state === "firing").map((x) => x.name);
      return `${count(r.length, "alert rule")} in ${c.project.slug}${firing.length ? `; firing: ${firing.join(", ")}` : ", none firing"}.`;
    },
  },
  {
    name: "list_alert_deliveries",
    title: "List alert deliveries",
    description: "Messages sent to a project's outbound channels (webhook, Slack, Discord), newest first, with their state (pending, delivered, failed), attempts, the receiver's last HTTP status and error. Filter by channel and state.",
    route: "GET /api/v1/projects/:slug/alert-deliveries",
    args: { rename: PROJECT, describe },
    permission: { key: "obs.read", environment: "none" },
    annotations: READS,
    run: (c) => listDeliveries(c.core, c.project, { ...c.query, limit: c.query.limit === undefined ? undefined : Math.floor(c.query.limit) }),
    text: (r: Delivery[], c) => {
      const failed = r.filter((d) => d.state === "failed").length;
      return `${count(r.length, "delivery", "deliveries")} in ${c.project.slug}${failed ? `, ${failed} failed` : ""}${r.length ? `; newest: ${r[0].event} to ${r[0].channel}, ${r[0].state}` : ""}.`;
    },
  },
];
