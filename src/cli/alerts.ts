/**
 * `ops alerts [rules|channels|deliveries]`: a project's alert rules with their state (the
 * default), its outbound channels (scheme and host only: the URL is never shown), or the
 * deliveries sent to them with their status and last error.
 */
import { EXIT, type Command } from "../commands/types";
import { api, CliError } from "./http";
import { requireClient } from "./config";
import { PROJECT_FLAG, limitOf, projectOf, query, str } from "./delivery";

interface Rule {
  name: string;
  kind: string;
  metric: string | null;
  query: string | null;
  op: string;
  threshold: number;
  for_seconds: number;
  window_seconds: number;
  state: string;
  last_value: number | null;
  silenced_until: string | null;
}
interface Channel {
  name: string;
  kind: string;
  url_hint: string;
  notice_kinds: string[];
}
interface Delivery {
  created_at: string;
  channel: string;
  event: string;
  state: string;
  attempts: number;
  status_code: number | null;
  error: string | null;
}

/** Columns padded to their widest cell; the last one is left as it is. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => (i === rows[0].length - 1 ? 0 : Math.max(...rows.map((r) => r[i].length))));
  return rows.map((r) => r.map((c, i) => (widths[i] ? c.padEnd(widths[i]) : c)).join("  ").trimEnd()).join("\n") + "\n";
}

const stamp = (s: string) => s.replace(/\.\d+Z$/, "Z");

export function rulesTable(rules: Rule[]): string {
  const cond = (r: Rule) => (r.kind === "log" ? `"${r.query ?? ""}" >= ${r.threshold} in ${r.window_seconds}s` : `${r.metric} ${r.op} ${r.threshold}${r.for_seconds ? ` for ${r.for_seconds}s` : ""}`);
  return table([["NAME", "KIND", "STATE", "VALUE", "SILENCED UNTIL", "CONDITION"], ...rules.map((r) => [r.name, r.kind, r.state, r.last_value === null ? "-" : String(r.last_value), r.silenced_until ? stamp(r.silenced_until) : "-", cond(r)])]);
}

export function channelsTable(channels: Channel[]): string {
  return table([["NAME", "KIND", "TARGET", "NOTICES"], ...channels.map((c) => [c.name, c.kind, c.url_hint, c.notice_kinds.join(",") || "-"])]);
}

export function deliveriesTable(list: Delivery[]): string {
  return table([["CREATED", "CHANNEL", "EVENT", "STATE", "TRIES", "HTTP", "ERROR"], ...list.map((d) => [stamp(d.created_at), d.channel, d.event, d.state, String(d.attempts), d.status_code === null ? "-" : String(d.status_code), d.error ?? ""])]);
}

const WHAT = ["rules", "channels", "deliveries"] as const;

export const alertsCommand: Command = {
  name: "alerts",
  side: "client",
  summary: "List a project's alert rules, channels or deliveries",
  usage: "[rules|channels|deliveries] [--project P] [--channel C] [--state S] [--limit N] [--json]",
  description:
    "rules (the default): each rule's state (ok, pending, firing), its last value, a silence's end and its condition. channels: each channel's kind and target (scheme and host; the URL itself is never shown) and the notification kinds it takes. deliveries: the messages sent to channels, newest first, with their state, attempts, the receiver's last HTTP status and error.",
  maxArgs: 1,
  flags: {
    project: PROJECT_FLAG,
    channel: { type: "string", value: "C", description: "deliveries: only this channel (name or id)" },
    state: { type: "string", value: "S", description: "deliveries: pending, delivered or failed" },
    limit: { type: "string", value: "N", description: "deliveries: how many, 1 to 500 (default 50)" },
    json: { type: "boolean", description: "Print the list as JSON" },
  },
  async run(ctx) {
    const what = (ctx.args[0] ?? "rules") as (typeof WHAT)[number];
    if (!WHAT.includes(what)) throw new CliError(`unknown list "${ctx.args[0]}": use rules, channels or deliveries`, EXIT.usage);
    const { server, token } = requireClient(ctx.env);
    const project = await projectOf(ctx, server, token);
    const base = `/api/v1/projects/${encodeURIComponent(project)}`;
    const path =
      what === "rules" ? `${base}/alert-rules`
      : what === "channels" ? `${base}/alert-channels`
      : `${base}/alert-deliveries${query({ channel: str(ctx.flags.channel), state: str(ctx.flags.state), limit: limitOf(ctx, 50, 500) })}`;
    const list = (await api<unknown[]>(server, token, "GET", path)).body;
    if (ctx.flags.json) {
      ctx.stdout(JSON.stringify(list, null, 2) + "\n");
      return EXIT.ok;
    }
    if (list.length === 0) {
      ctx.stderr(`no alert ${what} in ${project} yet.\n`);
      return EXIT.ok;
    }
    ctx.stdout(what === "rules" ? rulesTable(list as Rule[]) : what === "channels" ? channelsTable(list as Channel[]) : deliveriesTable(list as Delivery[]));
    return EXIT.ok;
  },
};
