/**
 * A project's Audit page (`/projects/<slug>/audit?actor=…&action=…&outcome=…&environment=…&since=…`):
 * the audit log newest first — when, who and through what (`via`) from which address, the action
 * and its target, allowed or denied and the deny reason — filtered by the query string (so a view
 * can be linked) and paged with the API's cursor (the last row's id).
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Alert, navigate, when } from "../ui";
import type { SectionProps } from "../frame";
import { Empty, Pending, Scroll, errorText } from "../widgets/load";
import { SelectField } from "../widgets/select-field";

interface AuditRow {
  id: number;
  at: string;
  actor: string;
  via: string;
  ip: string;
  action: string;
  target: string;
  outcome: "allowed" | "denied";
  reason: string;
  environment?: string | null;
}

const PAGE = 50;
const FILTERS = ["actor", "action", "outcome", "environment", "since"] as const;

export function AuditPage(props: SectionProps) {
  const slug = props.project.slug;
  const filter = Object.fromEntries(FILTERS.map((f) => [f, props.query.get(f) ?? ""])) as Record<(typeof FILTERS)[number], string>;
  const key = FILTERS.map((f) => filter[f]).join("|");
  const [rows, setRows] = useState<AuditRow[] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [draft, setDraft] = useState(filter);

  async function page(cursor: number | null) {
    const q = new URLSearchParams({ limit: String(PAGE) });
    for (const f of FILTERS) if (filter[f]) q.set(f, filter[f]);
    if (cursor !== null) q.set("cursor", String(cursor));
    try {
      const got = await api<AuditRow[]>("GET", `/api/v1/projects/${slug}/audit?${q}`);
      setRows((old) => (cursor === null ? got : [...(old ?? []), ...got]));
      setMore(got.length === PAGE);
      setError(null);
    } catch (e) {
      setError(errorText(e));
    }
  }
  useEffect(() => {
    setRows(null);
    setDraft(filter);
    void page(null);
  }, [slug, key]);

  function apply(e: Event) {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const f of FILTERS) if (draft[f].trim()) q.set(f, draft[f].trim());
    navigate(`/projects/${slug}/audit${q.size > 0 ? `?${q}` : ""}`);
  }
  const text = (f: (typeof FILTERS)[number], label: string, hint: string) => (
    <div>
      <label for={`audit-${f}`}>{label}</label>
      <input id={`audit-${f}`} value={draft[f]} placeholder={hint} onInput={(e) => setDraft({ ...draft, [f]: e.currentTarget.value })} />
    </div>
  );

  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      <form class="obs-filters" onSubmit={apply} aria-label="Filters">
        {text("actor", "Actor", "email, api-token, host-app")}
        {text("action", "Action", "secrets.* or resources.write")}
        <div>
          <label for="audit-outcome">Outcome</label>
          <select id="audit-outcome" value={draft.outcome} onChange={(e) => setDraft({ ...draft, outcome: e.currentTarget.value })}>
            <option value="">allowed and denied</option>
            <option value="allowed">allowed</option>
            <option value="denied">denied</option>
          </select>
        </div>
        <div>
          <SelectField id="audit-environment" label="Environment" value={draft.environment} options={[["", "any"], ...props.project.environments]} onChange={(v) => setDraft({ ...draft, environment: v })} />
        </div>
        {text("since", "Since", "24h, 7d or 2026-11-21T12:00:00Z")}
        <div class="buttons">
          <button type="submit" class="primary">
            Filter
          </button>
        </div>
      </form>
      {rows === null ? (
        <Pending what="the audit log" error={error} tall />
      ) : (
        <>
          {error && <Alert>{error}</Alert>}
          {rows.length === 0 ? (
            <Empty>Nothing recorded{key.replace(/\|/g, "") ? " that matches these filters" : " yet"}.</Empty>
          ) : (
            <Scroll>
              <table class="audit">
                <caption class="visually-hidden">Audit log of {slug}</caption>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Who</th>
                    <th scope="col">Action</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Environment</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((r) => (
                    <tr key={r.id} class={r.outcome === "denied" ? "denied-row" : undefined}>
                      <td>{when(r.at)}</td>
                      <td>
                        <div>{r.actor}</div>
                        <div class="hint">
                          via {r.via} from <code>{r.ip || "—"}</code>
                        </div>
                      </td>
                      <td>
                        <code>{r.action}</code>
                        <div class="hint wrap">{r.target}</div>
                      </td>
                      <td>
                        <span class={`badge badge-${r.outcome === "allowed" ? "operational" : "down"}`}>{r.outcome}</span>
                        {r.reason && <div class="hint">{r.reason}</div>}
                      </td>
                      <td>{r.environment ?? "—"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </Scroll>
          )}
          {more && (
            <button type="button" onClick={() => void page(rows[rows.length - 1]?.id ?? null)}>
              Older entries
            </button>
          )}
        </>
      )}
    </section>
  );
}
