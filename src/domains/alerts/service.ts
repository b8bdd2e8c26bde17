/** The alerts domain's surface for the other domains (the MCP tools read rules and deliveries). */
export { listRules } from "./rules";
export { listDeliveries } from "./deliveries";
export { EVALUATE_TASK } from "./evaluate";
