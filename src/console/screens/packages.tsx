/**
 * A project's Packages page (`/projects/<slug>/packages`): the npm packages and crates it claimed
 * (latest version, versions, yanked, size, last publisher), its images (newest digest, commit and
 * the environments running it), and the one-line set-up for each client. A package's page
 * (`/packages/<registry>/<name>`) lists its versions with digest, integrity, size, publisher and
 * yanked state, and its dist-tags.
 */
import { Fragment } from "preact";
import { api } from "../api";
import { Link, when } from "../ui";
import type { SectionProps } from "../frame";
import { CopyField } from "../widgets/copy-field";
import { Empty, Pending, Scroll, useLoad } from "../widgets/load";
import { bytes } from "../widgets/resources";
import { short } from "../widgets/services";

interface PackageSummary {
  name: string;
  registry: string;
  latest?: string | null;
  versions: number;
  yanked: number;
  bytes: number;
  published_at?: string | null;
  publisher?: string | null;
}

interface ProjectPackages {
  npm: PackageSummary[];
  cargo: PackageSummary[];
  images: Array<{ repository: string; service: string; digest: string; commit: string; environments: string[]; pushed_at?: string | null; size_bytes?: number | null }>;
  npm_registry_url: string;
  cargo_index_url: string;
  registry_host: string;
}

interface PackageDetail {
  name: string;
  registry: string;
  dist_tags: Record<string, string>;
  versions: Array<{ version: string; digest: string; integrity?: string | null; published_at: string; publisher: string; size_bytes: number; yanked: boolean }>;
}

const pkgPage = (slug: string, p: PackageSummary) => `/projects/${slug}/packages/${p.registry}/${encodeURIComponent(p.name)}`;

function PackageTable(props: { slug: string; rows: PackageSummary[]; caption: string }) {
  if (props.rows.length === 0) return <Empty>None claimed yet.</Empty>;
  return (
    <Scroll>
      <table class="packages">
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Latest</th>
            <th scope="col">Versions</th>
            <th scope="col">Size</th>
            <th scope="col">Published</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((p) => (
            <tr key={p.name}>
              <td>
                <Link href={pkgPage(props.slug, p)}>
                  <strong>{p.name}</strong>
                </Link>
              </td>
              <td>{p.latest ?? <span class="muted">nothing published</span>}</td>
              <td>
                {p.versions}
                {p.yanked > 0 && <span class="tag tag-warn">{p.yanked} yanked</span>}
              </td>
              <td>{bytes(p.bytes)}</td>
              <td>{p.published_at ? `${when(p.published_at)} by ${p.publisher ?? "?"}` : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scroll>
  );
}

/** The client set-up lines; `OPS_TOKEN` stands for a token with packages.read (or publish). */
function SetUp(props: { data: ProjectPackages }) {
  const d = props.data;
  const npmHost = new URL(d.npm_registry_url);
  const scopes = [...new Set(d.npm.map((p) => p.name.split("/")[0]).filter((s) => s?.startsWith("@")))];
  const registryHost = d.registry_host || npmHost.host;
  return (
    <section class="card setup" aria-labelledby="setup-title">
      <h3 id="setup-title">Set up a client</h3>
      <p class="hint">
        Replace <code>$OPS_TOKEN</code> with a token holding “Install packages” (or “Publish packages”): mint one on your <Link href="/account">account page</Link>.
      </p>
      <label>npm: .npmrc</label>
      <CopyField label="npm registry line" value={`${scopes[0] ?? "@ops"}:registry=${d.npm_registry_url}`} />
      <CopyField label="npm token line" value={`//${npmHost.host}${npmHost.pathname}:_authToken=\${OPS_TOKEN}`} />
      <label>cargo: .cargo/config.toml</label>
      <CopyField label="cargo registry line" value={`[registries.ops] index = "${d.cargo_index_url.startsWith("sparse+") ? "" : "sparse+"}${d.cargo_index_url}"`} />
      <CopyField label="cargo login line" value="cargo login --registry ops $OPS_TOKEN" />
      <label>Images</label>
      <CopyField label="docker login line" value={`echo $OPS_TOKEN | docker login ${registryHost} -u ops --password-stdin`} />
    </section>
  );
}

export function PackagesPage(props: SectionProps) {
  const slug = props.project.slug;
  const loaded = useLoad(() => api<ProjectPackages>("GET", `/api/v1/projects/${slug}/packages`), [slug]);
  if (!loaded.data) return <Pending what="packages" error={loaded.error} tall />;
  const d = loaded.data;
  return (
    <section aria-labelledby="packages-title">
      <h2 id="packages-title">Packages</h2>
      <h3>npm</h3>
      <PackageTable slug={slug} rows={d.npm} caption="npm packages" />
      <h3>Crates</h3>
      <PackageTable slug={slug} rows={d.cargo} caption="Crates" />
      <h3>Images</h3>
      {d.images.length === 0 ? (
        <Empty>No image pushed yet: a service's build pushes one.</Empty>
      ) : (
        <Scroll>
          <table class="images">
            <thead>
              <tr>
                <th scope="col">Repository</th>
                <th scope="col">Newest digest</th>
                <th scope="col">Commit</th>
                <th scope="col">Runs in</th>
                <th scope="col">Pushed</th>
                <th scope="col">Size</th>
              </tr>
            </thead>
            <tbody>
              {d.images.map((i) => (
                <tr key={i.repository}>
                  <td>
                    <Link href={`/projects/${slug}/deployments/${encodeURIComponent(i.service)}`}>{i.repository}</Link>
                  </td>
                  <td>
                    <code title={i.digest}>{short(i.digest)}</code>
                  </td>
                  <td>
                    <code>{i.commit.slice(0, 12) || "—"}</code>
                  </td>
                  <td>{i.environments.join(", ") || <span class="muted">not running</span>}</td>
                  <td>{when(i.pushed_at)}</td>
                  <td>{i.size_bytes ? bytes(i.size_bytes) : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      <SetUp data={d} />
    </section>
  );
}

export function PackagePage(props: SectionProps) {
  const slug = props.project.slug;
  const [registry = "", name = ""] = props.rest;
  const loaded = useLoad(() => api<PackageDetail>("GET", `/api/v1/projects/${slug}/packages/${encodeURIComponent(registry)}/${encodeURIComponent(name)}`), [slug, registry, name]);
  const heading = (
    <h2 id="package-title">
      <Link href={`/projects/${slug}/packages`}>Packages</Link> <span class="muted">/</span> {registry} <span class="muted">/</span> {name}
    </h2>
  );
  if (!loaded.data) {
    return (
      <section aria-labelledby="package-title">
        {heading}
        <Pending what={name} error={loaded.error} tall />
      </section>
    );
  }
  const d = loaded.data;
  const tags = Object.entries(d.dist_tags);
  return (
    <section aria-labelledby="package-title">
      {heading}
      {registry === "npm" && (
        <p>
          Install: <CopyField label="install command" value={`npm install ${d.name}`} />
        </p>
      )}
      {registry === "cargo" && (
        <p>
          Add: <CopyField label="add command" value={`cargo add ${d.name} --registry ops`} />
        </p>
      )}
      {tags.length > 0 && (
        <dl class="facts">
          {tags.map(([tag, version]) => (
            <Fragment key={tag}>
              <dt>{tag}</dt>
              <dd>{version}</dd>
            </Fragment>
          ))}
        </dl>
      )}
      {d.versions.length === 0 ? (
        <Empty>The name is claimed; nothing is published yet.</Empty>
      ) : (
        <Scroll>
          <table class="versions">
            <caption class="visually-hidden">Versions of {d.name}</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Published</th>
                <th scope="col">By</th>
                <th scope="col">Size</th>
                <th scope="col">SHA-256</th>
              </tr>
            </thead>
            <tbody>
              {d.versions.map((v) => (
                <tr key={v.version} class={v.yanked ? "revoked" : undefined}>
                  <td>
                    <strong>{v.version}</strong>
                    {v.yanked && <span class="tag tag-warn">yanked</span>}
                  </td>
                  <td>{when(v.published_at)}</td>
                  <td>{v.publisher}</td>
                  <td>{bytes(v.size_bytes)}</td>
                  <td>
                    <code title={v.integrity ?? undefined}>{v.digest.slice(0, 16)}…</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
    </section>
  );
}
