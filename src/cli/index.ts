/**
 * The client commands (they talk to a server over HTTP like any user). Each is wrapped so a
 * CliError becomes one line on stderr and its exit code (see EXIT in src/commands/types.ts).
 */
import type { Command } from "../commands/types";
import { CliError } from "./http";
import { loginCommand } from "./login";
import { whoamiCommand, logoutCommand } from "./session";
import { updateCommand } from "./update";
import { tokensListCommand, tokensMintCommand, tokensRevokeCommand } from "./tokens";
import { deployCommand, logsCommand, rollbackCommand } from "./delivery";
import { mcpCommand } from "./mcp";
import { buildsCommand } from "./builds";

function withCliErrors(c: Command): Command {
  return {
    ...c,
    async run(ctx) {
      try {
        return await c.run(ctx);
      } catch (e) {
        if (e instanceof CliError) {
          ctx.stderr(`ops ${c.name}: ${e.message}\n`);
          return e.exit;
        }
        throw e;
      }
    },
  };
}

export const CLIENT_COMMANDS: readonly Command[] = [loginCommand, whoamiCommand, logoutCommand, updateCommand, tokensListCommand, tokensMintCommand, tokensRevokeCommand, logsCommand, buildsCommand, deployCommand, rollbackCommand, mcpCommand].map(withCliErrors);
