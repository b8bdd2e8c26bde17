/**
 * `ops mcp`: ops's tools for an MCP client that starts a local process (an editor's or a desktop
 * app's assistant). It is a bridge, not a second server: MCP messages read on stdin go to the
 * server's `/mcp` (Streamable HTTP, the SDK's own client transport, with the token), and what the
 * server sends comes back on stdout, so both transports serve one tool set with one set of rules.
 * stdout carries protocol messages only; anything for a person goes to stderr.
 *
 * The token: OPS_TOKEN, else the one `ops login --client mcp` saved, else the CLI's own login.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { EXIT, type Command, type CommandContext } from "../commands/types";
import { CliError, USER_AGENT, api } from "./http";
import { normaliseServer, readConfigFile } from "./config";

type Env = Record<string, string | undefined>;

/** Server and token for `ops mcp`: flag/OPS_SERVER/saved, and OPS_TOKEN, the saved mcp token, or the CLI's token. */
export function resolveMcpClient(env: Env, serverFlag?: string): { server: string; token: string } {
  const file = readConfigFile(env);
  const server = normaliseServer(serverFlag ?? env.OPS_SERVER ?? file.mcp_server ?? file.server ?? null);
  const token = env.OPS_TOKEN?.trim() || file.mcp_token || file.token || null;
  if (!server) throw new CliError("no server configured: run 'ops login --client mcp --server URL' or set OPS_SERVER.", EXIT.auth);
  if (!token) throw new CliError("not signed in: run 'ops login --client mcp' or set OPS_TOKEN.", EXIT.auth);
  return { server, token };
}

const isRequest = (m: JSONRPCMessage): m is JSONRPCMessage & { id: string | number; method: string } => "method" in m && "id" in m;

/** Bridge stdin/stdout to `<server>/mcp` until stdin ends; resolves then. */
export async function bridge(server: string, token: string, warn: (line: string) => void): Promise<void> {
  const local = new StdioServerTransport();
  const remote = new StreamableHTTPClientTransport(new URL(`${server}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}`, "user-agent": USER_AGENT } } });
  const initializing = new Set<string | number>();
  let ended: () => void = () => {};
  const done = new Promise<void>((resolve) => (ended = resolve));

  local.onmessage = (message) => {
    if (isRequest(message) && message.method === "initialize") initializing.add(message.id);
    remote.send(message).catch(async (e: Error) => {
      warn(`ops mcp: the server at ${server} did not take a message: ${e.message}`);
      if (isRequest(message)) await local.send({ jsonrpc: "2.0", id: message.id, error: { code: -32000, message: `ops server: ${e.message}` } });
    });
  };
  remote.onmessage = (message) => {
    // The SDK's client sets the negotiated version on its transport after initialize; a bridge has no client, so it does so here.
    if ("id" in message && "result" in message && initializing.delete(message.id as string | number)) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === "string") remote.setProtocolVersion(version);
    }
    void local.send(message);
  };
  remote.onerror = (e) => warn(`ops mcp: ${e.message}`);
  local.onerror = (e) => warn(`ops mcp: unreadable input: ${e.message}`);

  await remote.start();
  await local.start();
  process.stdin.once("end", () => ended());
  process.stdin.once("close", () => ended());
  await done;
  // End the session on the server (DELETE), then stop.
  await remote.terminateSession().catch(() => {});
  await remote.close().catch(() => {});
  await local.close().catch(() => {});
}

export const mcpCommand: Command = {
  name: "mcp",
  side: "client",
  summary: "Serve ops's tools to an MCP client over stdio (an assistant in an editor or a chat app)",
  usage: "[--server URL]",
  description:
    "Configure your MCP client to start 'ops mcp' (stdio). It uses OPS_TOKEN, else the token 'ops login --client mcp' saved, else your CLI login; the tools act with that token's permissions and every call is audited. Clients that speak Streamable HTTP can connect to <server>/mcp directly with the token as a Bearer header.",
  flags: {
    server: { type: "string", value: "URL", description: "The ops server (default: OPS_SERVER or the saved server)" },
  },
  async run(ctx: CommandContext) {
    const { server, token } = resolveMcpClient(ctx.env, typeof ctx.flags.server === "string" ? ctx.flags.server : undefined);
    // Fail here with a clear message rather than inside the client's first request.
    await api(server, token, "GET", "/api/v1/me");
    await bridge(server, token, (line) => ctx.stderr(`${line}\n`));
    return EXIT.ok;
  },
};
