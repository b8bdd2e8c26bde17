/**
 * A client of the Docker Engine API (v1.41: Docker 20.10 and later), shared by the Docker runtime
 * (docker.ts) and the Swarm runtime: JSON calls over the engine's unix socket or over TCP with TLS
 * client certificates (`tcp://host:2376` with a CA, a certificate and a key, as `docker --tlsverify`
 * does), the multiplexed log stream split into lines, and the event stream. Errors are
 * RuntimeErrors that say where the engine was looked for and what it answered.
 */
import { existsSync, readFileSync } from "node:fs";
import { RuntimeError, type OutputStream } from "./types";

export const API_VERSION = "v1.41";

export interface EngineEndpoint {
  /** `unix:///var/run/docker.sock`, a plain socket path, or `tcp://host:port`. */
  host: string;
  /** For `tcp://`: files of the CA, the client certificate and its key (TLS with client certificates). */
  tls?: { ca: string; cert: string; key: string } | null;
}

export interface EngineClient {
  readonly endpoint: string;
  /** One call; rejects with a RuntimeError on a failed connection or an HTTP status of 400 and up. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** `call` and its JSON answer. */
  json<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
}

/** A client for `endpoint`. */
export function engineClient(endpoint: EngineEndpoint): EngineClient {
  const host = endpoint.host.trim();
  const unix = host.startsWith("unix://") ? host.slice("unix://".length) : host.startsWith("/") ? host : null;
  const tcp = host.startsWith("tcp://") ? host.slice("tcp://".length) : null;
  if (unix === null && tcp === null) throw new RuntimeError(`the Docker Engine address ${host} is neither unix:///path nor tcp://host:port`);
  let tls: { ca: string; cert: string; key: string } | null = null;
  const base = () => {
    if (unix !== null) return `http://docker/${API_VERSION}`;
    return `${endpoint.tls ? "https" : "http"}://${tcp}/${API_VERSION}`;
  };
  const tlsOptions = () => {
    if (!endpoint.tls) return undefined;
    tls ??= { ca: readFileSync(endpoint.tls.ca, "utf8"), cert: readFileSync(endpoint.tls.cert, "utf8"), key: readFileSync(endpoint.tls.key, "utf8") };
    return { ca: tls.ca, cert: tls.cert, key: tls.key };
  };
  const client: EngineClient = {
    endpoint: host,
    async call(method, path, body, headers = {}) {
      if (unix !== null && !existsSync(unix)) throw new RuntimeError(`the Docker Engine socket ${unix} does not exist: is Docker installed and running?`);
      let res: Response;
      try {
        res = await fetch(`${base()}${path}`, {
          method,
          ...(unix !== null ? { unix } : {}),
          ...(tlsOptions() ? { tls: tlsOptions() } : {}),
          headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        } as RequestInit);
      } catch (e) {
        throw new RuntimeError(`could not reach the Docker Engine at ${host}: ${(e as Error).message}`);
      }
      if (res.status >= 400) {
        const text = await res.text();
        let msg = text;
        try {
          msg = (JSON.parse(text) as { message?: string }).message ?? text;
        } catch {
          // Not JSON: keep the text.
        }
        throw new RuntimeError(`Docker Engine ${method} ${path}: HTTP ${res.status}: ${msg.slice(0, 500)}`);
      }
      return res;
    },
    async json<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T> {
      return (await (await client.call(method, path, body, headers)).json()) as T;
    },
  };
  return client;
}

/**
 * Split the engine's multiplexed log stream (8-byte frame headers: stream, 0, 0, 0, length BE) into
 * lines; a TTY-less container's stdout and stderr each keep their unfinished line until it ends.
 * Resolves when the stream ends or `signal` aborts.
 */
export async function followLogs(res: Response, signal: AbortSignal, emit: (stream: OutputStream, line: string) => void): Promise<void> {
  const reader = res.body!.getReader();
  let buf = new Uint8Array(0);
  const partial: Record<"stdout" | "stderr", string> = { stdout: "", stderr: "" };
  const decoder = new TextDecoder();
  signal.addEventListener("abort", () => void reader.cancel().catch(() => undefined), { once: true });
  while (!signal.aborted) {
    const { done, value } = await reader.read();
    if (done) break;
    const next = new Uint8Array(buf.length + value.length);
    next.set(buf);
    next.set(value, buf.length);
    buf = next;
    while (buf.length >= 8) {
      const len = new DataView(buf.buffer, buf.byteOffset).getUint32(4);
      if (buf.length < 8 + len) break;
      const stream = buf[0] === 2 ? "stderr" : "stdout";
      const text = partial[stream] + decoder.decode(buf.subarray(8, 8 + len));
      const parts = text.split("\n");
      partial[stream] = parts.pop() ?? "";
      for (const line of parts) emit(stream, line.replace(/\r$/, ""));
      buf = buf.subarray(8 + len);
    }
  }
  void reader.cancel().catch(() => undefined); // aborted before the listener was added: the connection still goes
}

/**
 * The engine's event stream (`GET /events`, JSON lines) filtered by `filters`, until `signal`
 * aborts. `onOpen` runs once the engine answered, so a caller can start what it wants to see the
 * events of without missing the first ones.
 */
export async function followEvents(client: EngineClient, filters: Record<string, string[]>, signal: AbortSignal, emit: (event: Record<string, unknown>) => void, onOpen?: () => void): Promise<void> {
  const res = await client.call("GET", `/events?filters=${encodeURIComponent(JSON.stringify(filters))}`);
  onOpen?.();
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  signal.addEventListener("abort", () => void reader.cancel().catch(() => undefined), { once: true });
  while (!signal.aborted) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = text.indexOf("\n")) >= 0) {
      const line = text.slice(0, nl).trim();
      text = text.slice(nl + 1);
      if (!line) continue;
      try {
        emit(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // a torn line: skipped
      }
    }
  }
  void reader.cancel().catch(() => undefined);
}
