/**
 * Authorization matrix rows of `/mcp` (issue 24): any signed-in caller may open an MCP session
 * (`authenticated`); what a session's tools may do is their routes' own rows, and the MCP suites
 * check the tools against them. An initialize opens a session (200); GET and DELETE without one
 * are 400.
 */
import { registerMatrixDomain, ANYONE, type MatrixRow } from "./authz-matrix";

const initialize = () => ({
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "matrix", version: "1" } } }),
  headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
});

const ROWS: MatrixRow[] = [
  { route: "POST /mcp", permission: "authenticated", path: () => "/mcp", raw: initialize, status: 200, expect: ANYONE },
  { route: "GET /mcp", permission: "authenticated", path: () => "/mcp", raw: () => ({ body: "", headers: { accept: "text/event-stream" } }), status: 400, expect: ANYONE },
  { route: "DELETE /mcp", permission: "authenticated", path: () => "/mcp", status: 400, expect: ANYONE },
];

registerMatrixDomain({ tags: ["mcp"], rows: ROWS });
