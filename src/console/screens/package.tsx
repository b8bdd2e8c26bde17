/**
 * A package's page (`/projects/<slug>/packages/<registry>/<name>`): its versions with digest,
 * integrity, size, publisher and yanked state, its dist-tags and the install line. A crate's
 * versions are yanked and unyanked here through the cargo registry's own routes (the API offers
 * nothing else for it; npm has no yank), and an npm package's dist-tags set and removed through
 * npm's dist-tag routes; a claim with nothing published can be released.
 */
import { useState } from "preact/hooks";
import type { Access } from "../access";
import { api } from "../api";
import { Alert, Link, navigate, when, ActionsHeader } from "../ui";
import type { SectionProps } from "../frame";
import { CopyField } from "../widgets/copy-field";
import { Action } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { Empty, Pending, Scroll, errorText, useLoad } from "../widgets/load";
import { bytes } from "../widgets/resources";
import { packageApi, type PackageDetail, type PackageVersion } from "../widgets/packages";
import { SelectField } from "../widgets/select-field";

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
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      {registry === "npm" && d.versions.length > 0 && <DistTags name={d.name} tags={tags} versions={d.versions.map((v) => v.version)} access={props.access} onChanged={async (what) => (await loaded.reload(), setOk(what))} />}
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
                  <ActionsHeader />
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

/** The npm dist-tag route of `tag` (PUT sets it to the version sent as a JSON string, DELETE removes it). */
function distTagApi(name: string, tag: string): string {
  return `/npm/-/package/${encodeURIComponent(name)}/dist-tags/${encodeURIComponent(tag)}`;
}

/** An npm package's dist-tags: each with its version and Remove (not `latest`), and a tag pointed at a version. */
function DistTags(props: { name: string; tags: Array<[string, string]>; versions: string[]; access: Access; onChanged(what: string): Promise<void> }) {
  const [tag, setTag] = useState("");
  const [version, setVersion] = useState(props.versions[0] ?? "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function change(method: "PUT" | "DELETE", name: string, what: string, to?: string) {
    setBusy(true);
    setError(null);
    try {
      await api(method, distTagApi(props.name, name), to);
      setTag("");
      await props.onChanged(what);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card" aria-labelledby="tags-title">
      <h3 id="tags-title">Dist-tags</h3>
      {error && <Alert>{error}</Alert>}
      <table class="dist-tags">
        <caption class="visually-hidden">Dist-tags of {props.name}</caption>
        <tbody>
          {props.tags.map(([t, v]) => (
            <tr key={t}>
              <th scope="row">{t}</th>
              <td>{v}</td>
              <td class="row-actions">
                <Action access={props.access} perm="packages.publish" env={null} class="small" off={t === "latest" ? "latest always names a version: point it at another one instead." : busy} label={`Remove the tag ${t}`} onClick={() => void change("DELETE", t, `The tag ${t} is removed.`)}>
                  Remove
                </Action>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.access.can("packages.publish", null) && (
        <form class="grid-form" onSubmit={(e) => (e.preventDefault(), void change("PUT", tag.trim(), `${tag.trim()} now names ${version}.`, version))}>
          <div>
            <label for="tag-name">Tag</label>
            <input id="tag-name" required autocomplete="off" spellcheck={false} placeholder="beta" value={tag} onInput={(e) => setTag(e.currentTarget.value)} />
          </div>
          <div>
            <SelectField id="tag-version" label="Version" value={version} options={props.versions} onChange={setVersion} />
          </div>
          <div class="actions">
            <Action access={props.access} perm="packages.publish" env={null} type="submit" class="primary" off={busy || tag.trim() === ""} onClick={() => undefined}>
              Set tag
            </Action>
          </div>
        </form>
      )}
    </section>
  );
}
