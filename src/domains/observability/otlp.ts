/**
 * OTLP/HTTP export requests (`POST /otlp/v1/{logs,traces,metrics}`): content negotiation, body
 * limits, handing the body to the writer thread, the partial-success answer in the request's own
 * encoding, and the OTLP failure body (`google.rpc.Status`) for errors on these routes.
 *
 * Overload never grows memory without bound (intake.ts): a body is at most
 * `OPS_OTLP_MAX_DECODED_BYTES` on the wire and once decompressed (counted as it inflates; 413 past
 * either), at most a few bodies inflate and a bounded number are read at once, and the writer's
 * backlog is bounded in decompressed bytes (writer.ts), one credential holding at most half of
 * each of those bounds; past them the answer is 429 with `Retry-After`, which exporters retry. An
 * OTLP-JSON body whose shape would make parsing it costly is refused while it streams (400).
 */
import type { Core, ErrorStyle } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { evaluate } from "../../core/authz/effective";
import { OpsError, type NormalisedError } from "../../core/errors";
import type { Signal } from "./otlp-model";
import { encodePartialSuccessProto, encodeStatusProto } from "./proto-wire";
import { callerKey, readExportBody } from "./intake";
import { writerOf } from "./writer";

type Encoding = "json" | "proto";

const REJECTED_FIELD: Record<Signal, string> = { logs: "rejectedLogRecords", traces: "rejectedSpans", metrics: "rejectedDataPoints" };

function encodingOf(request: Request): Encoding | null {
  const ct = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (ct === "application/x-protobuf" || ct === "application/protobuf") return "proto";
  if (ct === "application/json") return "json";
  return null;
}

/**
 * Handle one export request for `signal`; `auth.project` is the project it goes to. The body is
 * read (and inflated) here under the intake's bounds and handed to the writer thread, which
 * decodes, scrubs and writes it off this thread.
 */
export async function handleExport(core: Core, signal: Signal, request: Request, auth: AuthContext): Promise<Response> {
  const project = auth.project!;
  const grants = core.access.grants(auth.principal);
  // Environment policies: the project's environments where this caller may not send (any other
  // environment has no policy, so the project-level permission the macro checked holds there).
  const denied = project.environments.filter((environment) => !evaluate(auth.principal, grants, { kind: "project", projectId: project.id, environment }).permissions.has("obs.ingest"));
  return exportInto(core, signal, request, { caller: callerKey(auth.principal), projectId: project.id, denied, identity: null });
}

/** Where an export goes and as whom: what `exportInto` needs besides the request. */
export interface ExportTarget {
  /** The sender's share of the intake's bounds (`callerKey`, or a replica credential's id). */
  caller: string;
  projectId: string;
  /** Environments it may not send to. */
  denied: string[];
  /** A replica credential's service and environment: every resource is stored as these (decision 0651). */
  identity: { service: string; environment: string } | null;
}

/** Read, bound and write one export request into `target`; the OTLP answer. */
export async function exportInto(core: Core, signal: Signal, request: Request, target: ExportTarget): Promise<Response> {
  const encoding = encodingOf(request);
  if (!encoding) throw new OpsError("unsupported_media_type", "Send OTLP as application/x-protobuf or application/json.");
  const ce = (request.headers.get("content-encoding") ?? "identity").trim().toLowerCase();
  if (ce !== "gzip" && ce !== "identity" && ce !== "") throw new OpsError("unsupported_media_type", `Content-Encoding ${ce} is not supported; use gzip or none.`);
  const writer = writerOf(core);
  const body = await readExportBody(core, request, { gzip: ce === "gzip", json: encoding === "json", caller: target.caller, full: () => writer.full() });
  const now = core.clock.now();
  const outcome = await writer.submitExport(
    {
      signal,
      encoding,
      body,
      projectId: target.projectId,
      now,
      oldestMs: now - core.config.logRetentionDays * 86_400_000,
      retentionDays: core.config.logRetentionDays,
      denied: target.denied,
      ...(target.identity ? { identity: target.identity } : {}),
    },
    target.caller,
  );
  if (!outcome.ok) throw new OpsError("bad_request", outcome.message);
  return exportResponse(signal, encoding, outcome.rejected, outcome.message);
}

/** `Export*ServiceResponse`: empty, or the partial success, in the request's encoding. */
function exportResponse(signal: Signal, encoding: Encoding, rejected: number, message: string): Response {
  if (encoding === "proto") {
    return new Response(encodePartialSuccessProto(rejected, message) as Uint8Array<ArrayBuffer>, { status: 200, headers: { "content-type": "application/x-protobuf" } });
  }
  const body = rejected > 0 || message !== "" ? { partialSuccess: { [REJECTED_FIELD[signal]]: String(rejected), errorMessage: message } } : {};
  return new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
}

/** google.rpc.Code for an HTTP status. */
function rpcCode(status: number): number {
  switch (status) {
    case 400:
    case 415:
    case 422:
      return 3; // INVALID_ARGUMENT
    case 401:
      return 16; // UNAUTHENTICATED
    case 403:
      return 7; // PERMISSION_DENIED
    case 404:
      return 5; // NOT_FOUND
    case 413:
    case 429:
      return 8; // RESOURCE_EXHAUSTED
    case 503:
      return 14; // UNAVAILABLE
    default:
      return 13; // INTERNAL
  }
}

/** Errors under `/otlp/` as OTLP specifies: a `google.rpc.Status` in the request's encoding. */
export const otlpErrorStyle: ErrorStyle = {
  prefix: "/otlp/",
  render(n: NormalisedError, request: Request): Response {
    const code = rpcCode(n.status);
    const proto = encodingOf(request) === "proto";
    const body = proto ? (encodeStatusProto(code, n.message) as Uint8Array<ArrayBuffer>) : JSON.stringify({ code, message: n.message, details: [] });
    return new Response(body, { status: n.status, headers: { "content-type": proto ? "application/x-protobuf" : "application/json", ...n.headers } });
  },
};

/** Errors under `/api/v1/obs/`: the ops body, with the spec's `Bad token` for a 401. */
export const readsErrorStyle: ErrorStyle = {
  prefix: "/api/v1/obs/",
  render(n: NormalisedError, request: Request): Response {
    const body = { error: n.code, message: n.status === 401 ? "Bad token" : n.message, ...(n.details ? { details: n.details } : {}) };
    return new Response(request.method === "HEAD" ? null : JSON.stringify(body), { status: n.status, headers: { "content-type": "application/json", ...n.headers } });
  },
};
