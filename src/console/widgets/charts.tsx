/**
 * Charts drawn as SVG (no library, nothing from a CDN, nothing inline that the console's CSP
 * refuses): a line chart with one line per series and an optional min–max band, and stacked bars
 * for the log level histogram. Each chart is an image with a text summary for screen readers.
 */
import { clock } from "./obs";

const W = 640;
const PAD = { left: 56, right: 12, top: 10, bottom: 26 };
/** Series colours, distinguishable in both themes. */
export const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];

/** Tidy tick values covering [lo, hi]. */
function ticks(lo: number, hi: number, count = 4): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** A number for an axis: compact (1.2k, 3.4M), up to 3 significant digits. */
export function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toPrecision(3)}G`;
  if (a >= 1e6) return `${(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${(v / 1e3).toPrecision(3)}k`;
  if (a === 0) return "0";
  return String(Number(v.toPrecision(3)));
}

/** Horizontal grid lines and their labels at the value ticks. */
function ValueAxis(props: { ticks: number[]; y(v: number): number }) {
  return (
    <>
      <g class="grid">
        {props.ticks.map((v) => (
          <line key={v} x1={PAD.left} x2={W - PAD.right} y1={props.y(v)} y2={props.y(v)} />
        ))}
      </g>
      <g class="axis">
        {props.ticks.map((v) => (
          <text key={v} x={PAD.left - 6} y={props.y(v) + 4} text-anchor="end">
            {compact(v)}
          </text>
        ))}
      </g>
    </>
  );
}

function TimeAxis(props: { from: number; to: number; x(t: number): number; y: number }) {
  const withDate = props.to - props.from > 36 * 3_600_000;
  const marks = Array.from({ length: 5 }, (_, i) => props.from + ((props.to - props.from) * i) / 4);
  return (
    <g class="axis">
      {marks.map((t, i) => (
        <text key={i} x={props.x(t)} y={props.y + 18} text-anchor={i === 0 ? "start" : i === 4 ? "end" : "middle"}>
          {clock(t, withDate)}
        </text>
      ))}
    </g>
  );
}

export interface LinePoint {
  t: number;
  value: number | null;
  min?: number | null;
  max?: number | null;
}

export interface LineSeries {
  name: string;
  points: LinePoint[];
}

/** A line is broken where two points with values are further apart than this (a service that stopped reporting). */
const STALE_MS = 5 * 60_000;

/**
 * One line per series over [from, to]; a shaded band between min and max where the points carry
 * them. Empty buckets between points closer than five minutes are bridged (senders report every
 * 10–60 s, buckets can be shorter), longer silences break the line.
 */
export function LineChart(props: { title: string; series: LineSeries[]; from: number; to: number; height?: number; zeroBased?: boolean }) {
  const H = props.height ?? 200;
  const values: number[] = [];
  for (const s of props.series)
    for (const p of s.points) {
      if (p.value !== null) values.push(p.value);
      if (p.min !== null && p.min !== undefined) values.push(p.min);
      if (p.max !== null && p.max !== undefined) values.push(p.max);
    }
  let lo = values.length ? Math.min(...values) : 0;
  let hi = values.length ? Math.max(...values) : 1;
  if (props.zeroBased && lo > 0) lo = 0;
  if (hi === lo) {
    hi = hi + (Math.abs(hi) || 1) * 0.5;
    lo = lo - (Math.abs(lo) || 1) * 0.5;
  }
  const yt = ticks(lo, hi);
  lo = Math.min(lo, yt[0]);
  hi = Math.max(hi, yt[yt.length - 1]);
  const x = (t: number) => PAD.left + ((t - props.from) / Math.max(1, props.to - props.from)) * (W - PAD.left - PAD.right);
  const y = (v: number) => PAD.top + (1 - (v - lo) / (hi - lo)) * (H - PAD.top - PAD.bottom);
  const last = props.series.map((s) => [...s.points].reverse().find((p) => p.value !== null)?.value ?? null);
  const summary = props.series.map((s, i) => `${s.name}: ${last[i] === null ? "no data" : `latest ${compact(last[i]!)}`}`).join("; ");
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${props.title}. ${summary || "No data in this range."}`}>
        <title>{props.title}</title>
        <ValueAxis ticks={yt} y={y} />
        <TimeAxis from={props.from} to={props.to} x={x} y={H - PAD.bottom} />
        {props.series.map((s, i) => {
          const color = PALETTE[i % PALETTE.length];
          const segments: LinePoint[][] = [];
          let cur: LinePoint[] = [];
          for (const p of s.points) {
            if (p.value === null) continue;
            if (cur.length && p.t - cur[cur.length - 1].t > STALE_MS) {
              segments.push(cur);
              cur = [];
            }
            cur.push(p);
          }
          if (cur.length) segments.push(cur);
          return (
            <g key={s.name} class="series" data-series={s.name}>
              {segments.map((seg, k) => {
                const banded = seg.filter((p) => p.min !== null && p.min !== undefined && p.max !== null && p.max !== undefined);
                return (
                  <g key={k}>
                    {banded.length > 1 && (
                      <polygon
                        class="band"
                        fill={color}
                        points={[...banded.map((p) => `${x(p.t).toFixed(1)},${y(p.max!).toFixed(1)}`), ...[...banded].reverse().map((p) => `${x(p.t).toFixed(1)},${y(p.min!).toFixed(1)}`)].join(" ")}
                      />
                    )}
                    {seg.length === 1 ? (
                      <circle cx={x(seg[0].t)} cy={y(seg[0].value!)} r="3" fill={color} />
                    ) : (
                      <polyline class="line" stroke={color} points={seg.map((p) => `${x(p.t).toFixed(1)},${y(p.value!).toFixed(1)}`).join(" ")} />
                    )}
                  </g>
                );
              })}
            </g>
          );
        })}
      </svg>
      {props.series.length > 0 && (
        <figcaption class="legend">
          {props.series.map((s, i) => (
            <span key={s.name}>
              <svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">
                <rect width="10" height="10" rx="2" fill={PALETTE[i % PALETTE.length]} />
              </svg>
              {s.name}
              {last[i] !== null && <span class="muted"> {compact(last[i]!)}</span>}
            </span>
          ))}
        </figcaption>
      )}
    </figure>
  );
}

export interface Bar {
  t: number;
  counts: Record<string, number>;
}

/** Stacked bars per time bucket, one colour per key in `order` (`lvl-<key>` classes). */
export function StackedBars(props: { title: string; bars: Bar[]; order: readonly string[]; bucketMs: number; from: number; to: number; height?: number }) {
  const H = props.height ?? 120;
  const totals = props.bars.map((b) => props.order.reduce((a, k) => a + (b.counts[k] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const yt = ticks(0, max, 2);
  const top = Math.max(max, yt[yt.length - 1]);
  const span = Math.max(1, props.to - props.from);
  const x = (t: number) => PAD.left + ((t - props.from) / span) * (W - PAD.left - PAD.right);
  const y = (v: number) => PAD.top + (1 - v / top) * (H - PAD.top - PAD.bottom);
  const bw = Math.max(1, ((W - PAD.left - PAD.right) * props.bucketMs) / span - 1);
  const total = totals.reduce((a, n) => a + n, 0);
  const byKey = props.order.map((k) => [k, props.bars.reduce((a, b) => a + (b.counts[k] ?? 0), 0)] as const).filter(([, n]) => n > 0);
  return (
    <figure class="chart histogram">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${props.title}: ${total} lines${byKey.length ? ` (${byKey.map(([k, n]) => `${k} ${n}`).join(", ")})` : ""}.`}>
        <title>{props.title}</title>
        <ValueAxis ticks={yt} y={y} />
        <TimeAxis from={props.from} to={props.to} x={x} y={H - PAD.bottom} />
        {props.bars.map((b) => {
          let acc = 0;
          return (
            <g key={b.t}>
              {[...props.order].reverse().map((k) => {
                const n = b.counts[k] ?? 0;
                if (n === 0) return null;
                const y0 = y(acc);
                acc += n;
                return <rect key={k} class={`bar lvl-${k}`} x={x(b.t)} y={y(acc)} width={bw} height={Math.max(0.5, y0 - y(acc))} />;
              })}
            </g>
          );
        })}
      </svg>
      <figcaption class="legend">
        {byKey.length === 0 ? (
          <span class="muted">No lines in this range.</span>
        ) : (
          byKey.map(([k, n]) => (
            <span key={k}>
              <svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">
                <rect class={`lvl-${k}`} width="10" height="10" rx="2" />
              </svg>
              {k} <span class="muted">{n}</span>
            </span>
          ))
        )}
      </figcaption>
    </figure>
  );
}
