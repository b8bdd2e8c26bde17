/**
 * Finding the ops API from what a person typed after `--server` (issue 27): `127.0.0.1:8080` with
 * no scheme, the ingress's port, or a URL copied with `/api/v1` on it. The server is asked for
 * `GET /health` ({status: "ok", version}); what answers instead says what was reached
 * (docs/decisions/0362).
 */
import { EXIT } from "../commands/types";
import { CliError, USER_AGENT } from "./http";

export interface FoundServer {
  server: string;
  /** What was changed from the input, one sentence each (printed on stderr). */
  notes: string[];
}

type Probe = { kind: "ops"; version: string } | { kind: "ingress" } | { kind: "other"; status: number } | { kind: "unreachable"; cause: string };

async function probe(base: string, timeoutMs: number): Promise<Probe> {
  let res: Response;
  try {
    res = await fetch(`${base}/health`, { headers: { accept: "application/json", "user-agent": USER_AGENT }, redirect: "follow", signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    return { kind: "unreachable", cause: (e as { code?: string })?.code ?? (e as Error)?.message ?? String(e) };
  }
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { status?: unknown; version?: unknown };
    if (res.ok && body.status === "ok" && typeof body.version === "string") return { kind: "ops", version: body.version };
  } catch {
    // not JSON: look at what it is below
  }
  if (text.includes("<footer>ops ingress</footer>")) return { kind: "ingress" };
  return { kind: "other", status: res.status };
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/i;

/** The API's base URL for `raw`, checked against the server; CliError (exit 2 or 4) otherwise. */
export async function findServer(raw: string, timeoutMs = 5000): Promise<FoundServer> {
  const notes: string[] = [];
  let input = raw.trim().replace(/\/+$/, "");
  const explicit = /^https?:\/\//i.test(input);
  const hostPart = input.replace(/^https?:\/\//i, "").split("/")[0];
  let url: URL;
  try {
    url = new URL(explicit ? input : `http://${input}`);
  } catch {
    throw new CliError(`"${raw}" is not a server URL.`, EXIT.usage);
  }
  const apiPath = /\/api(\/v1)?(\/.*)?$/.exec(url.pathname);
  if (apiPath) {
    notes.push(`using ${url.host}${url.pathname.slice(0, apiPath.index) || ""} as the server: its URL is the base, without ${apiPath[0]}.`);
    url.pathname = url.pathname.slice(0, apiPath.index);
  }
  const path = url.pathname.replace(/\/+$/, "");
  const schemes = explicit ? [url.protocol.replace(":", "")] : LOOPBACK.test(hostPart) ? ["http", "https"] : ["https", "http"];
  const tried: string[] = [];
  for (const scheme of schemes) {
    const base = `${scheme}://${url.host}${path}`;
    const found = await probe(base, timeoutMs);
    if (found.kind === "ops") {
      if (!explicit && tried.length > 0) notes.push(`${tried[0]} did not answer; ${base} did.`);
      return { server: base, notes };
    }
    if (found.kind === "ingress") {
      throw new CliError(`${base} is the ops ingress, which serves your apps, not the API. Use the address 'ops serve' listens on (OPS_LISTEN, default 127.0.0.1:8080, or OPS_PUBLIC_URL).`, EXIT.usage);
    }
    if (found.kind === "other") {
      throw new CliError(`${base} answered GET /health with ${found.status} but is not an ops server. Use the address 'ops serve' prints as "ops is serving".`, EXIT.usage);
    }
    tried.push(base);
    if (explicit) {
      // Say so when the other scheme would have worked (https to a plain-HTTP server fails with EPROTO).
      const other = `${scheme === "https" ? "http" : "https"}://${url.host}${path}`;
      if ((await probe(other, timeoutMs)).kind === "ops") throw new CliError(`${base} did not answer (${found.cause}), but ${other} does: use --server ${other}.`, EXIT.usage);
      throw new CliError(`cannot reach the ops server at ${base} (${found.cause}). Check the URL and your network.`, EXIT.unreachable);
    }
  }
  throw new CliError(`cannot reach an ops server at ${tried.join(" or ")}. Check the address and that 'ops serve' runs.`, EXIT.unreachable);
}
