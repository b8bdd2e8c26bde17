/**
 * Resources as the Resources pages show them: the shapes of the catalog and of a resource, the
 * address of a resource's page, its facts and stored status (every field of `status.detail`,
 * whatever the type reports, so new fields show without a console change), the spec editor with
 * optimistic concurrency, and delete with the confirmation the type asks for.
 */
import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link, navigate, when } from "../ui";
import type { Access, RouteEnvironment } from "../access";
import type { ProjectInfo } from "../frame";
import { Action } from "./guard";
import { Confirm } from "./confirm";
import { Scroll, errorText } from "./load";
import { Fields, draftOf, problemsOf, specOf, type Draft, type JsonSchema } from "./schema-form";

export interface CatalogEntry {
  type: string;
  scope: "environment" | "project";
  description: string;
  delete_confirm: boolean;
  schema: JsonSchema;
}

export interface Resource {
  id: string;
  type: string;
  name: string;
  project: string;
  environment?: string | null;
  spec: Record<string, unknown>;
  status: { state: string; summary: string; observed_at: string; detail?: Record<string, unknown> };
  version: number;
  created_at: string;
  updated_at: string;
  updated_by: string;
}

const STATE_CLASS: Record<string, string> = { ready: "operational", pending: "degraded", error: "down" };

export function ResourceState(props: { state: string }) {
  return <span class={`badge badge-${STATE_CLASS[props.state] ?? "degraded"}`}>{props.state}</span>;
}

/** The status summary; the API's text `null` means nothing observed it yet. */
export function summaryText(r: { status: Pick<Resource["status"], "summary"> }): string {
  return r.status.summary === "null" ? "not observed yet" : r.status.summary;
}

/**
 * Resources of one environment (and the project-level ones, tagged) as a table: type, name
 * opening the resource's page, state, summary, last update. The Resources page and a project's
 * overview list them alike.
 */
export function ResourceTable(props: { slug: string; env: string; rows: Array<Pick<Resource, "id" | "type" | "name" | "environment" | "updated_at"> & { status: Pick<Resource["status"], "state" | "summary"> }> }) {
  return (
    <Scroll>
      <table class="resources">
        <caption class="visually-hidden">Resources in {props.env}</caption>
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Name</th>
            <th scope="col">State</th>
            <th scope="col">Summary</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={r.id}>
              <td>{r.type}</td>
              <td>
                <Link href={resourcePage(props.slug, r.type, r.name, props.env)}>
                  <strong>{r.name}</strong>
                </Link>
                {r.environment === null && <span class="tag">project-wide</span>}
              </td>
              <td>
                <ResourceState state={r.status.state} />
              </td>
              <td class="summary">{summaryText(r)}</td>
              <td>{when(r.updated_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scroll>
  );
}

/** The environment a resource route evaluates in: none for project-level types (buckets). */
export function envOfType(type: string, env: string): RouteEnvironment {
  return type === "bucket" ? null : env;
}

/** The API path of a resource (or of its type with `name` omitted), with the environment. */
export function resourceApi(slug: string, type: string, name: string | null, env: string, rest = ""): string {
  return `/api/v1/projects/${slug}/resources/${type}${name ? `/${encodeURIComponent(name)}` : ""}${rest}?environment=${encodeURIComponent(env)}`;
}

/** The console path of a resource's page. */
export function resourcePage(slug: string, type: string, name: string, env: string): string {
  return `/projects/${slug}/resources/${type}/${encodeURIComponent(name)}?environment=${encodeURIComponent(env)}`;
}

/** A byte count for people: "7.2 MiB". */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** One status figure as text (`…_bytes` figures as sizes). */
function figure(v: unknown, key = ""): string {
  if (typeof v === "number" && key.endsWith("bytes")) return bytes(v);
  if (v === null || v === undefined) return "—";
  if (Array.isArray(v)) return v.map((x) => figure(x)).join(", ") || "—";
  if (typeof v === "object") return JSON.stringify(v);
  if (typeof v === "boolean") return v ? "yes" : "no";
  return String(v);
}

/** State, summary, version and every figure of the stored status. */
export function ResourceFacts(props: { resource: Resource; skip?: readonly string[] }) {
  const r = props.resource;
  const detail = Object.entries(r.status.detail ?? {}).filter(([k]) => !props.skip?.includes(k));
  return (
    <dl class="facts">
      <dt>State</dt>
      <dd>
        <ResourceState state={r.status.state} /> {summaryText(r)}
      </dd>
      {detail.map(([k, v]) => (
        <Fragment key={k}>
          <dt>{k.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase())}</dt>
          <dd>{figure(v, k)}</dd>
        </Fragment>
      ))}
      <dt>Observed</dt>
      <dd>{when(r.status.observed_at)}</dd>
      <dt>Version</dt>
      <dd>
        {r.version}, changed {when(r.updated_at)} by {r.updated_by}
      </dd>
    </dl>
  );
}

/**
 * The spec as a form. Saving sends the version the page read: when someone else wrote in
 * between, the server answers 409 and the editor says so and offers to reload (the person's
 * edits stay in the form until they do).
 */
export function SpecEditor(props: { project: ProjectInfo; access: Access; entry: CatalogEntry; resource: Resource; env: string; locked?: ReadonlySet<string>; onSaved(r: Resource): void }) {
  const r = props.resource;
  const [draft, setDraft] = useState<Draft>(() => draftOf(props.entry.schema, r.spec));
  const [problems, setProblems] = useState<Map<string, string>>(new Map());
  const [error, setError] = useState<string | null>(null);
  const [stale, setStale] = useState<number | null>(null);
  const [ok, setOk] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const env = envOfType(r.type, props.env);

  async function save(e: Event) {
    e.preventDefault();
    setOk(null);
    setError(null);
    const found = problemsOf(props.entry.schema, draft);
    setProblems(new Map(found.map((p) => [p.path, p.message])));
    if (found.length > 0) return setError(`Check the form: ${found[0]?.path} ${found[0]?.message}.`);
    setBusy(true);
    try {
      const saved = await api<Resource>("PUT", resourceApi(props.project.slug, r.type, r.name, props.env), { spec: specOf(props.entry.schema, draft), version: r.version });
      setOk(`Saved as version ${saved.version}.`);
      props.onSaved(saved);
    } catch (err) {
      if (err instanceof ApiError && err.status === 409 && typeof err.details?.current_version === "number") setStale(err.details.current_version);
      else setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }

  async function reload() {
    setError(null);
    try {
      const fresh = await api<Resource>("GET", resourceApi(props.project.slug, r.type, r.name, props.env));
      setDraft(draftOf(props.entry.schema, fresh.spec));
      setStale(null);
      setProblems(new Map());
      setOk(`Showing version ${fresh.version} as the server has it; your edits are discarded.`);
      props.onSaved(fresh);
    } catch (err) {
      setError(errorText(err));
    }
  }

  return (
    <form class="card spec-form" onSubmit={(e) => void save(e)} aria-labelledby="spec-title">
      <h3 id="spec-title">Spec</h3>
      <Fields schema={props.entry.schema} value={draft} onChange={setDraft} problems={problems} locked={props.locked} />
      {stale !== null && (
        <div class="alert alert-error" role="alert">
          <p>
            This {r.type} changed since you opened it: the server has version {stale}, you edited version {r.version}. Nothing was saved.
          </p>
          <button type="button" class="small" onClick={() => void reload()}>
            Reload the current version
          </button>
        </div>
      )}
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      <div class="actions">
        <Action access={props.access} perm="resources.write" env={env} type="submit" class="primary" off={busy} onClick={() => undefined}>
          {busy ? "Saving…" : "Save"}
        </Action>
      </div>
    </form>
  );
}

/** Delete behind a confirmation; types that ask for one want the name typed. */
export function DeleteResource(props: { project: ProjectInfo; access: Access; entry: CatalogEntry | undefined; resource: Resource; env: string }) {
  const r = props.resource;
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function remove(typed: string) {
    setBusy(true);
    setError(null);
    try {
      const confirm = props.entry?.delete_confirm ? `&confirm=${encodeURIComponent(typed)}` : "";
      await api("DELETE", resourceApi(props.project.slug, r.type, r.name, props.env) + confirm);
      navigate(`/projects/${props.project.slug}/resources?environment=${encodeURIComponent(props.env)}`);
    } catch (e) {
      setError(errorText(e));
      setAsking(false);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card" aria-labelledby="delete-title">
      <h3 id="delete-title">Delete</h3>
      {error && <Alert>{error}</Alert>}
      {asking ? (
        <Confirm title={`Delete ${r.type} ${r.name}?`} yes="Yes, delete" danger busy={busy} typeToConfirm={props.entry?.delete_confirm ? r.name : undefined} onConfirm={(t) => void remove(t)} onCancel={() => setAsking(false)}>
          <p>
            {r.type === "database" ? "The database and its data are dropped on the plane. " : ""}
            {r.type === "bucket" ? "A local bucket's objects are removed with it. " : ""}
            This cannot be undone.
          </p>
        </Confirm>
      ) : (
        <Action access={props.access} perm="resources.destroy" env={envOfType(r.type, props.env)} class="danger" onClick={() => setAsking(true)}>
          Delete {r.type}…
        </Action>
      )}
    </section>
  );
}
