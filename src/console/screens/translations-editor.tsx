/**
 * The editor grid of one of the project's bundles: keys × locales, search over keys and every
 * locale's text, missing-only, a review badge with an Approve button for pre-translated texts,
 * adding keys and locales, deleting a key, and the export links of the composed locale.
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link, ActionsHeader } from "../ui";
import type { ProjectInfo } from "../frame";
import type { Access } from "../access";
import { Action, Denied } from "../widgets/guard";
import { KIND_LABEL, message, trPage, trPath, type Entry, type OwnBundle, type ProjectTranslations } from "../widgets/translations";

/** Rows shown at once; a search narrows the rest. */
const SHOWN = 200;

export function BundleEditor(props: { project: ProjectInfo; bundleId: number; query: URLSearchParams; access: Access }) {
  const slug = props.project.slug;
  const access = props.access;
  const write = access.can("translations.write", null);
  const [bundle, setBundle] = useState<OwnBundle | null | undefined>(undefined);
  const [entries, setEntries] = useState<Entry[] | null>(null);
  const [q, setQ] = useState(props.query.get("q") ?? "");
  const [search, setSearch] = useState(q);
  const [missingOnly, setMissingOnly] = useState(props.query.get("missing") === "1");
  const [added, setAdded] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [ok, setOk] = useState<string | null>(null);

  useEffect(() => {
    api<ProjectTranslations>("GET", trPath(slug))
      .then((d) => setBundle(d.own.find((b) => b.id === props.bundleId) ?? null))
      .catch((e) => setError(message(e)));
  }, [slug, props.bundleId]);
  const load = () => {
    const params = new URLSearchParams({ bundle: String(props.bundleId) });
    if (search) params.set("q", search);
    if (missingOnly) params.set("missing_only", "true");
    return api<Entry[]>("GET", trPath(slug, `/entries?${params}`))
      .then(setEntries)
      .catch((e) => setError(message(e)));
  };
  useEffect(() => void load(), [slug, props.bundleId, search, missingOnly]);

  if (bundle === null) return <Alert>Bundle {props.bundleId} is not one of this project's bundles.</Alert>;
  if (!bundle || !entries) return error ? <Alert>{error}</Alert> : <p aria-busy="true">Loading the bundle…</p>;

  const source = bundle.source_locale ?? "en";
  const locales = [source, ...new Set([...(bundle.locales ?? []), ...entries.flatMap((e) => Object.keys(e.values)), ...added].filter((l) => l !== source).sort())];
  const save = async (body: Record<string, unknown>, done: string) => {
    setError(null);
    setOk(null);
    try {
      await api("PUT", trPath(slug, "/entries"), { bundle: String(bundle.id), ...body });
      setOk(done);
      await load();
    } catch (e) {
      setError(`${body.namespace}:${body.key} (${body.locale}): ${message(e)}`);
    }
  };
  const remove = async (e: Entry) => {
    if (typeof window.confirm === "function" && !window.confirm(`Delete ${e.namespace}:${e.key} in every locale? Its texts are kept in history.`)) return;
    setError(null);
    try {
      await api("DELETE", trPath(slug, `/entries?${new URLSearchParams({ bundle: String(bundle.id), namespace: e.namespace, key: e.key })}`));
      setOk(`${e.namespace}:${e.key} was deleted.`);
      await load();
    } catch (err) {
      setError(message(err));
    }
  };

  return (
    <section aria-labelledby="tms-editor-title">
      <p>
        <Link href={trPage(slug)}>Translations</Link> <span class="muted">/</span>
      </p>
      <h2 id="tms-editor-title">
        {bundle.name} <span class="tag">{KIND_LABEL[bundle.kind ?? "own"]}</span>
        {bundle.latest_version && <span class="tag">latest {bundle.latest_version}</span>}
      </h2>
      <p class="hint">
        Source locale {source}: its texts define the keys, and other locales fall back to them. Values are ICU messages; a translation keeps the source's {"{placeholders}"}.
      </p>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}

      <form
        role="search"
        style={{ display: "flex", gap: "1rem", alignItems: "center", flexWrap: "wrap", margin: "0 0 1rem" }}
        onSubmit={(e) => {
          e.preventDefault();
          setSearch(q);
        }}
      >
        <input id="tms-search" type="search" aria-label="Search keys and texts" placeholder="Search keys and texts" style={{ maxWidth: "24rem" }} value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        <button type="submit">Search</button>
        <label class="choice">
          <input type="checkbox" checked={missingOnly} onChange={(e) => setMissingOnly(e.currentTarget.checked)} /> Missing only
        </label>
      </form>

      {entries.length === 0 ? (
        <p class="muted">{search || missingOnly ? "No keys match." : "No keys yet."}</p>
      ) : (
        <table class="tms-grid" aria-label={`Texts of ${bundle.name}`}>
          <thead>
            <tr>
              <th scope="col">Key</th>
              {locales.map((l) => (
                <th scope="col" key={l}>
                  {l}
                  {l === source && <span class="tag">source</span>}
                </th>
              ))}
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {entries.slice(0, SHOWN).map((e) => (
              <tr key={`${e.namespace}:${e.key}`}>
                <th scope="row" style={{ fontWeight: "normal" }}>
                  <code>{e.key}</code>
                  <div class="muted" style={{ fontSize: "0.8rem" }}>
                    {e.namespace} · v{e.version}
                  </div>
                </th>
                {locales.map((l) => (
                  <Cell key={`${e.namespace}:${e.key}:${l}:${e.values[l] ?? ""}`} entry={e} locale={l} access={access} onSave={save} />
                ))}
                <td>
                  <Action access={access} perm="translations.write" env={null} class="small danger" label={`Delete ${e.namespace}:${e.key}`} onClick={() => void remove(e)}>
                    Delete
                  </Action>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {entries.length > SHOWN && (
        <p class="hint">
          Showing {SHOWN} of {entries.length} keys; search to find the others.
        </p>
      )}

      <div class="grid-form" style={{ marginTop: "1.5rem" }}>
        {bundle.kind !== "package" && (write ? <NewKey source={source} onSave={save} /> : <Denied access={access} perm="translations.write" env={null} what="Adding keys" />)}
        <form
          aria-label="Add a locale"
          onSubmit={(e) => {
            e.preventDefault();
            const input = (e.currentTarget as HTMLFormElement).elements.namedItem("locale") as HTMLInputElement;
            if (input.value.trim()) setAdded([...added, input.value.trim()]);
            input.value = "";
          }}
        >
          <label for="tms-add-locale">Add a locale column</label>
          <input id="tms-add-locale" name="locale" placeholder="de" />
          <div class="actions">
            <button type="submit">Add locale</button>
          </div>
        </form>
      </div>

      {bundle.kind !== "package" && <Exports slug={slug} bundle={bundle.name} locales={locales} />}
    </section>
  );
}

function Cell(props: { entry: Entry; locale: string; access: Access; onSave: (body: Record<string, unknown>, done: string) => Promise<void> }) {
  const { entry, locale } = props;
  const stored = entry.values[locale];
  const [text, setText] = useState(stored ?? "");
  const inReview = entry.review?.includes(locale) ?? false;
  const dirty = text !== (stored ?? "") && text.trim() !== "";
  const what = `${entry.namespace}:${entry.key} in ${locale}`;
  return (
    <td class={stored === undefined ? "missing" : undefined}>
      <textarea
        aria-label={`${locale} text of ${entry.namespace}:${entry.key}`}
        rows={2}
        style={{ width: "100%", minWidth: "10rem", font: "inherit", borderColor: stored === undefined ? "var(--warn)" : undefined }}
        placeholder={stored === undefined ? "missing" : undefined}
        readOnly={!props.access.can("translations.write", null)}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <div style={{ display: "flex", gap: "0.4rem", alignItems: "center", flexWrap: "wrap" }}>
        {inReview && <span class="badge badge-degraded">review</span>}
        {dirty && (
          <Action access={props.access} perm="translations.write" env={null} class="small primary" onClick={() => void props.onSave({ namespace: entry.namespace, key: entry.key, locale, value: text }, `Saved ${what}.`)}>
            Save
          </Action>
        )}
        {inReview && !dirty && (
          <Action access={props.access} perm="translations.write" env={null} class="small" label={`Approve ${what}`} onClick={() => void props.onSave({ namespace: entry.namespace, key: entry.key, locale, value: stored, status: "translated" }, `Approved ${what}.`)}>
            Approve
          </Action>
        )}
      </div>
    </td>
  );
}

function NewKey(props: { source: string; onSave: (body: Record<string, unknown>, done: string) => Promise<void> }) {
  const [ns, setNs] = useState("translation");
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  return (
    <form
      aria-label="New key"
      onSubmit={(e) => {
        e.preventDefault();
        void props.onSave({ namespace: ns, key, locale: props.source, value }, `Added ${ns}:${key}.`);
      }}
    >
      <label for="tms-new-ns">Namespace</label>
      <input id="tms-new-ns" required value={ns} onInput={(e) => setNs(e.currentTarget.value)} />
      <label for="tms-new-key">Key</label>
      <input id="tms-new-key" required placeholder="checkout.pay" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
      <label for="tms-new-value">Text in {props.source}</label>
      <input id="tms-new-value" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      <div class="actions">
        <button type="submit" class="primary">
          Add key
        </button>
      </div>
    </form>
  );
}

function Exports(props: { slug: string; bundle: string; locales: string[] }) {
  return (
    <section aria-labelledby="tms-exports">
      <h3 id="tms-exports">Export the composed locale</h3>
      <p class="hint">Own texts, then this project's overrides, then the shared bundles at the versions it uses; a missing text falls back to the source locale.</p>
      <table>
        <tbody>
          {props.locales.map((l) => (
            <tr key={l}>
              <th scope="row">{l}</th>
              {(["json", "flat", "xliff", "po"] as const).map((f) => (
                <td key={f}>
                  <a href={trPath(props.slug, `/export/${encodeURIComponent(l)}?bundle=${encodeURIComponent(props.bundle)}&format=${f}`)}>{{ json: "JSON tree", flat: "flat JSON", xliff: "XLIFF 2.0", po: "gettext PO" }[f]}</a>
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
