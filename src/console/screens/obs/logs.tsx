/**
 * A project's Logs page: filters (text, service, level, environment, time range) kept in the
 * query string, a histogram of lines per level over the range, the newest lines first (each
 * opens to show its details), and a live tail that polls for newer lines every two seconds.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError } from "../../api";
import { Alert, Shown } from "../../ui";
import type { SectionProps } from "../../frame";
import { StackedBars } from "../../widgets/charts";
import { EnvironmentSelect, LEVEL_ORDER, ObsSearch, QuerySelect, RANGES, RangeSelect, ServiceSelect, levelFamily, obsQuery, preciseTime, rangeMs, setPageQuery, useObsServices, type LogEntry, type LogVolume } from "../../widgets/obs";

const LEVELS: ReadonlyArray<readonly [string, string]> = [
  ["", "All levels"],
  ["info,warn,error,fatal", "Info and above"],
  ["warn,error,fatal", "Warnings and above"],
  ["error,fatal", "Errors and above"],
  ["debug", "Debug only"],
  ["trace", "Trace only"],
];
const TAIL_MS = 2000;
const MAX_LINES = 1000;

const keyOf = (e: LogEntry) => `${e.timestamp}\u0000${e.service}\u0000${e.target}\u0000${e.message}`;

export function LogsPage(props: SectionProps) {
  const slug = props.project.slug;
  const q = props.query;
  const text = q.get("q") ?? "";
  const service = q.get("service") ?? "";
  const level = q.get("level") ?? "";
  const environment = q.get("environment") ?? "";
  const range = q.get("range") ?? "1h";
  const tail = q.get("tail") === "1";
  const services = useObsServices(slug, environment);
  const [entries, setEntries] = useState<LogEntry[] | null>(null);
  const [volume, setVolume] = useState<{ data: LogVolume; from: number; to: number } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const newest = useRef<string | null>(null);

  const filters = { q: text, service, level, environment };
  const loadVolume = () => {
    const to = Date.now();
    const from = to - rangeMs(range);
    return api<LogVolume>("GET", `/api/v1/obs/logs/volume?${obsQuery(slug, { service, level, environment, from: range })}`).then((data) => setVolume({ data, from, to }));
  };

  useEffect(() => {
    let stop = false;
    setEntries(null);
    setError(null);
    newest.current = null;
    api<LogEntry[]>("GET", `/api/v1/obs/logs?${obsQuery(slug, { ...filters, from: range, limit: 200 })}`)
      .then((rows) => {
        if (stop) return;
        setEntries(rows);
        newest.current = rows[0]?.timestamp ?? null;
      })
      .catch((e) => !stop && setError(e instanceof ApiError ? e.message : "Could not load the logs."));
    loadVolume().catch(() => undefined);
    return () => {
      stop = true;
    };
  }, [slug, text, service, level, environment, range]);

  useEffect(() => {
    if (!tail) return;
    let stop = false;
    let polls = 0;
    const poll = async () => {
      const from = newest.current ?? range;
      try {
        const rows = await api<LogEntry[]>("GET", `/api/v1/obs/logs?${obsQuery(slug, { ...filters, from, limit: 500 })}`);
        if (stop || rows.length === 0) return;
        setEntries((prior) => {
          const seen = new Set((prior ?? []).map(keyOf));
          const fresh = rows.filter((r) => !seen.has(keyOf(r)));
          return fresh.length === 0 ? prior : [...fresh, ...(prior ?? [])].slice(0, MAX_LINES);
        });
        newest.current = rows[0].timestamp;
        if (++polls % 5 === 0) await loadVolume();
      } catch (e) {
        if (!stop) setError(e instanceof ApiError ? e.message : "The live tail lost the server; it keeps trying.");
      }
    };
    const timer = setInterval(() => void poll(), TAIL_MS);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, [tail, slug, text, service, level, environment, range]);

  const set = (changes: Record<string, string | null>) => setPageQuery(q, changes);
  return (
    <section aria-labelledby="logs-title" class="obs">
      <h2 id="logs-title">Logs</h2>
      <ObsSearch
        id="logs-q"
        label="Text"
        placeholder="Substring of the message or target"
        text={text}
        onSearch={(v) => set({ q: v })}
        buttons={
          <button type="button" aria-pressed={tail} class={tail ? "live on" : "live"} onClick={() => set({ tail: tail ? null : "1" })}>
            {tail ? "Stop live tail" : "Live tail"}
          </button>
        }
      >
        <ServiceSelect id="logs-service" services={services} value={service} onChange={(v) => set({ service: v })} />
        <QuerySelect id="logs-level" label="Level" value={level} options={LEVELS} onChange={(v) => set({ level: v || null })} />
        <EnvironmentSelect id="logs-env" environments={props.project.environments} value={environment} onChange={(v) => set({ environment: v })} />
        <RangeSelect id="logs-range" value={range} onChange={(v) => set({ range: v })} />
      </ObsSearch>
      {volume && (
        <StackedBars
          title={`Lines per level, last ${RANGES.find(([v]) => v === range)?.[1] ?? range}${text ? " (all lines: the text filter does not apply here)" : ""}`}
          bars={volume.data.buckets.map((b) => ({ t: Date.parse(b.t), counts: b.counts }))}
          order={LEVEL_ORDER}
          bucketMs={volume.data.bucket_seconds * 1000}
          from={volume.from}
          to={volume.to}
        />
      )}
      {error && <Alert>{error}</Alert>}
      {tail && (
        <p class="muted live-note" role="status">
          Live: new lines appear at the top every {TAIL_MS / 1000} s.
        </p>
      )}
      {!entries && !error && <p aria-busy="true">Loading logs…</p>}
      {entries && entries.length === 0 && <p class="muted">No lines match in this range.</p>}
      {entries && entries.length > 0 && (
        <ol class="log-lines" aria-label="Log lines, newest first">
          {entries.map((e) => (
            <li key={keyOf(e)}>
              <details>
                <summary>
                  <time dateTime={e.timestamp}>{preciseTime(e.timestamp)}</time>
                  <span class={`level lvl-text-${levelFamily(e.level)}`}>{e.level}</span>
                  <span class="svc">{e.service}</span>
                  {/* Which environment and which replica (or node/replica/task) wrote it: identical traces from production and staging told apart. */}
                  <span class="where" title={e.host ? `${e.environment}, ${e.host}` : e.environment}>
                    {e.environment}
                    {e.host && e.host !== "ops" ? ` · ${e.host}` : ""}
                  </span>
                  <span class="msg">
                    <Shown text={e.message} />
                  </span>
                </summary>
                <dl class="facts">
                  <dt>Target</dt>
                  <dd>
                    <code>{e.target || "—"}</code>
                  </dd>
                  <dt>Environment</dt>
                  <dd>{e.environment}</dd>
                  {e.host && (
                    <>
                      <dt>Host</dt>
                      <dd>{e.host}</dd>
                    </>
                  )}
                  {(e.method || e.route || e.status) && (
                    <>
                      <dt>HTTP</dt>
                      <dd>{[e.method, e.route, e.status].filter(Boolean).join(" ")}</dd>
                    </>
                  )}
                  {e.client && (
                    <>
                      <dt>Client</dt>
                      <dd>{e.client}</dd>
                    </>
                  )}
                  {e.span && (
                    <>
                      <dt>Span</dt>
                      <dd>
                        <code>{e.span}</code>
                      </dd>
                    </>
                  )}
                  <dt>Fingerprint</dt>
                  <dd>
                    <code>{e.fingerprint}</code>
                  </dd>
                </dl>
              </details>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
