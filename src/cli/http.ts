/**
 * The client's HTTP calls: one place that turns "server unreachable", "token refused" and
 * "not allowed" into clear messages and the shared exit codes (EXIT in src/commands/types.ts).
 */
import { EXIT } from "../commands/types";
import { VERSION } from "../version";

/** An error a client command reports as one line, exiting with `exit`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exit: number,
  ) {
    super(message);
    this.name = "CliError";
  }
}

export const USER_AGENT = `ops-cli/${VERSION} (${process.platform}-${process.arch})`;

export interface ApiResult<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

/** fetch with the server's URL in the error when it cannot be reached. */
export async function send(server: string, path: string, init: RequestInit & { token?: string | null } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("user-agent", USER_AGENT);
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  try {
    return await fetch(server + path, { ...init, headers, redirect: "follow" });
  } catch (e) {
    const cause = (e as { code?: string; message?: string })?.code ?? (e as Error)?.message ?? String(e);
    throw new CliError(`cannot reach the ops server at ${server} (${cause}). Check the URL and your network.`, EXIT.unreachable);
  }
}

function messageOf(body: unknown, fallback: string): string {
  if (body && typeof body === "object" && "message" in body && typeof (body as { message: unknown }).message === "string") return (body as { message: string }).message;
  return fallback;
}

/**
 * A JSON API call with the token. 401 → "token refused" (exit 3); 403 → denied (exit 5); other
 * errors → the server's message (exit 1). `allow` lists statuses the caller handles itself.
 */
export async function api<T = any>(server: string, token: string | null, method: string, path: string, body?: unknown, allow: number[] = []): Promise<ApiResult<T>> {
  const init: RequestInit & { token?: string | null } = { method, token, headers: { accept: "application/json" } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { accept: "application/json", "content-type": "application/json" };
  }
  const res = await send(server, path, init);
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get("content-type") ?? "").includes("json") && text !== "") {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (res.ok || allow.includes(res.status)) return { status: res.status, body: parsed as T, headers: res.headers };
  if (res.status === 401) {
    throw new CliError(`the server at ${server} refused the token: it is expired, revoked or unknown. Run 'ops login' to sign in again.`, EXIT.auth);
  }
  if (res.status === 403) throw new CliError(messageOf(parsed, "your access does not allow this."), EXIT.denied);
  if (res.status >= 500) throw new CliError(`the server at ${server} failed (${res.status}): ${messageOf(parsed, "no details")}`, EXIT.failure);
  throw new CliError(messageOf(parsed, `the server answered ${res.status}.`), EXIT.failure);
}
