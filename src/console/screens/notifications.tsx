/**
 * The Notifications page (`/notifications`): the person's inbox newest first (unread ones marked,
 * each opening its link and marked read on the way; mark all read; only unread; older ones paged
 * with the cursor), and their notification settings per project: for each kind, in the console
 * and by email.
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link, navigate, when } from "../ui";
import type { ProjectInfo } from "../frame";
import { Empty, Pending, Scroll, errorText, useLoad } from "../widgets/load";
import { SelectField } from "../widgets/select-field";

interface Notice {
  id: string;
  kind: string;
  created_at: string;
  link?: string | null;
  params: Record<string, string | number | boolean>;
  read: boolean;
}

interface Setting {
  kind: string;
  label?: string;
  in_app: boolean;
  email: boolean;
}

const PAGE = 50;

/** What a notice says: its kind in words, then its parameters. */
function describe(n: Notice, labels: Map<string, string>): string {
  const rest = Object.entries(n.params)
    .filter(([k]) => k !== "project")
    .map(([k, v]) => `${k.replace(/_/g, " ")} ${v}`)
    .join(", ");
  return `${labels.get(n.kind) ?? n.kind} in ${n.params.project}${rest ? `: ${rest}` : ""}`;
}

export function NotificationsPage(props: { onRead(): void }) {
  const unreadOnly = new URLSearchParams(location.search).get("unread") === "true";
  const [items, setItems] = useState<Notice[] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // The first project's settings come with the projects: they name the kinds the inbox rows say,
  // so the rows are drawn once in their final words and nothing moves when the settings arrive.
  const projects = useLoad(async () => {
    const list = await api<ProjectInfo[]>("GET", "/api/v1/projects");
    const first = list[0] ? await api<Setting[]>("GET", `/api/v1/projects/${list[0].slug}/notification-settings`).catch(() => null) : null;
    return { list, first };
  }, []);
  const [changed, setLabels] = useState<Map<string, string> | null>(null);
  const labels = changed ?? labelsOf(projects.data?.first ?? []);

  async function page(cursor: string | null) {
    try {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (unreadOnly) q.set("unread", "true");
      if (cursor) q.set("cursor", cursor);
      const got = await api<Notice[]>("GET", `/api/v1/notifications?${q}`);
      setItems((old) => (cursor ? [...(old ?? []), ...got] : got));
      setMore(got.length === PAGE);
    } catch (e) {
      setError(errorText(e));
    }
  }
  useEffect(() => void page(null), [unreadOnly]);

  async function read(n: Notice | "all") {
    try {
      await api("POST", n === "all" ? "/api/v1/notifications/read-all" : `/api/v1/notifications/${n.id}/read`);
      setItems((old) => (old ?? []).map((x) => (n === "all" || x.id === n.id ? { ...x, read: true } : x)));
      props.onRead();
    } catch (e) {
      setError(errorText(e));
    }
  }

  if (items === null || !projects.data) {
    // One placeholder until both the inbox and the projects are here, so nothing moves after.
    return (
      <section aria-labelledby="inbox-title">
        <h1 id="inbox-title">Notifications</h1>
        <Pending what="notifications" error={error ?? projects.error} tall />
      </section>
    );
  }
  return (
    <section aria-labelledby="inbox-title">
      <h1 id="inbox-title">Notifications</h1>
      <div class="toolbar">
        <Link href={unreadOnly ? "/notifications" : "/notifications?unread=true"}>{unreadOnly ? "Show all" : "Only unread"}</Link>
        <button type="button" class="small" onClick={() => void read("all")}>
          Mark all read
        </button>
      </div>
      {error && <Alert>{error}</Alert>}
      {items.length === 0 ? (
        <Empty>{unreadOnly ? "Nothing unread." : "No notifications yet."}</Empty>
      ) : (
        <Scroll>
          <table class="inbox">
            <caption class="visually-hidden">Your notifications</caption>
            <tbody>
              {items.map((n) => (
                <tr key={n.id} class={n.read ? undefined : "unread"}>
                  <td>
                    {!n.read && <span class="visually-hidden">Unread: </span>}
                    {n.link ? (
                      <a
                        href={n.link}
                        onClick={(e) => {
                          e.preventDefault();
                          void read(n).then(() => navigate(n.link as string));
                        }}
                      >
                        {describe(n, labels)}
                      </a>
                    ) : (
                      describe(n, labels)
                    )}
                  </td>
                  <td>{when(n.created_at)}</td>
                  <td>
                    {!n.read && (
                      <button type="button" class="small" onClick={() => void read(n)} aria-label={`Mark read: ${describe(n, labels)}`}>
                        Mark read
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {more && (
        <button type="button" onClick={() => void page(items[items.length - 1]?.id ?? null)}>
          Older notifications
        </button>
      )}
      <h2>Settings</h2>
      {projects.data.list.length === 0 ? <Empty>Settings are per project; you have none yet.</Empty> : <Settings projects={projects.data.list} first={projects.data.first} onLabels={setLabels} />}
    </section>
  );
}

function labelsOf(settings: readonly Setting[]): Map<string, string> {
  return new Map(settings.map((x) => [x.kind, x.label ?? x.kind]));
}

/** The settings per project; `first` is the first project's, already read with the page. */
function Settings(props: { projects: ProjectInfo[]; first: Setting[] | null; onLabels(l: Map<string, string>): void }) {
  const [slug, setSlug] = useState(props.projects[0]?.slug ?? "");
  const [settings, setSettings] = useState<Setting[] | null>(props.first);
  const [ok, setOk] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (slug === props.projects[0]?.slug && props.first && settings === props.first) return;
    setSettings(null);
    api<Setting[]>("GET", `/api/v1/projects/${slug}/notification-settings`)
      .then((s) => {
        setSettings(s);
        props.onLabels(labelsOf(s));
      })
      .catch((e) => setError(errorText(e)));
  }, [slug]);
  async function save(e: Event) {
    e.preventDefault();
    setOk(null);
    setError(null);
    try {
      await api("PUT", `/api/v1/projects/${slug}/notification-settings`, { settings: (settings ?? []).map(({ kind, in_app, email }) => ({ kind, in_app, email })) });
      setOk(`Saved for ${slug}.`);
    } catch (err) {
      setError(errorText(err));
    }
  }
  const flip = (kind: string, channel: "in_app" | "email", on: boolean) => setSettings((s) => (s ?? []).map((x) => (x.kind === kind ? { ...x, [channel]: on } : x)));
  return (
    <form class="card" onSubmit={(e) => void save(e)} aria-label="Notification settings">
      <div class="toolbar">
        <SelectField id="settings-project" label="Project" value={slug} options={props.projects.map((p) => [p.slug, p.name] as const)} onChange={setSlug} />
      </div>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      {settings === null ? (
        <p class="loading" aria-busy="true">
          Loading settings…
        </p>
      ) : (
        <Scroll>
          <table class="notification-settings">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">In the console</th>
                <th scope="col">By email</th>
              </tr>
            </thead>
            <tbody>
              {settings.map((s) => (
                <tr key={s.kind}>
                  <td>{s.label ?? s.kind}</td>
                  <td>
                    <input type="checkbox" checked={s.in_app} aria-label={`${s.label ?? s.kind}: in the console`} onChange={(e) => flip(s.kind, "in_app", e.currentTarget.checked)} />
                  </td>
                  <td>
                    <input type="checkbox" checked={s.email} aria-label={`${s.label ?? s.kind}: by email`} onChange={(e) => flip(s.kind, "email", e.currentTarget.checked)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={!settings}>
          Save settings
        </button>
      </div>
    </form>
  );
}
