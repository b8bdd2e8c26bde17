/**
 * The frame of one resource's page (`/projects/<slug>/resources/<type>/<name>?environment=…`):
 * it reads the resource and its catalog entry, draws the heading with the way back to the list,
 * and hands both to the type's page; "Refresh status" observes the resource now.
 */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link } from "../ui";
import type { SectionProps } from "../frame";
import { Action } from "./guard";
import { Pending, errorText, useLoad } from "./load";
import { envOfType, resourceApi, type CatalogEntry, type Resource } from "./resources";

export interface ResourceView {
  resource: Resource;
  entry: CatalogEntry | undefined;
  env: string;
  /** Read the resource again. */
  reload(): Promise<void>;
  /** Show a resource an action answered with. */
  replace(r: Resource): void;
}

export function ResourceFrame(props: SectionProps & { children(view: ResourceView): ComponentChildren }) {
  const [type = "", name = ""] = props.rest;
  const slug = props.project.slug;
  const env = props.query.get("environment") ?? props.project.environments[0] ?? "production";
  const loaded = useLoad(() => Promise.all([api<CatalogEntry[]>("GET", "/api/v1/catalog"), api<Resource>("GET", resourceApi(slug, type, name, env))]), [slug, type, name, env]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const back = `/projects/${slug}/resources?environment=${encodeURIComponent(env)}`;

  async function observe() {
    setBusy(true);
    setError(null);
    try {
      const fresh = await api<Resource>("POST", type === "bucket" ? `/api/v1/projects/${slug}/resources/bucket/${encodeURIComponent(name)}/check` : resourceApi(slug, type, name, env, "/observe"));
      loaded.set([loaded.data?.[0] ?? [], fresh]);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  const heading = (
    <h2 id="resource-title">
      <Link href={back}>Resources</Link> <span class="muted">/</span> {type} <span class="muted">/</span> {name}
      {type !== "bucket" && <span class="tag">{env}</span>}
    </h2>
  );
  if (!loaded.data) {
    return (
      <section aria-labelledby="resource-title">
        {heading}
        <Pending what={`${type} ${name}`} error={loaded.error} tall />
      </section>
    );
  }
  const [catalog, resource] = loaded.data;
  const view: ResourceView = {
    resource,
    entry: catalog.find((c) => c.type === type),
    env,
    reload: loaded.reload,
    replace: (r) => loaded.set([catalog, r]),
  };
  return (
    <section aria-labelledby="resource-title">
      {heading}
      {view.entry && <p class="muted">{view.entry.description}</p>}
      <div class="actions top-actions">
        <Action access={props.access} perm="resources.read" env={envOfType(type, env)} off={busy} onClick={() => void observe()}>
          {type === "bucket" ? (busy ? "Checking…" : "Check now") : busy ? "Refreshing…" : "Refresh status"}
        </Action>
      </div>
      {error && <Alert>{error}</Alert>}
      {props.children(view)}
    </section>
  );
}
