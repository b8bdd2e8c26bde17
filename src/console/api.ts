/**
 * The console's only way to the server: the public JSON API, same origin, with the HttpOnly
 * `ops_session` cookie the sign-in route sets. Errors become `ApiError` with the server's
 * `error` code and human message.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Call the API; `fresh` skips the browser's HTTP cache (for answers the server lets it keep a while). */
export async function api<T = unknown>(method: string, path: string, body?: unknown, fresh = false): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin", ...(fresh ? { cache: "no-cache" as RequestCache } : {}) });
  } catch {
    throw new ApiError(0, "unreachable", "The server cannot be reached. Check your connection and try again.");
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!res.ok) {
    // The JSON API's error, or a registry protocol's (cargo says `errors: [{ detail }]`, npm `error`).
    const b = (parsed ?? {}) as { error?: string; message?: string; details?: Record<string, unknown>; errors?: Array<{ detail?: string; message?: string }> };
    const protocol = b.errors?.[0]?.detail ?? b.errors?.[0]?.message ?? (path.startsWith("/npm/") ? b.error : undefined);
    throw new ApiError(res.status, b.error ?? "error", b.message ?? protocol ?? `The server answered ${res.status}.`, b.details);
  }
  return parsed as T;
}

export interface Me {
  actor: string;
  display_name: string;
  kind: "person" | "machine";
  machine: boolean;
  suspended: boolean;
  mfa: boolean;
  operator_id: string;
  via: string;
  memberships: Array<{ project?: string | null; role_id: string; role_name: string; role_slug: string; fixed: boolean; permissions: string[] }>;
  policies: Array<{ project: string; environment: string; role_id: string; allowed: string[] }>;
  token_id?: string | null;
  token_project?: string | null;
  token_scopes?: string[] | null;
}

export interface Session {
  id: string;
  created_at: string;
  expires_at: string;
  ip: string;
  kind: string;
  user_agent: string;
  current: boolean;
}

export interface Token {
  id: string;
  name: string;
  kind: string;
  role_id: string;
  role_name: string;
  project?: string | null;
  created_at: string;
  expires_at?: string | null;
  last_used?: string | null;
  revoked: boolean;
  operator: string;
}

export interface DeviceGrant {
  client: string;
  client_name: string;
  created_at: string;
  default_project?: string | null;
  default_role_id?: string | null;
  expires_at: string;
  ip: string;
  requested_project?: string | null;
  roles: Array<{ id: string; name: string; mintable: boolean; project?: string | null }>;
  status: "pending" | "approved" | "denied" | "expired";
  user_code: string;
}

export interface PublicStatus {
  state: "operational" | "degraded" | "down";
  generated_at: string;
  components: Array<{ name: string; slug: string; state: "operational" | "degraded" | "down"; since: string }>;
  incidents: Array<{ name: string; slug: string; state: "operational" | "degraded" | "down"; started_at: string; resolved_at?: string | null }>;
}
