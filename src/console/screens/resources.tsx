/**
 * A project's Resources page (`/projects/<slug>/resources?environment=…&type=…`): every resource
 * of one environment plus the project-level ones (type, name, state, summary, updated), filtered
 * by type, and a form that creates any type of the catalog from the type's JSON Schema. Each
 * name opens the resource's page.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert, navigate } from "../ui";
import type { SectionProps } from "../frame";
import { EnvironmentPicker } from "../widgets/environment-picker";
import { Empty, Pending, errorText, useLoad } from "../widgets/load";
import { Denied } from "../widgets/guard";
import { Fields, problemsOf, specOf, type Draft } from "../widgets/schema-form";
import { ResourceTable, envOfType, resourceApi, resourcePage, type CatalogEntry, type Resource } from "../widgets/resources";

function setType(type: string) {
  const q = new URLSearchParams(location.search);
  if (type) q.set("type", type);
  else q.delete("type");
  navigate(`${location.pathname}?${q}`);
}

export function ResourceList(props: SectionProps) {
  const slug = props.project.slug;
  const envs = props.project.environments;
  const env = props.query.get("environment") ?? envs[0] ?? "production";
  const type = props.query.get("type") ?? "";
  const loaded = useLoad(
    () => Promise.all([api<CatalogEntry[]>("GET", "/api/v1/catalog"), api<Resource[]>("GET", `/api/v1/projects/${slug}/resources?environment=${encodeURIComponent(env)}`)]),
    [slug, env],
  );
  if (!loaded.data) {
    return (
      <section aria-labelledby="resources-title">
        <h2 id="resources-title">Resources</h2>
        <EnvironmentPicker environments={envs} current={env} />
        <Pending what="resources" error={loaded.error} tall />
      </section>
    );
  }
  const [catalog, all] = loaded.data;
  const rows = type ? all.filter((r) => r.type === type) : all;
  const writable = catalog.filter((c) => props.access.can("resources.write", envOfType(c.type, env)));
  return (
    <section aria-labelledby="resources-title">
      <h2 id="resources-title">Resources</h2>
      <EnvironmentPicker environments={envs} current={env} />
      <div class="toolbar">
        <label for="type-filter">Type</label>
        <select id="type-filter" value={type} onChange={(e) => setType(e.currentTarget.value)}>
          <option value="">All types</option>
          {catalog.map((c) => (
            <option key={c.type} value={c.type}>
              {c.type}
            </option>
          ))}
        </select>
      </div>
      {rows.length === 0 ? (
        <Empty>{type ? `No ${type} in ${env}.` : `No resources in ${env} yet.`}</Empty>
      ) : (
        <ResourceTable slug={slug} env={env} rows={rows} />
      )}
      {writable.length > 0 ? (
        <NewResource slug={slug} env={env} catalog={writable} initial={writable.some((c) => c.type === type) ? type : (writable[0]?.type ?? "")} />
      ) : (
        <Denied access={props.access} perm="resources.write" env={env} what="Creating resources" />
      )}
    </section>
  );
}

function NewResource(props: { slug: string; env: string; catalog: CatalogEntry[]; initial: string }) {
  const [type, setType_] = useState(props.initial);
  const [name, setName] = useState("");
  const [draft, setDraft] = useState<Draft>({});
  const [problems, setProblems] = useState<Map<string, string>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const entry = props.catalog.find((c) => c.type === type);

  async function create(e: Event) {
    e.preventDefault();
    if (!entry) return;
    setError(null);
    const found = problemsOf(entry.schema, draft);
    setProblems(new Map(found.map((p) => [p.path, p.message])));
    if (found.length > 0) return setError(`Check the form: ${found[0]?.path} ${found[0]?.message}.`);
    setBusy(true);
    try {
      const created = await api<Resource>("POST", resourceApi(props.slug, type, null, props.env), { name: name.trim(), spec: specOf(entry.schema, draft) });
      navigate(resourcePage(props.slug, created.type, created.name, props.env));
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="card create-form" onSubmit={(e) => void create(e)} aria-labelledby="new-resource-title">
      <h3 id="new-resource-title">New resource</h3>
      <div class="field">
        <label for="new-type">Type</label>
        <select
          id="new-type"
          value={type}
          onChange={(e) => {
            setType_(e.currentTarget.value);
            setDraft({});
            setProblems(new Map());
          }}
        >
          {props.catalog.map((c) => (
            <option key={c.type} value={c.type}>
              {c.type}
            </option>
          ))}
        </select>
        {entry && <p class="hint">{entry.description}.{entry.scope === "project" ? " Project-wide: one for every environment." : ` In ${props.env}.`}</p>}
      </div>
      <div class="field">
        <label for="new-name">
          Name<span class="req"> (required)</span>
        </label>
        <input id="new-name" required pattern="[a-z0-9][a-z0-9\-]{0,62}" autocomplete="off" spellcheck={false} value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby="new-name-hint" />
        <p class="hint" id="new-name-hint">
          Lower-case letters, digits and dashes.
        </p>
      </div>
      {entry && <Fields key={type} schema={entry.schema} value={draft} onChange={setDraft} problems={problems} />}
      {error && <Alert>{error}</Alert>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy || !entry}>
          {busy ? "Creating…" : `Create ${type}`}
        </button>
      </div>
    </form>
  );
}
