/**
 * A project's Modules section: what its `modules/` tree publishes — each module's crate and npm
 * layer, the modules it requires, the projects consuming it and the tag version the list was
 * recorded at. `/modules/<name>` is one module: its halves with the line a consumer adds, the
 * versions each registry holds, its consumers, and its release notes rendered from Markdown,
 * newest first.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link, when } from "../ui";
import type { SectionProps } from "../frame";
import { renderMarkdown } from "../widgets/markdown";

interface ModuleConsumer {
  package: string;
  project: string;
  version: string;
}

interface ModuleSummary {
  name: string;
  description: string;
  crate_name: string | null;
  layer_name: string | null;
  requires: string[];
  consumers: ModuleConsumer[];
}

interface ProjectModules {
  modules: ModuleSummary[];
  version: string | null;
}

interface ModuleNotes {
  version: string;
  notes: string;
}

interface PackageDetail {
  versions: Array<{ version: string; published_at: string; publisher: string; yanked: boolean }>;
}

const message = (e: unknown) => (e instanceof ApiError ? e.message : "Could not load the modules.");

export function ModulesSection(props: SectionProps) {
  const [name] = props.rest;
  const [data, setData] = useState<ProjectModules | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setData(null);
    api<ProjectModules>("GET", `/api/v1/projects/${props.project.slug}/modules`)
      .then(setData)
      .catch((e) => setError(message(e)));
  }, [props.project.slug]);
  if (!data) return error ? <Alert>{error}</Alert> : <p aria-busy="true">Loading modules…</p>;
  if (name) {
    const m = data.modules.find((x) => x.name === name);
    return <ModuleDetail slug={props.project.slug} name={name} module={m ?? null} version={data.version} />;
  }
  return (
    <section aria-labelledby="modules-title">
      <h2 id="modules-title">Modules</h2>
      {data.version === null ? (
        <p class="muted">
          Nothing published yet. Push a tag <code>v1.0.0</code> to a repository with a <code>modules/</code> tree: each <code>modules/&lt;name&gt;/</code> publishes its crate (
          <code>Cargo.toml</code>) as <code>{props.project.slug}-&lt;name&gt;</code> and its npm layer (<code>package.json</code>), with its locale files and release notes.
        </p>
      ) : (
        <>
          <p>
            Published at <strong>v{data.version}</strong>.
          </p>
          <table aria-label="Modules of this project">
            <thead>
              <tr>
                <th scope="col">Module</th>
                <th scope="col">Crate</th>
                <th scope="col">Layer</th>
                <th scope="col">Requires</th>
                <th scope="col">Consumers</th>
              </tr>
            </thead>
            <tbody>
              {data.modules.map((m) => (
                <tr key={m.name}>
                  <th scope="row">
                    <Link href={`/projects/${props.project.slug}/modules/${encodeURIComponent(m.name)}`}>{m.name}</Link>
                    {m.description && <div class="hint">{m.description}</div>}
                  </th>
                  <td>{m.crate_name ? <code>{m.crate_name}</code> : <span class="muted">—</span>}</td>
                  <td>{m.layer_name ? <code>{m.layer_name}</code> : <span class="muted">—</span>}</td>
                  <td>{m.requires.length > 0 ? m.requires.join(", ") : <span class="muted">none</span>}</td>
                  <td>{m.consumers.length > 0 ? [...new Set(m.consumers.map((c) => c.project))].join(", ") : <span class="muted">none yet</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function ModuleDetail(props: { slug: string; name: string; module: ModuleSummary | null; version: string | null }) {
  const { slug, name, module: m } = props;
  const [notes, setNotes] = useState<ModuleNotes[] | null>(null);
  const [versions, setVersions] = useState<Record<string, PackageDetail["versions"]>>({});
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<ModuleNotes[]>("GET", `/api/v1/projects/${slug}/modules/${encodeURIComponent(name)}/notes`)
      .then(setNotes)
      .catch((e) => setError(message(e)));
    for (const [registry, pkg] of [
      ["cargo", m?.crate_name],
      ["npm", m?.layer_name],
    ] as const) {
      if (!pkg) continue;
      api<PackageDetail>("GET", `/api/v1/projects/${slug}/packages/${registry}/${encodeURIComponent(pkg)}`)
        .then((d) => setVersions((v) => ({ ...v, [registry]: d.versions })))
        .catch(() => undefined);
    }
  }, [slug, name]);
  return (
    <section aria-labelledby="module-title">
      <p>
        <Link href={`/projects/${slug}/modules`}>← Modules</Link>
      </p>
      <h2 id="module-title">{name}</h2>
      {error && <Alert>{error}</Alert>}
      {!m && <p class="muted">This module is not in the tree published at v{props.version}; its release notes are kept.</p>}
      {m && (
        <>
          {m.description && <p>{m.description}</p>}
          <dl class="facts">
            <dt>Crate</dt>
            <dd>{m.crate_name ? <code>{`${m.crate_name} = { version = "${props.version}", registry = "ops" }`}</code> : "none"}</dd>
            <dt>Layer</dt>
            <dd>{m.layer_name ? <code>{`npm install ${m.layer_name}@${props.version}`}</code> : "none"}</dd>
            <dt>Requires</dt>
            <dd>{m.requires.length > 0 ? m.requires.map((r, i) => <span key={r}>{i > 0 && ", "}<Link href={`/projects/${slug}/modules/${encodeURIComponent(r)}`}>{r}</Link></span>) : "none"}</dd>
          </dl>
          <h3>Versions</h3>
          <table aria-label={`Versions of ${name}`}>
            <thead>
              <tr>
                <th scope="col">Package</th>
                <th scope="col">Version</th>
                <th scope="col">Published</th>
                <th scope="col">By</th>
              </tr>
            </thead>
            <tbody>
              {(["cargo", "npm"] as const).flatMap((registry) =>
                (versions[registry] ?? []).map((v) => (
                  <tr key={`${registry}${v.version}`}>
                    <td>
                      <code>{registry === "cargo" ? m.crate_name : m.layer_name}</code>
                    </td>
                    <td>
                      {v.version}
                      {v.yanked && <span class="tag">yanked</span>}
                    </td>
                    <td>{when(v.published_at)}</td>
                    <td>{v.publisher}</td>
                  </tr>
                )),
              )}
            </tbody>
          </table>
          <h3>Consumers</h3>
          {m.consumers.length === 0 ? (
            <p class="muted">No project's newest default-branch build resolved this module yet.</p>
          ) : (
            <table aria-label={`Consumers of ${name}`}>
              <thead>
                <tr>
                  <th scope="col">Project</th>
                  <th scope="col">Package</th>
                  <th scope="col">Version</th>
                </tr>
              </thead>
              <tbody>
                {m.consumers.map((c) => (
                  <tr key={`${c.project}${c.package}${c.version}`}>
                    <td>{c.project}</td>
                    <td>
                      <code>{c.package}</code>
                    </td>
                    <td>{c.version}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
      <h3>Release notes</h3>
      {notes === null && !error && <p aria-busy="true">Loading notes…</p>}
      {notes?.length === 0 && <p class="muted">No CHANGELOG.md sections for this module.</p>}
      {notes?.map((n) => (
        <article key={n.version} aria-label={`Notes of ${n.version}`} class="card">
          <h4>{n.version}</h4>
          <div class="notes" dangerouslySetInnerHTML={{ __html: renderMarkdown(n.notes) }} />
        </article>
      ))}
    </section>
  );
}
