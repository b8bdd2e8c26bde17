/**
 * A project's Alerts pages (`/projects/<slug>/alerts`, `…/alerts/channels`, `…/alerts/deliveries`):
 * the rules with their state and silences, the outbound channels (webhook, Slack, Discord; the URL
 * is given once and only its scheme and host are shown again, a webhook's signing secret once),
 * and the deliveries with their status and the receiver's last error. Reading takes obs.read,
 * changing project.settings (docs/decisions/0650-alerts-and-outbound-channels.md).
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { ActionsHeader, Alert, Link, when } from "../ui";
import type { SectionProps } from "../frame";
import { Action, Denied } from "../widgets/guard";
import { Empty, Outcome, Pending, Scroll, useActions, useLoad } from "../widgets/load";
import { SelectField } from "../widgets/select-field";

interface Rule {
  id: string;
  name: string;
  kind: string;
  metric: string | null;
  query: string | null;
  op: string;
  threshold: number;
  for_seconds: number;
  window_seconds: number;
  service: string | null;
  environment: string | null;
  state: string;
  last_value: number | null;
  silenced_until: string | null;
}
interface Channel {
  id: string;
  name: string;
  kind: string;
  url_hint: string;
  notice_kinds: string[];
}
interface Delivery {
  id: string;
  channel: string;
  event: string;
  state: string;
  attempts: number;
  status_code: number | null;
  error: string | null;
  created_at: string;
  next_attempt_at: string | null;
}

const WRITE = "project.settings" as const;

function condition(r: Rule): string {
  const where = `${r.service ? ` · ${r.service}` : ""}${r.environment ? ` · ${r.environment}` : ""}`;
  if (r.kind === "log") return `"${r.query ?? ""}" at least ${r.threshold} times in ${r.window_seconds} s${where}`;
  return `${r.metric} ${r.op} ${r.threshold}${r.for_seconds ? ` for ${r.for_seconds} s` : ""}${where}`;
}

function RulesPage(props: SectionProps & { base: string }) {
  const slug = props.project.slug;
  const rules = useLoad(() => Promise.all([api<Rule[]>("GET", `${props.base}/alert-rules`), api<Channel[]>("GET", `${props.base}/alert-channels`)]), [slug]);
  const acts = useActions(rules.reload);
  const [form, setForm] = useState({ name: "", kind: "metric", metric: "", query: "", threshold: "", for_seconds: "60", window_seconds: "300", service: "", channels: [] as string[] });
  if (!rules.data) return <Pending what="alert rules" error={rules.error} />;
  const [list, channels] = rules.data;
  const create = (e: Event) => {
    e.preventDefault();
    void acts.run(async () => {
      const body =
        form.kind === "metric"
          ? { name: form.name, kind: "metric", metric: form.metric, threshold: Number(form.threshold), for_seconds: Number(form.for_seconds), service: form.service || null, channels: form.channels }
          : { name: form.name, kind: "log", query: form.query, threshold: Number(form.threshold), window_seconds: Number(form.window_seconds), service: form.service || null, channels: form.channels };
      await api("POST", `${props.base}/alert-rules`, body);
      return `Rule ${form.name} added.`;
    });
  };
  const field = (key: keyof typeof form, label: string, hint = "") => (
    <div>
      <label for={`rule-${key}`}>{label}</label>
      <input id={`rule-${key}`} value={form[key] as string} placeholder={hint} onInput={(e) => setForm({ ...form, [key]: e.currentTarget.value })} />
    </div>
  );
  return (
    <>
      <Outcome of={acts} />
      {list.length === 0 ? (
        <Empty>No alert rules yet.</Empty>
      ) : (
        <Scroll>
          <table>
            <thead>
              <tr>
                <th>Rule</th>
                <th>State</th>
                <th>Last value</th>
                <th>Condition</th>
                <ActionsHeader />
              </tr>
            </thead>
            <tbody>
              {list.map((r) => (
                <tr key={r.id}>
                  <td>{r.name}</td>
                  <td>
                    <span class={`tag state-${r.state}`}>{r.state}</span>
                    {r.silenced_until && <span class="muted"> silenced until {when(r.silenced_until)}</span>}
                  </td>
                  <td>{r.last_value ?? "–"}</td>
                  <td>{condition(r)}</td>
                  <td>
                    <Action access={props.access} perm={WRITE} env={null} off={acts.busy} onClick={() => void acts.run(async () => (await api("POST", `${props.base}/alert-silences`, { rule_id: r.id, minutes: 60 }), `${r.name} silenced for an hour.`))}>
                      Silence 1 h
                    </Action>{" "}
                    <Action access={props.access} perm={WRITE} env={null} off={acts.busy} onClick={() => void acts.run(async () => (await api("DELETE", `${props.base}/alert-rules/${r.id}`), `Rule ${r.name} deleted.`))}>
                      Delete
                    </Action>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {props.access.can(WRITE, null) ? (
        <form class="card" onSubmit={create} aria-label="New alert rule">
          <h3>New rule</h3>
          {field("name", "Name", "5xx-rate")}
          <SelectField id="rule-kind" label="Kind" value={form.kind} options={[["metric", "A metric over a threshold"], ["log", "A log query matching N times"]]} onChange={(kind) => setForm({ ...form, kind })} />
          {form.kind === "metric" ? field("metric", "Metric", "ops.ingress.responses.5xx") : field("query", "Log query", "timeout")}
          {field("threshold", form.kind === "metric" ? "Above" : "At least (lines)", form.kind === "metric" ? "0.05" : "10")}
          {form.kind === "metric" ? field("for_seconds", "For (seconds)") : field("window_seconds", "Window (seconds)")}
          {field("service", "Service (optional)")}
          <fieldset>
            <legend>Send to</legend>
            {channels.length === 0 && <p class="muted">No channels yet: add one on the Channels tab.</p>}
            {channels.map((c) => (
              <label key={c.id}>
                <input type="checkbox" checked={form.channels.includes(c.id)} onChange={(e) => setForm({ ...form, channels: e.currentTarget.checked ? [...form.channels, c.id] : form.channels.filter((x) => x !== c.id) })} /> {c.name} ({c.kind})
              </label>
            ))}
          </fieldset>
          <Action access={props.access} perm={WRITE} env={null} type="submit" off={acts.busy} onClick={() => {}}>
            Add rule
          </Action>
        </form>
      ) : (
        <Denied access={props.access} perm={WRITE} env={null} what="Adding rules" />
      )}
    </>
  );
}

function ChannelsPage(props: SectionProps & { base: string }) {
  const channels = useLoad(() => api<Channel[]>("GET", `${props.base}/alert-channels`), [props.project.slug]);
  const [secret, setSecret] = useState<string | null>(null);
  const acts = useActions(channels.reload);
  const [form, setForm] = useState({ name: "", kind: "webhook", url: "" });
  if (!channels.data) return <Pending what="channels" error={channels.error} />;
  const create = (e: Event) => {
    e.preventDefault();
    void acts.run(async () => {
      const made = await api<Channel & { signing_secret: string | null }>("POST", `${props.base}/alert-channels`, form);
      setSecret(made.signing_secret);
      setForm({ name: "", kind: "webhook", url: "" });
      return `Channel ${made.name} added.`;
    });
  };
  return (
    <>
      <Outcome of={acts} />
      {secret && (
        <Alert kind="info">
          The webhook's signing secret, shown this once: <code>{secret}</code>. Receivers check <code>X-Ops-Signature</code> (HMAC-SHA256 of <code>timestamp.body</code>) and <code>X-Ops-Timestamp</code>.
        </Alert>
      )}
      {channels.data.length === 0 ? (
        <Empty>No channels yet.</Empty>
      ) : (
        <Scroll>
          <table>
            <thead>
              <tr>
                <th>Channel</th>
                <th>Kind</th>
                <th>Target</th>
                <th>Also receives</th>
                <ActionsHeader />
              </tr>
            </thead>
            <tbody>
              {channels.data.map((c) => (
                <tr key={c.id}>
                  <td>{c.name}</td>
                  <td>{c.kind}</td>
                  <td>
                    <code>{c.url_hint}</code>
                  </td>
                  <td>{c.notice_kinds.join(", ") || "–"}</td>
                  <td>
                    <Action access={props.access} perm={WRITE} env={null} off={acts.busy} onClick={() => void acts.run(async () => (await api("DELETE", `${props.base}/alert-channels/${c.id}`), `Channel ${c.name} deleted.`))}>
                      Delete
                    </Action>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {props.access.can(WRITE, null) ? (
        <form class="card" onSubmit={create} aria-label="New channel">
          <h3>New channel</h3>
          <div>
            <label for="channel-name">Name</label>
            <input id="channel-name" value={form.name} placeholder="oncall" onInput={(e) => setForm({ ...form, name: e.currentTarget.value })} />
          </div>
          <SelectField id="channel-kind" label="Kind" value={form.kind} options={[["webhook", "Webhook (signed JSON)"], ["slack", "Slack incoming webhook"], ["discord", "Discord webhook"]]} onChange={(kind) => setForm({ ...form, kind })} />
          <div>
            <label for="channel-url">URL</label>
            <input id="channel-url" type="url" autocomplete="off" value={form.url} placeholder="https://hooks.slack.com/services/…" onInput={(e) => setForm({ ...form, url: e.currentTarget.value })} />
          </div>
          <Action access={props.access} perm={WRITE} env={null} type="submit" off={acts.busy} onClick={() => {}}>
            Add channel
          </Action>
        </form>
      ) : (
        <Denied access={props.access} perm={WRITE} env={null} what="Adding channels" />
      )}
    </>
  );
}

function DeliveriesPage(props: SectionProps & { base: string }) {
  const deliveries = useLoad(() => api<Delivery[]>("GET", `${props.base}/alert-deliveries?limit=200`), [props.project.slug]);
  if (!deliveries.data) return <Pending what="deliveries" error={deliveries.error} />;
  if (deliveries.data.length === 0) return <Empty>Nothing sent yet.</Empty>;
  return (
    <Scroll>
      <table>
        <thead>
          <tr>
            <th>When</th>
            <th>Channel</th>
            <th>Event</th>
            <th>State</th>
            <th>Attempts</th>
            <th>HTTP</th>
            <th>Last error</th>
          </tr>
        </thead>
        <tbody>
          {deliveries.data.map((d) => (
            <tr key={d.id}>
              <td>{when(d.created_at)}</td>
              <td>{d.channel}</td>
              <td>{d.event}</td>
              <td>
                <span class={`tag delivery-${d.state}`}>{d.state}</span>
                {d.next_attempt_at && <span class="muted"> next try {when(d.next_attempt_at)}</span>}
              </td>
              <td>{d.attempts}</td>
              <td>{d.status_code ?? "–"}</td>
              <td>{d.error ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scroll>
  );
}

export function AlertsPage(props: SectionProps) {
  const slug = props.project.slug;
  const base = `/api/v1/projects/${slug}`;
  const tab = props.rest[0] === "channels" || props.rest[0] === "deliveries" ? props.rest[0] : "rules";
  return (
    <section aria-labelledby="alerts-title">
      <h2 id="alerts-title">Alerts</h2>
      <nav class="env-picker" aria-label="Alerts">
        <Link href={`/projects/${slug}/alerts`} current={tab === "rules"}>
          Rules
        </Link>
        <Link href={`/projects/${slug}/alerts/channels`} current={tab === "channels"}>
          Channels
        </Link>
        <Link href={`/projects/${slug}/alerts/deliveries`} current={tab === "deliveries"}>
          Deliveries
        </Link>
      </nav>
      {tab === "rules" && <RulesPage {...props} base={base} />}
      {tab === "channels" && <ChannelsPage {...props} base={base} />}
      {tab === "deliveries" && <DeliveriesPage {...props} base={base} />}
    </section>
  );
}
