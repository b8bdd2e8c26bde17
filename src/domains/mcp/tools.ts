/**
 * The tool set: every tool of every group, compiled once per Core against the composed app's
 * routes (their argument schemas come from there). A tool whose route the app does not have (a
 * Core composed without that domain, as some suites do) is left out; a tool naming a field its
 * route lacks still fails at once, and a test holds the full app to every tool.
 */
import type { Core } from "../../core/core";
import { compileTool, type CompiledTool, type ToolSpec } from "./tool-kit";
import { hasRoute } from "./route-schemas";
import { PROJECT_TOOLS } from "./tools-project";
import { RESOURCE_TOOLS } from "./tools-resources";
import { DELIVERY_TOOLS } from "./tools-delivery";
import { OBS_TOOLS } from "./tools-obs";
import { ALERT_TOOLS } from "./tools-alerts";

export const TOOL_SPECS: readonly ToolSpec[] = [...PROJECT_TOOLS, ...RESOURCE_TOOLS, ...DELIVERY_TOOLS, ...OBS_TOOLS, ...ALERT_TOOLS];

const KEY = "mcp.tools";

/** The compiled tools of `core`, by name (built on first use). */
export function toolsOf(core: Core): ReadonlyMap<string, CompiledTool> {
  let tools = core.locals.get(KEY) as Map<string, CompiledTool> | undefined;
  if (!tools) {
    tools = new Map(TOOL_SPECS.filter((s) => hasRoute(core, s.route)).map((s) => [s.name, compileTool(core, s)]));
    core.locals.set(KEY, tools);
  }
  return tools;
}
