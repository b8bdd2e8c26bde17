/**
 * One error class, one code→status table, one renderer. Services throw `OpsError`; the HTTP app's
 * `onError` (see `toErrorBody`) turns anything thrown into `{"error", "message", "details"?}`.
 * Protocol routes (npm, cargo, OCI, device poll) register their own renderers for their prefix,
 * but still throw the same class with the same codes.
 *
 * The public message is what a human sees; `cause` is for the log only and never reaches a body.
 */

/** Every error code ops answers with, and its HTTP status. Exhaustive: add a code here first. */
export const ERROR_STATUS = {
  bad_request: 400,
  malformed_json: 400,
  unauthorized: 401,
  invalid_credentials: 401,
  mfa_required: 401,
  invalid_code: 401,
  forbidden: 403,
  out_of_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  already_exists: 409,
  archived: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  validation_failed: 422,
  refused: 422,
  rate_limited: 429,
  internal: 500,
  bad_gateway: 502,
  sealed: 503,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorBody {
  error: string;
  message: string;
  details?: Record<string, unknown>;
}

export class OpsError extends Error {
  readonly status: number;
  /** Extra response headers (Retry-After, WWW-Authenticate …). */
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    options: { cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "OpsError";
    this.status = ERROR_STATUS[code];
    this.headers = options.headers ?? {};
  }
}

/** Shorthands for the common cases; each returns the error so callers write `throw notFound(...)`. */
export const notFound = (what: string) => new OpsError("not_found", `No such ${what}.`);
export const forbidden = (message = "Your role does not allow this.", details?: Record<string, unknown>) =>
  new OpsError("forbidden", message, details);
export const conflict = (message: string, details?: Record<string, unknown>) => new OpsError("conflict", message, details);
export const refused = (message: string, details?: Record<string, unknown>) => new OpsError("refused", message, details);
export const unauthorized = (message = "Sign in or send a valid token.") => new OpsError("unauthorized", message);
export const invalid = (field: string, message: string) =>
  new OpsError("validation_failed", `${field}: ${message}`, { fields: [{ path: field, message }] });

/** Normalised view of anything thrown, used by every renderer. */
export interface NormalisedError {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
  headers: Record<string, string>;
  /** True when the cause is internal and must be logged, never shown. */
  internal: boolean;
}

interface SqliteLikeError {
  code?: string;
  errno?: number;
  message?: string;
}

/**
 * Map anything thrown by a handler, a service, SQLite or Elysia to a public error. Unique and
 * foreign-key violations, not-found, validation and parse errors are mapped here and nowhere else.
 */
export function normaliseError(err: unknown, elysiaCode?: string | number): NormalisedError {
  // Elysia wraps whatever a body parser throws in its ParseError ("PARSE"). The kernel's own
  // parser throws OpsErrors (413 past the body limit, malformed_json), which keep their status.
  const cause = (err as { cause?: unknown } | null)?.cause;
  if (elysiaCode === "PARSE" && cause instanceof OpsError) return normaliseError(cause);
  if (err instanceof OpsError) {
    return { status: err.status, code: err.code, message: err.message, details: err.details, headers: err.headers, internal: false };
  }
  const e = err as SqliteLikeError & { name?: string; status?: number; all?: unknown; type?: string; valueError?: unknown };
  if (typeof e?.code === "string" && e.code.startsWith("SQLITE_CONSTRAINT")) {
    if (e.code === "SQLITE_CONSTRAINT_UNIQUE" || e.code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
      return { status: 409, code: "already_exists", message: "That already exists.", headers: {}, internal: false };
    }
    if (e.code === "SQLITE_CONSTRAINT_FOREIGNKEY") {
      return { status: 409, code: "conflict", message: "Something else still refers to this, or it refers to something missing.", headers: {}, internal: false };
    }
  }
  if (typeof e?.code === "string" && e.code === "SQLITE_BUSY") {
    return { status: 503, code: "unavailable", message: "The database is busy; try again.", headers: { "retry-after": "1" }, internal: true };
  }
  // A handler's answer that its own response schema refuses is the server's fault, not the caller's.
  if (elysiaCode === "VALIDATION" && e?.type === "response") {
    return { status: 500, code: "internal", message: "Something went wrong on the server; it has been logged.", headers: {}, internal: true };
  }
  switch (elysiaCode) {
    case "VALIDATION":
      return { status: 422, code: "validation_failed", message: validationMessage(err), details: { fields: validationFields(err) }, headers: {}, internal: false };
    case "PARSE":
      return { status: 400, code: "malformed_json", message: "The request body could not be parsed.", headers: {}, internal: false };
    case "NOT_FOUND":
      return { status: 404, code: "not_found", message: "No such route.", headers: {}, internal: false };
    case "INVALID_COOKIE_SIGNATURE":
      return { status: 401, code: "unauthorized", message: "Sign in again.", headers: {}, internal: false };
  }
  if (typeof elysiaCode === "number" && elysiaCode >= 400 && elysiaCode < 500) {
    const code = (Object.entries(ERROR_STATUS).find(([, s]) => s === elysiaCode)?.[0] ?? "bad_request") as ErrorCode;
    return { status: elysiaCode, code, message: e?.message || "The request was refused.", headers: {}, internal: false };
  }
  return { status: 500, code: "internal", message: "Something went wrong on the server; it has been logged.", headers: {}, internal: true };
}

interface ValueErrorLike {
  path?: string;
  message?: string;
  summary?: string;
  /** The schema that refused the value; its `error` (a parameter's own wording) wins. */
  schema?: { error?: unknown };
}

function validationFields(err: unknown): Array<{ path: string; message: string }> {
  const e = err as { all?: ValueErrorLike[]; valueError?: ValueErrorLike };
  const all = Array.isArray(e?.all) ? e.all : e?.valueError ? [e.valueError] : [];
  const seen = new Set<string>();
  const out: Array<{ path: string; message: string }> = [];
  for (const v of all) {
    const p = (v.path ?? "").replace(/^\//, "").replace(/\//g, ".") || "(body)";
    const m = typeof v.schema?.error === "string" ? v.schema.error : (v.summary ?? v.message ?? "is invalid");
    const key = `${p}|${m}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path: p, message: m });
    if (out.length >= 20) break;
  }
  return out;
}

function validationMessage(err: unknown): string {
  const fields = validationFields(err);
  if (fields.length === 0) return "The request is not valid.";
  const first = fields[0];
  const more = fields.length > 1 ? ` (and ${fields.length - 1} more)` : "";
  return `${first.path}: ${first.message}${more}`;
}

/** The ops JSON error body. */
export function toErrorBody(n: NormalisedError): ErrorBody {
  const body: ErrorBody = { error: n.code, message: n.message };
  if (n.details !== undefined) body.details = n.details;
  return body;
}
