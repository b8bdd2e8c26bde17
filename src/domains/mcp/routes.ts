/**
 * `/mcp`: the Streamable HTTP transport (POST messages, GET the server's stream, DELETE a session).
 * Authentication is the API's: `Authorization: Bearer` with a session bearer or a minted token,
 * resolved by the kernel on every request; the console's cookie opens nothing here (a page on
 * another site could make a browser send it), and a browser's request from any origin but ops's
 * own is refused (the transport's rule against DNS rebinding). Errors are JSON-RPC error bodies
 * (errorStyle); refusals are audited as `mcp.request`.
 */
import { Elysia, t } from "elysia";
import type { Core, ErrorStyle } from "../../core/core";
import { authzPlugin, type AuthContext } from "../../core/authz/plugin";
import { OpsError, type NormalisedError } from "../../core/errors";
import { writeAudit } from "../../core/audit";
import { actorOf } from "../../core/authz/principal";
import { findSession, openSession, closeSession, ownerOf, SessionRefused } from "./sessions";
import type { Caller } from "./tool-kit";

const isInitialize = (body: unknown) => !!body && typeof body === "object" && !Array.isArray(body) && (body as { method?: unknown }).method === "initialize";

type BunServer = { timeout?(request: Request, seconds: number): void } | null;

function refused(core: Core, auth: AuthContext, reason: string): void {
  writeAudit(core, core.db, { ...actorOf(auth.principal, auth.meta), action: "mcp.request", target: "/mcp", outcome: "denied", reason });
}

/**
 * MCP's Streamable HTTP transport: servers must validate `Origin` against DNS rebinding. A browser
 * sends one; a client that is not a browser (the CLI, an editor's MCP client) sends none. Only ops's
 * own public origin passes: not the Host the request named, as the console's cookie check allows,
 * since under DNS rebinding the attacker's name is both the page's origin and the Host. Decision
 * docs/decisions/0540-mcp-origin.md.
 */
function assertOwnOrigin(core: Core, request: Request, auth: AuthContext): void {
  const origin = request.headers.get("origin");
  if (origin === null || origin === new URL(core.config.publicUrl).origin) return;
  refused(core, auth, `browser Origin ${JSON.stringify(origin.slice(0, 100))} is not this server's`);
  throw new OpsError("forbidden", "MCP requests from a web page of another origin are refused; an MCP client sends no Origin header.");
}

async function handle(core: Core, request: Request, body: unknown, auth: AuthContext, server: BunServer): Promise<Response> {
  const principal = auth.principal;
  if (principal.viaCookie) throw new OpsError("unauthorized", "Send a token in Authorization: Bearer; the console's cookie does not open MCP sessions.");
  assertOwnOrigin(core, request, auth);
  const caller: Caller = { principal, meta: auth.meta };
  const authInfo = { token: "", clientId: ownerOf(principal), scopes: [...(principal.tokenScopes ?? [])], extra: { caller } };
  const parsedBody = request.method === "POST" ? body : undefined;
  const id = request.headers.get("mcp-session-id");
  if (id === null) {
    if (request.method !== "POST" || !isInitialize(body)) throw new OpsError("bad_request", "No MCP session: send an initialize request first (without Mcp-Session-Id).");
    // The MCP SDK behind the server loads with the first session, not at start (decision 0640).
    const { buildServer } = await import("./server");
    const session = await openSession(core, caller, (s) => buildServer(core, s), core.config.maxBodyBytes).catch((e) => {
      if (e instanceof SessionRefused) refused(core, auth, e.reason);
      throw e;
    });
    try {
      return await session.transport.handleRequest(request, { parsedBody, authInfo });
    } finally {
      if (!session.id) await closeSession(core, session);
    }
  }
  const session = await findSession(core, id, principal);
  if (!session) throw new OpsError("not_found", "No such MCP session (it ended, or belongs to another credential): initialize a new one.");
  session.lastSeen = core.clock.now();
  for (const sub of session.subscriptions.values()) sub.caller = caller;
  // The server's stream stays open for as long as the client listens (the SDK sends keep-alives).
  if (request.method === "GET") server?.timeout?.(request, 0);
  return session.transport.handleRequest(request, { parsedBody, authInfo });
}

const JSONRPC_CODE: Record<number, number> = { 400: -32600, 404: -32001, 413: -32600, 415: -32600 };

/** JSON-RPC error bodies for `/mcp`, with the HTTP status and ops's error code in `data`. */
export function mcpErrorStyle(): ErrorStyle {
  return {
    prefix: "/mcp",
    render(n: NormalisedError) {
      const code = n.code === "malformed_json" ? -32700 : (JSONRPC_CODE[n.status] ?? (n.status >= 500 ? -32603 : -32000));
      const headers: Record<string, string> = { "content-type": "application/json", ...n.headers };
      if (n.status === 401) headers["www-authenticate"] = 'Bearer realm="ops"';
      return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message: n.message, data: { error: n.code, status: n.status } }, id: null }), { status: n.status, headers });
    },
  };
}

const MessageBody = t.Unknown({ description: "A JSON-RPC message or batch (MCP 2025-11-25 and earlier)" });
const Stream = t.Unknown({ description: "application/json, or text/event-stream carrying JSON-RPC messages" });
const RpcError = t.Unknown({ description: "A JSON-RPC error body" });
const SessionHeaders = t.Object({ "mcp-session-id": t.Optional(t.String({ description: "The session the server named at initialize" })) });

export function mcpRoutes(core: Core) {
  const detail = (summary: string) => ({ summary, description: "Model Context Protocol, Streamable HTTP transport. Bearer token as for the API; tools act with the token's permissions and are audited as the API calls they stand for." });
  return new Elysia({ tags: ["mcp"] })
    .use(authzPlugin(core))
    .post("/mcp", ({ auth, body, request, server }) => handle(core, request, body, auth, server as BunServer), {
      permission: "authenticated",
      body: MessageBody,
      headers: SessionHeaders,
      detail: detail("Send MCP messages (initialize opens a session)"),
      response: { 200: Stream, 202: t.Void(), 400: RpcError, 401: RpcError, 403: RpcError, 404: RpcError, 406: RpcError, 413: RpcError, 415: RpcError, 503: RpcError },
    })
    .get("/mcp", ({ auth, request, server }) => handle(core, request, undefined, auth, server as BunServer), {
      permission: "authenticated",
      headers: SessionHeaders,
      detail: detail("The session's server-to-client stream (resource updates)"),
      response: { 200: Stream, 400: RpcError, 401: RpcError, 403: RpcError, 404: RpcError, 405: RpcError, 406: RpcError },
    })
    .delete("/mcp", ({ auth, request, server }) => handle(core, request, undefined, auth, server as BunServer), {
      permission: "authenticated",
      headers: SessionHeaders,
      detail: detail("End a session"),
      response: { 200: t.Unknown(), 400: RpcError, 401: RpcError, 403: RpcError, 404: RpcError },
    });
}
