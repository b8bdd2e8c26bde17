/**
 * `ops login`: the device flow (RFC 8628) the way gh does it. The client starts a grant, shows
 * the one-time code and the URL, polls at the server's interval (adding 5 s for good on every
 * `slow_down`), backs off on network errors, and stops at the code's expiry. The token lands in
 * the config file (0600), never on the screen.
 */
import os from "node:os";
import { EXIT, type Command, type CommandContext } from "../commands/types";
import { CliError, api, send } from "./http";
import { findServer } from "./probe";
import { readConfigFile, writeConfigFile } from "./config";

export const DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";

interface Authorize {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

export interface DeviceToken {
  access_token: string;
  operator: string;
  role: string;
  project?: string | null;
  expires_in?: number | null;
  scope: string;
}

export interface PollDeps {
  sleep: (ms: number) => Promise<void>;
  now: () => number;
  /** One poll: the parsed JSON body, whatever the status (RFC 8628 clients read the body). */
  poll: () => Promise<Record<string, unknown>>;
  onWait?: (intervalS: number) => void;
}

/**
 * Poll until the grant resolves. Returns the token; throws CliError for a denial (exit 5), an
 * expiry (exit 3) or any other refusal (exit 1).
 */
export async function pollForToken(intervalS: number, expiresInS: number, deps: PollDeps): Promise<DeviceToken> {
  let interval = Math.max(1, intervalS || 5);
  const deadline = deps.now() + expiresInS * 1000;
  let failures = 0;
  for (;;) {
    await deps.sleep(interval * 1000);
    if (deps.now() >= deadline) throw new CliError("the code expired before it was approved. Run 'ops login' again.", EXIT.auth);
    let body: Record<string, unknown>;
    try {
      body = await deps.poll();
      failures = 0;
    } catch (e) {
      if (!(e instanceof CliError) || e.exit !== EXIT.unreachable || ++failures > 5) throw e;
      // RFC 8628 §3.5: back off on connection trouble, then keep going.
      await deps.sleep(Math.min(60, 2 ** failures) * 1000);
      continue;
    }
    if (typeof body.access_token === "string") return body as unknown as DeviceToken;
    switch (body.error) {
      case "authorization_pending":
        deps.onWait?.(interval);
        continue;
      case "slow_down":
        interval += 5;
        continue;
      case "access_denied":
        throw new CliError("the login was denied.", EXIT.denied);
      case "expired_token":
        throw new CliError("the code expired or was already used. Run 'ops login' again.", EXIT.auth);
      default:
        throw new CliError(`the server refused the login: ${String(body.error_description ?? body.error ?? "unknown error")}`, EXIT.failure);
    }
  }
}

function defaultClientName(): string {
  let user = "";
  try {
    user = os.userInfo().username;
  } catch {
    // No passwd entry (containers): the host name alone will do.
  }
  return `${user ? `${user}@` : ""}${os.hostname()}`;
}

export const loginCommand: Command = {
  name: "login",
  side: "client",
  summary: "Sign this machine in to an ops server (device code, approved in the console)",
  usage: "[--server URL] [--project P] [--client cli|mcp]",
  description:
    "Prints a one-time code and a URL. Open the URL on any device where you are signed in to the ops console, check the code, choose a role and approve. The token is saved to ~/.config/ops/config.json (mode 0600). OPS_SERVER and OPS_TOKEN override the file. With --client mcp the approver sees an MCP client, the token is of kind mcp (it can never mint tokens or approve devices), and it is saved apart from the CLI's login, for 'ops mcp'.",
  flags: {
    server: { type: "string", value: "URL", description: "The ops server (default: OPS_SERVER or the saved server)" },
    project: { type: "string", value: "P", description: "Ask for a token pinned to this project (the approver decides)" },
    client: { type: "string", value: "cli|mcp", description: "Who the token is for: this CLI (default) or an MCP client started by 'ops mcp'" },
  },
  async run(ctx: CommandContext) {
    const raw = (typeof ctx.flags.server === "string" ? ctx.flags.server : undefined) ?? ctx.env.OPS_SERVER ?? readConfigFile(ctx.env).server ?? "";
    if (!raw.trim()) throw new CliError("which server? Run 'ops login --server https://ops.example.com'.", EXIT.usage);
    const found = await findServer(raw);
    for (const note of found.notes) ctx.stderr(`ops login: ${note}\n`);
    const server = found.server;
    const project = typeof ctx.flags.project === "string" ? ctx.flags.project : null;
    const client = ctx.flags.client ?? "cli";
    if (client !== "cli" && client !== "mcp") throw new CliError(`--client is cli or mcp, not "${String(client)}".`, EXIT.usage);

    const started = await api<Authorize>(server, null, "POST", "/api/v1/auth/device", { client, client_name: defaultClientName(), project });
    const a = started.body;
    ctx.stderr(`! First copy your one-time code: ${a.user_code}\n`);
    ctx.stderr(`Open this URL to continue in your web browser: ${a.verification_uri_complete}\n`);
    ctx.stderr("Waiting for approval…\n");

    const token = await pollForToken(a.interval, a.expires_in, {
      sleep: (ms) => Bun.sleep(ms),
      now: () => Date.now(),
      poll: async () => {
        const res = await send(server, "/api/v1/auth/device/token", {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ device_code: a.device_code, grant_type: DEVICE_GRANT_TYPE }),
        });
        const text = await res.text();
        try {
          return JSON.parse(text) as Record<string, unknown>;
        } catch {
          throw new CliError(`the server at ${server} answered the poll with ${res.status} and no JSON.`, EXIT.failure);
        }
      },
    });

    const previous = readConfigFile(ctx.env);
    const saved = client === "mcp" ? { ...previous, mcp_server: server, mcp_token: token.access_token } : { ...previous, server, token: token.access_token, project: token.project ?? null };
    const file = writeConfigFile(ctx.env, saved);
    ctx.stderr(`✓ Authentication complete. Signed in to ${server} as ${token.operator}\n`);
    const where = `with role ${token.role}${token.project ? ` in project ${token.project}` : ""}`;
    if (client === "mcp") ctx.stdout(`MCP client token for ${token.operator} ${where} saved to ${file}; have your MCP client run 'ops mcp'\n`);
    else ctx.stdout(`Logged in as ${token.operator} ${where}; token saved to ${file}\n`);
    if (ctx.env.OPS_TOKEN) ctx.stderr("note: OPS_TOKEN is set and overrides the saved token.\n");
    return EXIT.ok;
  },
};
