/**
 * A project's Translations section: its bundles with counts, the shared bundles it composes
 * (with its overrides and keys no longer shipped), package bundles attached at a version (move,
 * detach, attach another), and a form for a new bundle. `/translations/bundles/<id>` is the
 * editor grid of one bundle; `/translations/shared/<id>` a shared bundle with this project's
 * overrides beside the shared values.
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link } from "../ui";
import type { SectionProps } from "../frame";
import { Denied } from "../widgets/guard";
import { KIND_LABEL, actions, message, trPage, trPath, type BundleSummary, type ProjectTranslations, type SharedBundle } from "../widgets/translations";

export function Overview(props: SectionProps) {
  const slug = props.project.slug;
  const [data, setData] = useState<ProjectTranslations | null>(null);
  const [catalog, setCatalog] = useState<BundleSummary[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [ok, setOk] = useState<string | null>(null);
  const load = () =>
    Promise.all([api<ProjectTranslations>("GET", trPath(slug)), api<BundleSummary[]>("GET", "/api/v1/tms/bundles")])
      .then(([d, all]) => {
        setData(d);
        setCatalog(all);
      })
      .catch((e) => setError(message(e)));
  useEffect(() => void load(), [slug]);

  const act = actions(setError, setOk, load);

  if (!data) return error ? <Alert>{error}</Alert> : <p aria-busy="true">Loading translations…</p>;
  const write = props.access.can("translations.write", null);
  const attached = data.shared.filter((s) => s.version);
  const estate = data.shared.filter((s) => !s.version);
  return (
    <section aria-labelledby="tms-title">
      <h2 id="tms-title">Translations</h2>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}

      <h3>Bundles of this project</h3>
      {data.own.length === 0 ? (
        <p class="muted">No bundles yet. Create one below; an export is built on the bundle named “{slug}”.</p>
      ) : (
        <table aria-label="Bundles of this project">
          <thead>
            <tr>
              <th scope="col">Bundle</th>
              <th scope="col">Kind</th>
              <th scope="col">Source</th>
              <th scope="col">Strings</th>
              <th scope="col">Languages</th>
              <th scope="col">Namespaces</th>
              <th scope="col">Latest version</th>
            </tr>
          </thead>
          <tbody>
            {data.own.map((b) => (
              <tr key={b.id}>
                <td>
                  <Link href={trPage(slug, `/bundles/${b.id}`)}>{b.name}</Link>
                </td>
                <td>
                  <span class="tag">{KIND_LABEL[b.kind ?? "own"]}</span>
                </td>
                <td>{b.source_locale}</td>
                <td>{b.strings}</td>
                <td>{b.languages}</td>
                <td>{b.namespaces}</td>
                <td>{b.latest_version ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h3>Shared with every project</h3>
      {estate.length === 0 ? <p class="muted">No estate-shared bundles.</p> : <SharedTable slug={slug} rows={estate} />}

      <h3>Package bundles attached</h3>
      {attached.length === 0 ? <p class="muted">No package bundles attached.</p> : <SharedTable slug={slug} rows={attached} catalog={catalog} onAct={write ? act : undefined} />}
      {write ? (
        <>
          <AttachForm slug={slug} catalog={catalog.filter((b) => b.kind === "package" && !attached.some((a) => a.id === b.id))} onAct={act} />
          <NewBundleForm slug={slug} onAct={act} />
        </>
      ) : (
        <Denied access={props.access} perm="translations.write" env={null} what="Creating bundles and attaching package bundles" />
      )}
    </section>
  );
}

function SharedTable(props: { slug: string; rows: SharedBundle[]; catalog?: BundleSummary[]; onAct?: (what: () => Promise<unknown>, done: string) => Promise<void> }) {
  const [moveTo, setMoveTo] = useState<Record<number, string>>({});
  const packages = props.catalog !== undefined;
  // Moving and detaching are offered to those who may write (onAct given); the version shows to all.
  const movable = packages && props.onAct !== undefined;
  return (
    <table aria-label={packages ? "Attached package bundles" : "Estate-shared bundles"}>
      <thead>
        <tr>
          <th scope="col">Bundle</th>
          <th scope="col">Home project</th>
          {packages && <th scope="col">Version</th>}
          <th scope="col">Keys</th>
          <th scope="col">Overrides</th>
          {movable && <th scope="col">Move to</th>}
        </tr>
      </thead>
      <tbody>
        {props.rows.map((s) => {
          const latest = props.catalog?.find((b) => b.id === s.id)?.latest_version ?? "";
          const target = moveTo[s.id] ?? latest;
          return (
            <tr key={s.id}>
              <td>
                <Link href={trPage(props.slug, `/shared/${s.id}`)}>{s.name}</Link>
              </td>
              <td>{s.project}</td>
              {packages && <td>{s.version}</td>}
              <td>{s.keys}</td>
              <td>
                {s.overrides}
                {s.removed > 0 && <span class="tag tag-warn">{s.removed} removed</span>}
              </td>
              {movable && (
                <td>
                  <form
                    onSubmit={(e) => {
                      e.preventDefault();
                      void props.onAct!(() => api("POST", trPath(props.slug, "/attachments"), { bundle: s.id, version: target }), `${s.name} now follows ${target}.`);
                    }}
                  >
                    <input aria-label={`Version of ${s.name} to move to`} value={target} style={{ width: "7rem", display: "inline-block" }} onInput={(e) => setMoveTo({ ...moveTo, [s.id]: e.currentTarget.value })} />{" "}
                    <button type="submit" class="small">
                      Move
                    </button>{" "}
                    <button
                      type="button"
                      class="small danger"
                      onClick={() => void props.onAct!(() => api("DELETE", trPath(props.slug, `/attachments/${s.id}`)), `${s.name} was detached; its overrides are kept.`)}
                    >
                      Detach
                    </button>
                  </form>
                </td>
              )}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function AttachForm(props: { slug: string; catalog: BundleSummary[]; onAct: (what: () => Promise<unknown>, done: string) => Promise<void> }) {
  const [bundle, setBundle] = useState("");
  const [version, setVersion] = useState("");
  if (props.catalog.length === 0) return null;
  const chosen = props.catalog.find((b) => String(b.id) === bundle);
  return (
    <form
      class="grid-form"
      aria-label="Attach a package bundle"
      onSubmit={(e) => {
        e.preventDefault();
        const v = version || chosen?.latest_version || "";
        void props.onAct(() => api("POST", trPath(props.slug, "/attachments"), { bundle: Number(bundle), version: v }), `${chosen?.name ?? "The bundle"} is attached at ${v}.`);
      }}
    >
      <div>
        <label for="tms-attach-bundle">Package bundle</label>
        <select id="tms-attach-bundle" required value={bundle} onChange={(e) => setBundle(e.currentTarget.value)}>
          <option value="">Choose…</option>
          {props.catalog.map((b) => (
            <option key={b.id} value={String(b.id)}>
              {b.name} ({b.project})
            </option>
          ))}
        </select>
      </div>
      <div>
        <label for="tms-attach-version">Installed version</label>
        <input id="tms-attach-version" placeholder={chosen?.latest_version ?? "1.0.0"} value={version} onInput={(e) => setVersion(e.currentTarget.value)} />
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Attach
        </button>
      </div>
    </form>
  );
}

function NewBundleForm(props: { slug: string; onAct: (what: () => Promise<unknown>, done: string) => Promise<void> }) {
  const [name, setName] = useState(props.slug);
  const [kind, setKind] = useState<"own" | "estate" | "package">("own");
  const [pkg, setPkg] = useState("npm:");
  const [source, setSource] = useState("en");
  return (
    <form
      class="card grid-form"
      style={{ marginTop: "2rem" }}
      aria-label="New bundle"
      onSubmit={(e) => {
        e.preventDefault();
        const body = { name, estate: kind === "estate", package: kind === "package" ? pkg : null, source_locale: source };
        void props.onAct(() => api("POST", trPath(props.slug, "/bundles"), body), `Bundle ${kind === "package" ? pkg : name} created.`);
      }}
    >
      <h3 style={{ gridColumn: "1 / -1", marginTop: "0" }}>New bundle</h3>
      <p class="hint" style={{ gridColumn: "1 / -1" }}>
        Own: this project's texts. Estate-shared: every project composes it and may override its keys. Package: follows a package this project claimed (npm:@scope/name or cargo:name); the publish that ships its locale files registers each version.
      </p>
      <div>
        <label for="tms-new-kind">Kind</label>
        <select id="tms-new-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as typeof kind)}>
          <option value="own">Own</option>
          <option value="estate">Estate-shared</option>
          <option value="package">Package</option>
        </select>
      </div>
      {kind === "package" ? (
        <div>
          <label for="tms-new-package">Package</label>
          <input id="tms-new-package" required value={pkg} onInput={(e) => setPkg(e.currentTarget.value)} />
        </div>
      ) : (
        <div>
          <label for="tms-new-name">Name</label>
          <input id="tms-new-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
      )}
      <div>
        <label for="tms-new-source">Source locale</label>
        <input id="tms-new-source" required value={source} onInput={(e) => setSource(e.currentTarget.value)} />
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Create bundle
        </button>
      </div>
    </form>
  );
}
