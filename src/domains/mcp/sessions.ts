/**
 * MCP sessions over Streamable HTTP: one SDK transport and one server per session, kept in
 * memory per Core. A session belongs to the credential that opened it (a token, or a session
 * bearer): a request carrying another credential, even the same person's, does not find it, so a
 * leaked session id alone is worth nothing. Every request authenticates again, so a revoked token
 * is refused at once (its sessions then only wait to idle out).
 *
 * Bounded: at most 8 sessions per credential and 512 in all (the least recently used one is closed
 * to make room), an hour without a request closes one, and a session follows at most 32
 * subscriptions. Subscriptions are polled once a second while a session has any.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Core } from "../../core/core";
import type { Principal } from "../../core/authz/principal";
import { uuidv7 } from "../../core/ids";
import type { Caller } from "./tool-kit";

export const MAX_SESSIONS_PER_CREDENTIAL = 8;
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
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  lastSeen: number;
  subscriptions: Map<string, Subscription>;
  poller: ReturnType<typeof setInterval> | null;
  closed: boolean;
}

const KEY = "mcp.sessions";

export function sessionsOf(core: Core): Map<string, McpSession> {
  let m = core.locals.get(KEY) as Map<string, McpSession> | undefined;
  if (!m) core.locals.set(KEY, (m = new Map()));
  return m;
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
  if (s.poller) clearInterval(s.poller);
  s.poller = null;
  s.subscriptions.clear();
  try {
    await s.server.close();
  } catch (e) {
    core.log.warn("mcp session did not close cleanly", { err: (e as Error).message });
  }
}

/** Close idle sessions, then make room for one more session of `owner`. */
async function makeRoom(core: Core, owner: string): Promise<void> {
  const all = sessionsOf(core);
  const now = core.clock.now();
  for (const s of [...all.values()]) if (now - s.lastSeen > SESSION_IDLE_MS) await closeSession(core, s);
  const byAge = (list: McpSession[]) => list.sort((a, b) => a.lastSeen - b.lastSeen);
  const own = byAge([...all.values()].filter((s) => s.owner === owner));
  while (own.length >= MAX_SESSIONS_PER_CREDENTIAL) await closeSession(core, own.shift() as McpSession);
  const every = byAge([...all.values()]);
  while (every.length >= MAX_SESSIONS) await closeSession(core, every.shift() as McpSession);
}

/**
 * A new session for `caller`, its server built by `build` and connected. The session is listed once
 * the transport has handled the initialize request (the SDK calls back with its id).
 */
export async function openSession(core: Core, caller: Caller, build: (session: McpSession) => Server, maxBodyBytes: number): Promise<McpSession> {
  const owner = ownerOf(caller.principal);
  await makeRoom(core, owner);
  const session = { owner, lastSeen: core.clock.now(), subscriptions: new Map(), poller: null, closed: false } as unknown as McpSession;
  session.transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => uuidv7(core.clock.now()),
    onsessioninitialized: (id) => {
      session.id = id;
      sessionsOf(core).set(id, session);
    },
    onsessionclosed: () => closeSession(core, session),
    maxRequestBodySize: maxBodyBytes,
  });
  session.server = build(session);
  await session.server.connect(session.transport);
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
  for (const s of [...sessionsOf(core).values()]) await closeSession(core, s);
}
