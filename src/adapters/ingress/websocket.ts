/**
 * WebSocket upgrades through the ingress. The upstream connection is opened first (a Bun
 * WebSocket client with the forwarded headers and the client's subprotocols), and only once it is
 * open is the client's request upgraded, answering with the subprotocol the upstream chose. A
 * refused upstream therefore still gets the next replica or a 502 page, instead of a client
 * socket that opens and dies. Messages are relayed both ways as they come (text stays text,
 * binary stays binary); whichever side closes first closes the other with its code and reason.
 */
import type { Server, ServerWebSocket, WebSocketHandler } from "bun";

export interface WsData {
  upstream: WebSocket;
  /** Messages the upstream sent before the client side was open. */
  pending: Array<string | ArrayBuffer>;
  client: ServerWebSocket<WsData> | null;
  upstreamClosed: { code: number; reason: string } | null;
  /** host:port of the replica, for counting and marking. */
  key: string;
}

/** Close codes that may not be sent on the wire (1005, 1006, 1015) become 1000 or 1011. */
function sendable(code: number): number {
  if (code === 1005) return 1000;
  if (code === 1006 || code === 1015 || code < 1000 || code >= 5000) return 1011;
  return code;
}

/** Open a WebSocket to `url`; resolves with it once open, or null when it was refused. */
export function openUpstream(url: string, headers: Record<string, string>, protocols: string[], key: string): Promise<WsData | null> {
  return new Promise((resolve) => {
    let settled = false;
    const hdrs: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) {
      if (!k.startsWith("sec-websocket-") && k !== "upgrade" && k !== "connection") hdrs[k] = v;
    }
    // Bun's client takes headers in an options object (the DOM typing knows only protocols).
    const BunWebSocket = WebSocket as unknown as new (url: string, options: Bun.WebSocketOptions) => WebSocket;
    const up = new BunWebSocket(url, { headers: hdrs, ...(protocols.length > 0 ? { protocols } : {}) });
    up.binaryType = "arraybuffer";
    const data: WsData = { upstream: up, pending: [], client: null, upstreamClosed: null, key };
    up.onopen = () => {
      settled = true;
      resolve(data);
    };
    up.onmessage = (ev) => {
      if (data.client) data.client.send(ev.data as string | ArrayBuffer);
      else data.pending.push(ev.data as string | ArrayBuffer);
    };
    up.onerror = () => {
      if (!settled) {
        settled = true;
        resolve(null);
      }
    };
    up.onclose = (ev) => {
      data.upstreamClosed = { code: ev.code, reason: ev.reason };
      if (!settled) {
        settled = true;
        resolve(null);
        return;
      }
      data.client?.close(sendable(ev.code), ev.reason);
    };
  });
}

/** Upgrade the client's request onto an open upstream; false when Bun refused the upgrade. */
export function upgradeClient(server: Server<WsData>, req: Request, data: WsData): boolean {
  const protocol = data.upstream.protocol;
  return server.upgrade(req, { headers: protocol ? { "sec-websocket-protocol": protocol } : {}, data });
}

export function websocketHandlers(sockets: Set<ServerWebSocket<WsData>>, counter: { open(key: string): void; close(key: string): void }): WebSocketHandler<WsData> {
  return {
    idleTimeout: 120,
    sendPings: true,
    open(ws) {
      sockets.add(ws);
      counter.open(ws.data.key);
      ws.data.client = ws;
      for (const m of ws.data.pending) ws.send(m);
      ws.data.pending = [];
      if (ws.data.upstreamClosed) ws.close(sendable(ws.data.upstreamClosed.code), ws.data.upstreamClosed.reason);
    },
    message(ws, message) {
      const up = ws.data.upstream;
      if (up.readyState === WebSocket.OPEN) up.send(message);
    },
    close(ws, code, reason) {
      sockets.delete(ws);
      counter.close(ws.data.key);
      const up = ws.data.upstream;
      if (up.readyState === WebSocket.OPEN || up.readyState === WebSocket.CONNECTING) up.close(sendable(code), reason);
    },
  };
}
