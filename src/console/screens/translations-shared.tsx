/**
 * A shared bundle (estate-shared, or a package bundle at the attached version) as this project
 * uses it: for one locale, each key's shared value beside this project's override, which can be
 * set or removed. Keys the version in use no longer ships but this project overrides are flagged
 * `removed`: kept, not exported.
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link } from "../ui";
import type { ProjectInfo } from "../frame";
import type { Access } from "../access";
import { Action } from "../widgets/guard";
import { actions, message, trPage, trPath, type SharedRow, type SharedView } from "../widgets/translations";

export function SharedEditor(props: { project: ProjectInfo; bundleId: number; query: URLSearchParams; access: Access }) {
  const slug = props.project.slug;
  const [locale, setLocale] = useState(props.query.get("locale") ?? "");
  const [view, setView] = useState<SharedView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [ok, setOk] = useState<string | null>(null);
  const load = () =>
    api<SharedView>("GET", trPath(slug, `/shared/${props.bundleId}${locale ? `?locale=${encodeURIComponent(locale)}` : ""}`))
      .then((v) => {
        setView(v);
        setError(null);
      })
      .catch((e) => setError(message(e)));
  useEffect(() => void load(), [slug, props.bundleId, locale]);

  if (!view) return error ? <Alert>{error}</Alert> : <p aria-busy="true">Loading the shared bundle…</p>;
  const source = view.source_locale ?? "en";
  const locales = [...new Set([source, view.locale, ...view.rows.flatMap((r) => Object.keys(r.values))])].sort();
  const act = actions(setError, setOk, load);

  return (
    <section aria-labelledby="tms-shared-title">
      <p>
        <Link href={trPage(slug)}>Translations</Link> <span class="muted">/</span>
      </p>
      <h2 id="tms-shared-title">
        {view.name} {view.version ? <span class="tag">version {view.version}</span> : <span class="tag">estate-shared</span>}
      </h2>
      <p class="hint">
        Edited in project {view.project}; read only here. An override is this project's own text for a key, in one locale, and must keep the shared text's placeholders.
      </p>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      <nav class="env-picker" aria-label="Locale">
        {locales.map((l) => (
          <a
            key={l}
            href={`?locale=${encodeURIComponent(l)}`}
            aria-current={l === view.locale ? "page" : undefined}
            onClick={(e) => {
              e.preventDefault();
              history.replaceState(null, "", `?locale=${encodeURIComponent(l)}`);
              setLocale(l);
            }}
          >
            {l}
          </a>
        ))}
      </nav>
      <table aria-label={`Keys of ${view.name} in ${view.locale}`}>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Shared value ({view.locale})</th>
            <th scope="col">This project's override</th>
          </tr>
        </thead>
        <tbody>
          {view.rows.map((r) => (
            <Row key={`${r.namespace}:${r.key}:${view.locale}:${r.override_value ?? ""}`} row={r} locale={view.locale} source={source} slug={slug} bundleId={view.id} access={props.access} onAct={act} />
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Row(props: { row: SharedRow; locale: string; source: string; slug: string; bundleId: number; access: Access; onAct: (what: () => Promise<unknown>, done: string) => Promise<void> }) {
  const { row, locale } = props;
  const [text, setText] = useState(row.override_value ?? "");
  const shared = row.values[locale];
  const what = `${row.namespace}:${row.key}`;
  const path = trPath(props.slug, `/shared/${props.bundleId}/overrides`);
  return (
    <tr class={row.removed ? "removed" : undefined}>
      <th scope="row" style={{ fontWeight: "normal" }}>
        <code>{row.key}</code>
        {row.removed && <span class="tag tag-warn">removed</span>}
        <div class="muted" style={{ fontSize: "0.8rem" }}>
          {row.namespace}
        </div>
      </th>
      <td>
        {shared ?? (
          <span class="muted">
            {row.values[props.source] ? `${row.values[props.source]} (${props.source})` : "—"}
          </span>
        )}
      </td>
      <td>
        <textarea aria-label={`Override of ${what} in ${locale}`} rows={2} style={{ width: "100%", font: "inherit" }} value={text} placeholder="not overridden" readOnly={!props.access.can("translations.write", null)} onInput={(e) => setText(e.currentTarget.value)} />
        <div style={{ display: "flex", gap: "0.4rem" }}>
          {text.trim() !== "" && text !== (row.override_value ?? "") && !row.removed && (
            <Action access={props.access} perm="translations.write" env={null} class="small primary" onClick={() => void props.onAct(() => api("PUT", path, { namespace: row.namespace, key: row.key, locale, value: text }), `Override of ${what} saved.`)}>
              Save override
            </Action>
          )}
          {row.override_value != null && (
            <Action
              access={props.access}
              perm="translations.write"
              env={null}
              class="small"
              label={`Remove the override of ${what}`}
              onClick={() => void props.onAct(() => api("DELETE", `${path}?${new URLSearchParams({ namespace: row.namespace, key: row.key, locale })}`), `Override of ${what} removed.`)}
            >
              Remove override
            </Action>
          )}
        </div>
      </td>
    </tr>
  );
}
