/**
 * A project's Settings page (`/projects/<slug>/settings`): its name and environments, and
 * archiving (an archived project takes no changes until it is unarchived). Removing an
 * environment drops its environment policies, which the form says before it is saved.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert } from "../ui";
import type { SectionProps, ProjectInfo } from "../frame";
import { Action, Denied } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { errorText } from "../widgets/load";

export function SettingsPage(props: SectionProps) {
  const p = props.project;
  const [name, setName] = useState(p.name);
  const [envs, setEnvs] = useState(p.environments.join(", "));
  const [ok, setOk] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [archiving, setArchiving] = useState(false);
  const allowed = props.access.can("project.settings", null);
  const list = envs
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
  const dropped = p.environments.filter((e) => !list.includes(e));

  async function save(body: Record<string, unknown>, done: string) {
    setBusy(true);
    setError(null);
    setOk(null);
    try {
      const saved = await api<ProjectInfo>("PATCH", `/api/v1/projects/${p.slug}`, body);
      setName(saved.name);
      setEnvs(saved.environments.join(", "));
      setOk(done);
      props.reload();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
      setArchiving(false);
    }
  }

  return (
    <section aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      {allowed && p.archived ? (
        <p class="muted denied">Changing the name and environments: unarchive the project first (below).</p>
      ) : allowed ? (
        <form class="card connect" onSubmit={(e) => (e.preventDefault(), void save({ name: name.trim(), environments: list }, "The project's settings are saved."))}>
          <h3>Name and environments</h3>
          <label for="settings-slug">Slug</label>
          <input id="settings-slug" value={p.slug} readOnly aria-describedby="settings-slug-hint" />
          <p class="hint" id="settings-slug-hint">
            Never changes: it names the project's repositories, images and packages.
          </p>
          <label for="settings-name">Name</label>
          <input id="settings-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <label for="settings-envs">Environments</label>
          <input id="settings-envs" required value={envs} onInput={(e) => setEnvs(e.currentTarget.value)} aria-describedby="settings-envs-hint" />
          <p class="hint" id="settings-envs-hint">
            Comma-separated, in the order pages list them.
            {dropped.length > 0 && <strong> Saving removes {dropped.join(", ")} and the environment policies set there.</strong>}
          </p>
          <div class="actions">
            <button type="submit" class="primary" disabled={busy}>
              Save
            </button>
          </div>
        </form>
      ) : (
        <Denied access={props.access} perm="project.settings" env={null} what="Changing the settings" />
      )}
      <section class="card" aria-labelledby="archive-title">
        <h3 id="archive-title">{p.archived ? "Archived" : "Archive"}</h3>
        <p>{p.archived ? "This project is archived: it takes no changes until it is unarchived." : "An archived project keeps everything but takes no changes until it is unarchived."}</p>
        {archiving ? (
          <Confirm title={`Archive ${p.name}?`} yes="Yes, archive" danger busy={busy} onConfirm={() => void save({ archived: true }, "The project is archived.")} onCancel={() => setArchiving(false)}>
            <p>Resources, secrets, members and builds stay; nothing can be changed until someone unarchives it.</p>
          </Confirm>
        ) : (
          <Action access={props.access} perm="project.settings" env={null} class={p.archived ? "primary" : "danger"} off={busy} onClick={() => (p.archived ? void save({ archived: false }, "The project is unarchived.") : setArchiving(true))}>
            {p.archived ? "Unarchive" : "Archive…"}
          </Action>
        )}
      </section>
    </section>
  );
}
