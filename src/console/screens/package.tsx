/**
 * A package's page (`/projects/<slug>/packages/<registry>/<name>`): its versions with digest,
 * integrity, size, publisher and yanked state, its dist-tags and the install line. A crate's
 * versions are yanked and unyanked here through the cargo registry's own routes (the API offers
 * nothing else for it; npm has no yank); a claim with nothing published can be released.
 */
import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link, navigate, when } from "../ui";
import type { SectionProps } from "../frame";
import { CopyField } from "../widgets/copy-field";
import { Action } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { Empty, Pending, Scroll, errorText, useLoad } from "../widgets/load";
import { bytes } from "../widgets/resources";
import { packageApi, type PackageDetail, type PackageVersion } from "../widgets/packages";

/** The cargo Web API route that yanks (DELETE) or unyanks (PUT) one version. */
function yankApi(name: string, version: string, yank: boolean): [string, string] {
  const base = `/cargo/api/v1/crates/${encodeURIComponent(name)}/${encodeURIComponent(version)}`;
  return yank ? ["DELETE", `${base}/yank`] : ["PUT", `${base}/unyank`];
}

export function PackagePage(props: SectionProps) {
  const slug = props.project.slug;
  const [registry = "", name = ""] = props.rest;
  const loaded = useLoad(() => api<PackageDetail>("GET", packageApi(slug, registry, name)), [slug, registry, name]);
  const [busy, setBusy] = useState<string | null>(null);
  const [releasing, setReleasing] = useState(false);
  const [ok, setOk] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function setYanked(v: PackageVersion, yank: boolean) {
    setBusy(v.version);
    setError(null);
    setOk(null);
    try {
      const [method, path] = yankApi(name, v.version, yank);
      await api(method, path);
      await loaded.reload();
      setOk(yank ? `${v.version} is yanked: new lockfiles stop choosing it; lockfiles that name it keep working.` : `${v.version} is published again.`);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(null);
    }
  }

  async function release() {
    setBusy("claim");
    setError(null);
    try {
      await api("DELETE", packageApi(slug, registry, name));
      navigate(`/projects/${slug}/packages`);
    } catch (e) {
      setError(errorText(e));
      setReleasing(false);
    } finally {
      setBusy(null);
    }
  }

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
  const crate = registry === "cargo";
  return (
    <section aria-labelledby="package-title">
      {heading}
      {registry === "npm" && (
        <p>
          Install: <CopyField label="install command" value={`npm install ${d.name}`} />
        </p>
      )}
      {crate && (
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
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      {d.versions.length === 0 ? (
        <>
          <Empty>The name is claimed; nothing is published yet.</Empty>
          {releasing ? (
            <Confirm title={`Release the claim on ${d.name}?`} yes="Yes, release" danger busy={busy === "claim"} onConfirm={() => void release()} onCancel={() => setReleasing(false)}>
              <p>Any project may claim the name afterwards.</p>
            </Confirm>
          ) : (
            <Action access={props.access} perm="packages.publish" env={null} class="danger" onClick={() => setReleasing(true)}>
              Release the claim…
            </Action>
          )}
        </>
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
                {crate && (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                )}
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
                    <code title={v.integrity ?? v.digest}>{v.digest.slice(0, 16)}…</code>
                  </td>
                  {crate && (
                    <td class="row-actions">
                      <Action access={props.access} perm="packages.publish" env={null} class="small" off={busy !== null} label={`${v.yanked ? "Unyank" : "Yank"} ${v.version}`} onClick={() => void setYanked(v, !v.yanked)}>
                        {v.yanked ? "Unyank" : "Yank"}
                      </Action>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {registry === "npm" && d.versions.length > 0 && <p class="hint">An npm version stays as published: the registry has no yank, and a version is never republished.</p>}
    </section>
  );
}
