/**
 * MCP sessions over Streamable HTTP: one SDK transport and one server per session, kept in
 * memory per Core. A session belongs to the credential that opened it (a token, or a session
 * bearer): a request carrying another credential, even the same person's, does not find it, so a
 * leaked session id alone is worth nothing. Every request authenticates again, so a revoked token
 * is refused at once (its sessions then only wait to idle out).
 *
 * Bounded: at most 8 sessions per credential and 32 per operator (past either, that credential's or
 * operator's own least recently used session is closed to make room), 512 in all (past that a new
 * session is refused: nobody's session is closed to make room for another's), an hour without a
 * request closes one, and a session follows at most 32 subscriptions. Subscriptions are polled once
 * a second while a session has any. Decision: docs/decisions/0541-mcp-session-bounds.md.
 */
import type { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { coreLocal, type Core } from "../../core/core";
import type { Principal } from "../../core/authz/principal";
import { uuidv7 } from "../../core/ids";
import { OpsError } from "../../core/errors";
import type { Caller } from "./tool-kit";

export const MAX_SESSIONS_PER_CREDENTIAL = 8;
export const MAX_SESSIONS_PER_OPERATOR = 32;
export const MAX_SESSIONS = 512;
export const SESSION_IDLE_MS = 60 * 60_000;
export const MAX_SUBSCRIPTIONS = 32;
export const POLL_MS = 1000;

export interface Subscription {
  /** Whoever subscribed, as of their latest request: polls read as them. */
  caller: Caller;
  /** What the resource looked like at the last notification. */
  mark: string;
}

export interface McpSession {
  id: string;
  /** The credential that opened the session. */
  owner: string;
  /** The operator (person or machine) that credential belongs to. */
  operatorId: string;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  lastSeen: number;
  subscriptions: Map<string, Subscription>;
  poller: ReturnType<typeof setInterval> | null;
  closed: boolean;
}

const KEY = "mcp.sessions";

export function sessionsOf(core: Core): Map<string, McpSession> {
  return coreLocal<Map<string, McpSession>>(core, KEY, () => new Map());
}

/** Sessions whose initialize is still being handled: counted against the bounds, not yet listed. */
function openingOf(core: Core): Set<McpSession> {
  return coreLocal<Set<McpSession>>(core, "mcp.opening", () => new Set());
}

/** The credential a principal authenticated with: a minted token's id, else the session's. */
export function ownerOf(p: Principal): string {
  return p.tokenId ? `token:${p.tokenId}` : `session:${p.sessionId ?? p.operatorId}`;
}

/** Close a session: its transport (open streams end), its poller, its entry. */
export async function closeSession(core: Core, s: McpSession): Promise<void> {
  if (s.closed) return;
  s.closed = true;
  sessionsOf(core).delete(s.id);
  openingOf(core).delete(s);
  if (s.poller) clearInterval(s.poller);
  s.poller = null;
  s.subscriptions.clear();
  try {
    await s.server?.close();
  } catch (e) {
    core.log.warn("mcp session did not close cleanly", { err: (e as Error).message });
  }
}

/** A session that cannot be opened now (503); `reason` is for the audit row the route writes. */
export class SessionRefused extends OpsError {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super("unavailable", message, undefined, { headers: { "retry-after": "60" } });
  }
}

/**
 * Close idle sessions, then make room for one more session of `owner` (of `operatorId`) among its
 * own sessions only, and reserve it. Everything after the idle sweep is synchronous, so concurrent
 * initializes cannot both take the last place; closing removes a session from the lists at once.
 */
async function makeRoom(core: Core, session: McpSession): Promise<void> {
  const all = sessionsOf(core);
  const opening = openingOf(core);
  const now = core.clock.now();
  for (const s of [...all.values()]) if (now - s.lastSeen > SESSION_IDLE_MS) await closeSession(core, s);
  const closing: Promise<void>[] = [];
  const oldest = (list: McpSession[]) => list.reduce((a, b) => (b.lastSeen < a.lastSeen ? b : a));
  for (const [bound, same] of [
    [MAX_SESSIONS_PER_CREDENTIAL, (s: McpSession) => s.owner === session.owner],
    [MAX_SESSIONS_PER_OPERATOR, (s: McpSession) => s.operatorId === session.operatorId],
  ] as const) {
    const listed = [...all.values()].filter(same);
    let count = listed.length + [...opening].filter(same).length;
    while (count >= bound && listed.length > 0) {
      const victim = oldest(listed);
      listed.splice(listed.indexOf(victim), 1);
      closing.push(closeSession(core, victim));
      count--;
    }
    if (count >= bound) throw new SessionRefused(`${bound} MCP sessions of this ${bound === MAX_SESSIONS_PER_CREDENTIAL ? "credential" : "operator"} are still opening`, "Too many of your MCP sessions are opening at once; try again in a moment.");
  }
  if (all.size + opening.size >= MAX_SESSIONS) {
    throw new SessionRefused(`ops holds ${MAX_SESSIONS} MCP sessions, its maximum`, `ops holds ${MAX_SESSIONS} MCP sessions, as many as it keeps; try again later (idle sessions end after an hour).`);
  }
  opening.add(session);
  await Promise.all(closing);
}

/**
 * A new session for `caller`, its server built by `build` and connected. The session is listed once
 * the transport has handled the initialize request (the SDK calls back with its id).
 */
export async function openSession(core: Core, caller: Caller, build: (session: McpSession) => Server, maxBodyBytes: number): Promise<McpSession> {
  // The SDK loads with the first session, not at start (decision 0640).
  const { WebStandardStreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js");
  const session = { owner: ownerOf(caller.principal), operatorId: caller.principal.operatorId, lastSeen: core.clock.now(), subscriptions: new Map(), poller: null, closed: false } as unknown as McpSession;
  await makeRoom(core, session);
  session.transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => uuidv7(core.clock.now()),
    onsessioninitialized: (id) => {
      session.id = id;
      openingOf(core).delete(session);
      sessionsOf(core).set(id, session);
    },
    onsessionclosed: () => closeSession(core, session),
    maxRequestBodySize: maxBodyBytes,
  });
  try {
    session.server = build(session);
    await session.server.connect(session.transport);
  } catch (e) {
    openingOf(core).delete(session);
    throw e;
  }
  return session;
}

/** The live session `id` of the credential `principal` used, or null (unknown, idle, or another credential's). */
export async function findSession(core: Core, id: string, principal: Principal): Promise<McpSession | null> {
  const s = sessionsOf(core).get(id);
  if (!s || s.owner !== ownerOf(principal)) return null;
  if (core.clock.now() - s.lastSeen > SESSION_IDLE_MS) {
    await closeSession(core, s);
    return null;
  }
  return s;
}

/** Close every session of `core` (ops shutting down). */
export async function closeAllSessions(core: Core): Promise<void> {
  for (const s of [...sessionsOf(core).values(), ...openingOf(core)]) await closeSession(core, s);
}
