/**
 * The MCP domain module: `/mcp` (Streamable HTTP) serving ops's tools and resources to AI clients.
 * The tools read their argument schemas from the composed app's routes (`onHttpApp`); sessions
 * close with the Core.
 */
import type { DomainModule } from "../../core/core";
import { mcpErrorStyle, mcpRoutes } from "./routes";
import { rememberRoutes } from "./route-schemas";
import { closeAllSessions } from "./sessions";
import { toolsOf } from "./tools";

export const mcpModule: DomainModule = {
  name: "mcp",
  install(core) {
    core.onClose.push(() => closeAllSessions(core));
  },
  routes: mcpRoutes,
  errorStyles: () => [mcpErrorStyle()],
  onHttpApp(core, app) {
    rememberRoutes(core, app);
    // Compile now: a tool naming a field its route does not have stops start-up, not a call.
    toolsOf(core);
  },
};
