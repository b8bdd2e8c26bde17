/**
 * The client commands (they talk to a server over HTTP like any user). Each is wrapped so a
 * CliError becomes one line on stderr and its exit code (see EXIT in src/commands/types.ts).
 */
import type { Command } from "../commands/types";
import { CliError } from "./http";
import { escapeForTerminal } from "../core/terminal-text";
import { loginCommand } from "./login";
import { whoamiCommand, logoutCommand } from "./session";
import { updateCommand } from "./update";
import { tokensListCommand, tokensMintCommand, tokensRevokeCommand } from "./tokens";
import { deployCommand, logsCommand, rollbackCommand } from "./delivery";
import { mcpCommand } from "./mcp";
import { buildsCommand } from "./builds";
import { alertsCommand } from "./alerts";
import { nodesCommand, statusCommand } from "./status";

/**
 * Client commands print what a server sent: an app's log lines, commit subjects, messages that
 * echo input. Control characters in them are written escaped (core/terminal-text.ts), so a line a
 * project's code printed cannot drive the terminal of whoever reads it. A write that starts with
 * a carriage return is ops's own progress line (`ops update`) and keeps it. `ops mcp` speaks
 * JSON-RPC on stdout and is left alone.
 */
function terminalSafe(write: (text: string) => void): (text: string) => void {
  return (text) => write(text.startsWith("\r") ? `\r${escapeForTerminal(text.slice(1))}` : escapeForTerminal(text));
}

function withCliErrors(c: Command): Command {
  return {
    ...c,
    async run(given) {
      const ctx = c.name === "mcp" ? given : { ...given, stdout: terminalSafe(given.stdout), stderr: terminalSafe(given.stderr) };
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

export const CLIENT_COMMANDS: readonly Command[] = [loginCommand, whoamiCommand, logoutCommand, updateCommand, tokensListCommand, tokensMintCommand, tokensRevokeCommand, logsCommand, buildsCommand, alertsCommand, statusCommand, nodesCommand, deployCommand, rollbackCommand, mcpCommand].map(withCliErrors);
