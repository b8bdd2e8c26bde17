/**
 * What the Logs, Traces and Metrics pages share: the shapes of the observability API's answers,
 * filters kept in the page's query string (so a view can be linked), the time ranges offered,
 * and time formatting for axes.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { navigate } from "../ui";
import { SelectField, type Choice } from "./select-field";

export interface LogEntry {
  client?: string | null;
  environment: string;
  fingerprint?: string | null;
  host: string;
  level: string;
  message: string;
  method?: string | null;
  project: string;
  route?: string | null;
  service: string;
  span?: string | null;
  status?: string | null;
  target: string;
  timestamp: string;
}

export interface LogVolume {
  bucket_seconds: number;
  buckets: Array<{ t: string; counts: Record<string, number> }>;
}

export interface SpanEntry {
  duration_ms: number;
  environment: string;
  http_status?: string | null;
  kind?: string | null;
  method?: string | null;
  name: string;
  parent_span_id?: string | null;
  project: string;
  route?: string | null;
  service: string;
  span_id: string;
  status?: string | null;
  timestamp: string;
  trace_id: string;
}

export interface MetricName {
  kind: string;
  name: string;
}

export interface SeriesResponse {
  bucket_seconds: number;
  kind: string;
  name: string;
  series: Array<{ service: string; points: Array<{ t: string; value?: number | null; min?: number | null; max?: number | null }> }>;
  source: string;
}

export const RANGES = [
  ["15m", "15 minutes"],
  ["1h", "1 hour"],
  ["6h", "6 hours"],
  ["24h", "24 hours"],
  ["7d", "7 days"],
  ["14d", "14 days"],
] as const;

const RANGE_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a relative range such as `15m`, `24h`, `7d`. */
export function rangeMs(range: string): number {
  const m = /^(\d+)([mhd])$/.exec(range);
  return m ? Number(m[1]) * RANGE_MS[m[2]] : 3_600_000;
}

/** The API query string for this project (and the given parameters, empty ones left out). */
export function obsQuery(project: string, params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams({ project });
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  return q.toString();
}

/** Replace some of the page's query parameters (empty values are removed) and navigate there. */
export function setPageQuery(current: URLSearchParams, changes: Record<string, string | null>, path = location.pathname): void {
  const q = new URLSearchParams(current);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === "") q.delete(k);
    else q.set(k, v);
  }
  const text = q.toString();
  navigate(text ? `${path}?${text}` : path);
}

/** A time for an axis or a row: time of day for a short range, with the date for a longer one. */
export function clock(ms: number, withDate: boolean): string {
  const d = new Date(ms);
  const hm = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", hour12: false });
  return withDate ? `${d.toLocaleDateString(undefined, { month: "short", day: "numeric" })} ${hm}` : hm;
}

/** A row's timestamp with seconds and milliseconds. */
export function preciseTime(iso: string): string {
  const d = new Date(iso);
  return `${d.toLocaleDateString(undefined, { month: "short", day: "numeric" })} ${d.toLocaleTimeString(undefined, { hour12: false })}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

/** A duration in ms, readable. */
export function duration(ms: number): string {
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** A labelled select bound to one page query parameter. */
export function QuerySelect(props: { id: string; label: string; value: string; options: ReadonlyArray<Choice>; onChange(v: string): void }) {
  return (
    <div>
      <SelectField {...props} />
    </div>
  );
}

/** The services that sent telemetry to the project (in one environment, or in any with ""); none while loading or on failure. */
export function useObsServices(slug: string, environment = ""): string[] {
  const [services, setServices] = useState<string[]>([]);
  useEffect(() => {
    api<string[]>("GET", `/api/v1/obs/services?${obsQuery(slug, { environment })}`)
      .then(setServices)
      .catch(() => setServices([]));
  }, [slug, environment]);
  return services;
}

/** The filters every observability page offers, each a select bound to its page query parameter (`service`, `environment`, `range`). */
export function ServiceSelect(props: { id: string; services: string[]; value: string; onChange(v: string | null): void }) {
  return <QuerySelect id={props.id} label="Service" value={props.value} options={[["", "All services"], ...props.services.map((s) => [s, s] as const)]} onChange={(v) => props.onChange(v || null)} />;
}

export function EnvironmentSelect(props: { id: string; environments: string[]; value: string; onChange(v: string | null): void }) {
  return <QuerySelect id={props.id} label="Environment" value={props.value} options={[["", "All"], ...props.environments.map((e) => [e, e] as const)]} onChange={(v) => props.onChange(v || null)} />;
}

export function RangeSelect(props: { id: string; value: string; onChange(v: string): void }) {
  return <QuerySelect id={props.id} label="Range" value={props.value} options={RANGES.map(([v, t]) => [v, `Last ${t}`] as const)} onChange={props.onChange} />;
}

/**
 * A search form over the page's query string: a text field applied by Search (the page's `q`),
 * then the page's own selects (`children`, applied as they change) and any further buttons.
 */
export function ObsSearch(props: { id: string; label: string; placeholder: string; text: string; onSearch(q: string | null): void; children: ComponentChildren; buttons?: ComponentChildren }) {
  const [draft, setDraft] = useState(props.text);
  useEffect(() => setDraft(props.text), [props.text]);
  return (
    <form
      class="obs-filters"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        props.onSearch(draft.trim() || null);
      }}
    >
      <div class="grow">
        <label for={props.id}>{props.label}</label>
        <input id={props.id} type="search" value={draft} placeholder={props.placeholder} onInput={(e) => setDraft((e.currentTarget as HTMLInputElement).value)} />
      </div>
      {props.children}
      <div class="buttons">
        <button type="submit" class="primary">
          Search
        </button>
        {props.buttons}
      </div>
    </form>
  );
}

/** Level names in display order (most severe first) with the class that colours them. */
export const LEVEL_ORDER = ["fatal", "error", "warn", "info", "debug", "trace", "unspecified"] as const;

/** The family of a level text as the API shows it (`warning` → warn …). */
export function levelFamily(level: string): string {
  const l = level.toLowerCase();
  if (l.startsWith("fatal") || l === "critical" || l === "crit" || l === "panic" || l === "emergency" || l === "alert") return "fatal";
  if (l.startsWith("err") || l === "severe") return "error";
  if (l.startsWith("warn")) return "warn";
  if (l.startsWith("info") || l === "notice") return "info";
  if (l.startsWith("debug") || l === "fine") return "debug";
  if (l.startsWith("trace") || l === "finest") return "trace";
  return "unspecified";
}
