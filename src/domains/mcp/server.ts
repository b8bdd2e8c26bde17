/**
 * One MCP server per session, on the SDK's low-level `Server`: ops lists JSON Schemas derived from
 * its routes' TypeBox schemas, which the high-level `McpServer` (zod schemas) would make us write
 * twice. Every handler takes the caller from the request it arrived on (`authInfo.extra.caller`,
 * set by the HTTP route after authenticating that request), never from the session's start.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Core } from "../../core/core";
import { normaliseError } from "../../core/errors";
import { runTool, type Caller } from "./tool-kit";
import { toolsOf } from "./tools";
import { readResource, RESOURCE_TEMPLATES, STATIC_RESOURCES, UnknownResource } from "./resources";
import { closeSession, MAX_SUBSCRIPTIONS, POLL_MS, type McpSession } from "./sessions";

/** MCP's code for a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;

const INSTRUCTIONS = `ops runs this team's projects: services built from git pushes into signed images and rolled out per environment, their logs, traces and metrics, resources, secrets, translations and packages.
Every tool names its project (and environment, default production, and service) explicitly: start with list_projects or whoami. A refused call comes back as a tool error with the reason (your role, the token's scopes or project pin, or an environment policy) and is recorded in the project's audit log. Secrets are write-only: set_secret stores a value, nothing returns one.
Read ${STATIC_RESOURCES[0].uri} before editing a repository's ops.toml.`;

interface Extra {
  authInfo?: { extra?: Record<string, unknown> };
}

function callerOf(extra: Extra): Caller {
  const caller = extra.authInfo?.extra?.caller as Caller | undefined;
  if (!caller) throw new McpError(ErrorCode.InvalidRequest, "This request carried no authenticated caller.");
  return caller;
}

/** A refusal or failure while reading a resource, as a JSON-RPC error with ops's code in `data`. */
function resourceError(core: Core, e: unknown, uri: string): McpError {
  if (e instanceof McpError) return e;
  if (e instanceof UnknownResource) return new McpError(RESOURCE_NOT_FOUND, e.message, { uri });
  const n = normaliseError(e);
  if (n.internal) core.log.error("mcp resource read failed", { uri: uri.slice(0, 200), err: e });
  if (n.status === 404) return new McpError(RESOURCE_NOT_FOUND, n.message, { uri, error: n.code });
  return new McpError(n.status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidRequest, n.message, { uri, error: n.code, status: n.status });
}

/** Poll the session's subscriptions; a resource that grew gets `notifications/resources/updated`. */
async function pollSubscriptions(core: Core, session: McpSession): Promise<void> {
  for (const [uri, sub] of [...session.subscriptions]) {
    try {
      const { mark } = await readResource(core, uri, sub.caller);
      if (mark === sub.mark) continue;
      sub.mark = mark;
      await session.server.sendResourceUpdated({ uri });
    } catch (e) {
      // Refused now (a role changed, a token was narrowed) or gone: stop following it.
      session.subscriptions.delete(uri);
      core.log.info("mcp subscription ended", { uri: uri.slice(0, 200), reason: normaliseError(e).code });
    }
  }
  if (session.subscriptions.size === 0 && session.poller) {
    clearInterval(session.poller);
    session.poller = null;
  }
}

function startPolling(core: Core, session: McpSession): void {
  if (session.poller) return;
  let busy = false;
  session.poller = setInterval(() => {
    if (busy) return;
    busy = true;
    pollSubscriptions(core, session)
      .catch((e) => core.log.warn("mcp subscription poll failed", { err: (e as Error).message }))
      .finally(() => (busy = false));
  }, POLL_MS);
  session.poller.unref?.();
}

/** The server of one session, with ops's tools and resources. */
export function buildServer(core: Core, session: McpSession): Server {
  const server = new Server(
    { name: "ops", title: "ops", version: core.version },
    { capabilities: { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } }, instructions: INSTRUCTIONS },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...toolsOf(core).values()].map((t) => t.listing) }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const tool = toolsOf(core).get(req.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `No tool named "${req.params.name.slice(0, 100)}": tools/list names them.`);
    return runTool(core, tool, (req.params.arguments ?? {}) as Record<string, unknown>, callerOf(extra));
  });
  server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: STATIC_RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: RESOURCE_TEMPLATES }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
    const uri = req.params.uri;
    try {
      const r = await readResource(core, uri, callerOf(extra));
      return { contents: [{ uri, mimeType: r.mimeType, text: r.text }] };
    } catch (e) {
      throw resourceError(core, e, uri);
    }
  });
  server.setRequestHandler(SubscribeRequestSchema, async (req, extra) => {
    const uri = req.params.uri;
    const caller = callerOf(extra);
    let mark: string;
    try {
      mark = (await readResource(core, uri, caller)).mark;
    } catch (e) {
      throw resourceError(core, e, uri);
    }
    if (!session.subscriptions.has(uri) && session.subscriptions.size >= MAX_SUBSCRIPTIONS) {
      throw new McpError(ErrorCode.InvalidRequest, `A session follows at most ${MAX_SUBSCRIPTIONS} resources: unsubscribe from one first.`);
    }
    session.subscriptions.set(uri, { caller, mark });
    startPolling(core, session);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (req) => {
    session.subscriptions.delete(req.params.uri);
    return {};
  });
  server.onclose = () => {
    if (session.id) void closeSession(core, session);
  };
  return server;
}
