/**
 * Small shared pieces of the console: navigation, alerts, time formatting, the QR code.
 */
import type { ComponentChildren } from "preact";
import { encode } from "uqr";
import { TERMINAL_UNSAFE } from "../core/terminal-text";

/** Client-side navigation without a full page load. */
export function navigate(to: string): void {
  history.pushState(null, "", to);
  dispatchEvent(new PopStateEvent("popstate"));
}

export function Link(props: { href: string; children: ComponentChildren; class?: string; current?: boolean }) {
  return (
    <a
      href={props.href}
      class={props.class}
      aria-current={props.current ? "page" : undefined}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}

/** The header cell of a table's last column, which holds each row's buttons: named for screen readers only. */
export function ActionsHeader() {
  return (
    <th scope="col">
      <span class="visually-hidden">Actions</span>
    </th>
  );
}

export function Alert(props: { kind?: "error" | "ok" | "info"; children: ComponentChildren }) {
  const kind = props.kind ?? "error";
  return (
    <div class={`alert alert-${kind}`} role={kind === "error" ? "alert" : "status"}>
      {props.children}
    </div>
  );
}

export function when(isoText: string | null | undefined): string {
  if (!isoText) return "—";
  const d = new Date(isoText);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function ago(isoText: string, now = Date.now()): string {
  const s = Math.round((now - new Date(isoText).getTime()) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** A QR code as SVG rectangles (no script, no inline HTML), labelled for screen readers. */
export function QrCode(props: { value: string; label: string }) {
  const qr = encode(props.value, { border: 2, ecc: "M" });
  const size = qr.size;
  const cells: preact.JSX.Element[] = [];
  qr.data.forEach((row, y) =>
    row.forEach((on, x) => {
      if (on) cells.push(<rect x={x} y={y} width="1" height="1" />);
    }),
  );
  return (
    <svg class="qr" viewBox={`0 0 ${size} ${size}`} role="img" aria-label={props.label} shape-rendering="crispEdges">
      <rect width={size} height={size} fill="#fff" />
      <g fill="#000">{cells}</g>
    </svg>
  );
}

export function StateBadge(props: { state: "operational" | "degraded" | "down" }) {
  const label = { operational: "Operational", degraded: "Degraded", down: "Down" }[props.state];
  return <span class={`badge badge-${props.state}`}>{label}</span>;
}

/**
 * Text a project or a visitor wrote (a log line, a commit subject), with its control characters
 * and bidirectional marks shown as `\u202e`-style tokens instead of acting on the page: an
 * override could otherwise reverse what follows it and make a line read as something else
 * (core/terminal-text.ts; the CLI does the same). Newlines and tabs stay.
 */
export function Shown(props: { text: string }) {
  const parts: ComponentChildren[] = [];
  let last = 0;
  for (const m of props.text.matchAll(TERMINAL_UNSAFE)) {
    if (m[0] === "\n" || m[0] === "\t") continue;
    if (m.index > last) parts.push(props.text.slice(last, m.index));
    const code = m[0].charCodeAt(0).toString(16).padStart(4, "0");
    parts.push(
      <span class="ctl" title={`U+${code.toUpperCase()}`}>
        {`\\u${code}`}
      </span>,
    );
    last = m.index + m[0].length;
  }
  if (last < props.text.length) parts.push(props.text.slice(last));
  return <>{parts}</>;
}

