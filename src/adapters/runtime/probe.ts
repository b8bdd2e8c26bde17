/**
 * Health probes: an HTTP GET of a path that answers 2xx within a deadline, or, with no path, the
 * port accepting a TCP connection. The rollout probes new replicas before the ingress switches to
 * them; the runtime uses the TCP form to tell `starting` from `running`.
 */
import { connect } from "node:net";

export interface ProbeTarget {
  host: string;
  port: number;
  /** HTTP path (starting with /); null or omitted: TCP connect only. */
  path?: string | null;
  /** Sent as Host (some apps route by it). */
  hostHeader?: string;
}

export interface ProbeResult {
  ok: boolean;
  /** HTTP status when one came back. */
  status: number | null;
  /** Why it failed, for a timeline or a log line. */
  error: string | null;
  ms: number;
}

/** Whether the port accepts a TCP connection within `timeoutMs`. */
export function tcpAccepts(host: string, port: number, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const sock = connect({ host, port });
    const done = (err: string | null) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(err);
    };
    const timer = setTimeout(() => done(`no connection within ${timeoutMs} ms`), timeoutMs);
    sock.once("connect", () => done(null));
    sock.once("error", (e) => done(e.message));
  });
}

/** One probe, bounded by `timeoutMs`. */
export async function probeOnce(t: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  if (!t.path) {
    const err = await tcpAccepts(t.host, t.port, timeoutMs);
    return { ok: err === null, status: null, error: err, ms: ms() };
  }
  const host = t.host.includes(":") ? `[${t.host}]` : t.host;
  try {
    const res = await fetch(`http://${host}:${t.port}${t.path}`, {
      headers: t.hostHeader ? { host: t.hostHeader } : {},
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.arrayBuffer().catch(() => undefined);
    const ok = res.status >= 200 && res.status < 300;
    return { ok, status: res.status, error: ok ? null : `${t.path} answered HTTP ${res.status}`, ms: ms() };
  } catch (e) {
    const err = e as Error;
    return { ok: false, status: null, error: err.name === "TimeoutError" ? `${t.path} did not answer within ${timeoutMs} ms` : err.message, ms: ms() };
  }
}

/**
 * Probe until one succeeds or `deadlineMs` passes (each attempt bounded by what is left, at most
 * `attemptMs`); the last result says why it failed.
 */
export async function waitHealthy(t: ProbeTarget, opts: { deadlineMs: number; intervalMs?: number; attemptMs?: number; abort?: AbortSignal }): Promise<ProbeResult> {
  const end = Date.now() + opts.deadlineMs;
  let last: ProbeResult = { ok: false, status: null, error: "not probed", ms: 0 };
  for (;;) {
    const left = end - Date.now();
    if (left <= 0 || opts.abort?.aborted) return last;
    const attempt = await probeOnce(t, Math.max(1, Math.min(left, opts.attemptMs ?? 2000)));
    if (attempt.ok) return attempt;
    // An attempt cut short by the deadline says less than an earlier answer (an HTTP 500): keep that.
    if (!(attempt.status === null && last.status !== null && left < (opts.attemptMs ?? 2000))) last = attempt;
    await Bun.sleep(Math.min(opts.intervalMs ?? 200, Math.max(0, end - Date.now())));
  }
}
