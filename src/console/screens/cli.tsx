/**
 * The CLI page (`/cli`): the current release of the `ops` CLI for each target, with its digest
 * and download; an install line for one of the person's projects (a single-use install code,
 * shown once, that the installer redeems for a token of the person's role there); and, for people
 * who manage the estate, publishing a release (the binary uploaded as the request body).
 */
import { useState } from "preact/hooks";
import { api, ApiError, type Me } from "../api";
import { Alert, when } from "../ui";
import { accessOf } from "../access";
import type { ProjectInfo } from "../frame";
import { Denied } from "../widgets/guard";
import { CLI_TARGETS as TARGETS, InstallCliCard, currentRelease as current } from "../widgets/install-cli";
import { Pending, Scroll, errorText, useLoad } from "../widgets/load";
import { bytes } from "../widgets/resources";
import { SelectField } from "../widgets/select-field";

export function CliPage(props: { me: Me }) {
  const access = accessOf(props.me, null);
  const canRead = access.can("project.read", null);
  const loaded = useLoad(async () => ({ releases: canRead ? await Promise.all(TARGETS.map(current)) : [], projects: await api<ProjectInfo[]>("GET", "/api/v1/projects") }), [canRead]);
  if (!loaded.data) {
    return (
      <section aria-labelledby="cli-title">
        <h1 id="cli-title">The ops CLI</h1>
        <Pending what="releases" error={loaded.error} tall />
      </section>
    );
  }
  const { releases, projects } = loaded.data;
  return (
    <section aria-labelledby="cli-title">
      <h1 id="cli-title">The ops CLI</h1>
      <h2>Current releases</h2>
      {!canRead ? (
        <Denied access={access} perm="project.read" env={null} what="Downloading the CLI" />
      ) : (
        <Scroll>
          <table class="releases">
            <thead>
              <tr>
                <th scope="col">Target</th>
                <th scope="col">Version</th>
                <th scope="col">Published</th>
                <th scope="col">Size</th>
                <th scope="col">SHA-256</th>
              </tr>
            </thead>
            <tbody>
              {TARGETS.map((target, i) => {
                const r = releases[i];
                return (
                  <tr key={target}>
                    <td>{target}</td>
                    {r ? (
                      <>
                        <td>
                          <a href={r.download}>{r.version}</a>
                        </td>
                        <td>{when(r.published_at)}</td>
                        <td>{bytes(r.size_bytes)}</td>
                        <td>
                          <code title={r.digest}>{r.digest.slice(0, 16)}…</code>
                        </td>
                      </>
                    ) : (
                      <td colSpan={4} class="muted">
                        nothing published
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </Scroll>
      )}
      {canRead && (
        <p class="hint">
          The newest release per target. Older versions stay downloadable at <code>/api/v1/cli/releases/&lt;version&gt;/&lt;target&gt;/download</code>; the API keeps no list of them to show here.
        </p>
      )}
      <InstallCliCard projects={projects.filter((p) => !p.archived)} published={canRead ? releases.some((r) => r !== null) : undefined} />
      {access.can("estate.manage", null) ? <Publish onDone={() => void loaded.reload()} /> : null}
    </section>
  );
}

function Publish(props: { onDone(): void }) {
  const [version, setVersion] = useState("");
  const [target, setTarget] = useState(TARGETS[0] as string);
  const [ok, setOk] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function publish(e: Event) {
    e.preventDefault();
    const input = (e.currentTarget as HTMLFormElement).elements.namedItem("binary") as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    setBusy(true);
    setError(null);
    setOk(null);
    try {
      const res = await fetch(`/api/v1/cli/releases?version=${encodeURIComponent(version.trim())}&target=${encodeURIComponent(target)}`, { method: "POST", body: file, headers: { "content-type": "application/octet-stream", accept: "application/json" }, credentials: "same-origin" });
      const body = (await res.json().catch(() => ({}))) as { message?: string; version?: string };
      if (!res.ok) throw new ApiError(res.status, "error", body.message ?? `The server answered ${res.status}.`);
      setOk(`Published ${body.version} for ${target}.`);
      input.value = "";
      props.onDone();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }
  return (
    <form class="card grid-form" onSubmit={(e) => void publish(e)} aria-labelledby="publish-title">
      <h2 id="publish-title">Publish a release</h2>
      <div>
        <label for="release-version">Version</label>
        <input id="release-version" required maxLength={64} value={version} onInput={(e) => setVersion(e.currentTarget.value)} />
      </div>
      <div>
        <SelectField id="release-target" label="Target" value={target} options={TARGETS} onChange={setTarget} />
      </div>
      <div>
        <label for="release-binary">Binary</label>
        <input id="release-binary" name="binary" type="file" required />
      </div>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Publishing…" : "Publish"}
        </button>
      </div>
    </form>
  );
}
