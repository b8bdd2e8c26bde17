/**
 * A project's Packages page (`/projects/<slug>/packages`): the npm packages and crates it claimed
 * (latest version, versions, yanked, size, last publisher), claiming a new name for either
 * registry, its images (newest digest, commit and the environments running it, each repository
 * linking to its digests), and the one-line set-up for each client.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link, when } from "../ui";
import type { Access } from "../access";
import type { SectionProps } from "../frame";
import { CopyField } from "../widgets/copy-field";
import { Action, Denied } from "../widgets/guard";
import { Empty, Pending, Scroll, errorText, useLoad } from "../widgets/load";
import { bytes } from "../widgets/resources";
import { short } from "../widgets/services";
import { CLAIM_REGISTRIES, imagePage, packageApi, packagePage, type PackageSummary, type ProjectPackages } from "../widgets/packages";
import { SelectField } from "../widgets/select-field";

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
                <Link href={packagePage(props.slug, p.registry, p.name)}>
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

/**
 * Claim a name for the project in one registry: publishing under it is then this project's alone.
 * A name another project holds is refused with the server's message (409).
 */
function ClaimName(props: { slug: string; access: Access; onClaimed(what: string): void }) {
  const [registry, setRegistry] = useState<string>("npm");
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!props.access.can("packages.publish", null)) return <Denied access={props.access} perm="packages.publish" env={null} what="Claiming a package name" />;
  async function claim(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const claimed = await api<PackageSummary>("PUT", packageApi(props.slug, registry, name.trim()));
      setName("");
      props.onClaimed(`The ${registry} name ${claimed.name} is this project's: publish under it with a token of this project.`);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }
  return (
    <form class="card grid-form claim-form" onSubmit={(e) => void claim(e)} aria-labelledby="claim-title">
      <h3 id="claim-title">Claim a name</h3>
      <div>
        <SelectField id="claim-registry" label="Registry" value={registry} options={CLAIM_REGISTRIES} onChange={setRegistry} />
      </div>
      <div>
        <label for="claim-name">Package name</label>
        <input id="claim-name" required autocomplete="off" spellcheck={false} placeholder={registry === "npm" ? "@scope/name" : "crate-name"} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <p class="hint">A name is one project's: only its members publish under it. A claim with nothing published can be released from the package's page.</p>
      {error && <Alert>{error}</Alert>}
      <div class="actions">
        <Action access={props.access} perm="packages.publish" env={null} type="submit" class="primary" off={busy || name.trim() === ""} onClick={() => undefined}>
          {busy ? "Claiming…" : "Claim"}
        </Action>
      </div>
    </form>
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
  const [ok, setOk] = useState<string | null>(null);
  if (!loaded.data) return <Pending what="packages" error={loaded.error} tall />;
  const d = loaded.data;
  return (
    <section aria-labelledby="packages-title">
      <h2 id="packages-title">Packages</h2>
      {ok && <Alert kind="ok">{ok}</Alert>}
      <h3>npm</h3>
      <PackageTable slug={slug} rows={d.npm} caption="npm packages" />
      <h3>Crates</h3>
      <PackageTable slug={slug} rows={d.cargo} caption="Crates" />
      <ClaimName slug={slug} access={props.access} onClaimed={(what) => void loaded.reload().then(() => setOk(what))} />
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
                    <Link href={imagePage(slug, i.service)}>{i.repository}</Link>
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
