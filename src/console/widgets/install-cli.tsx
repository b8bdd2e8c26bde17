/**
 * "Install the CLI": makes a single-use install code for one project and shows the line the
 * server composed for it (`install_command`, docs/decisions/0360). Shown on the CLI page, the
 * Account page and each project's overview.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert } from "../ui";
import { CopyField } from "./copy-field";
import { errorText } from "./load";
import { SelectField } from "./select-field";

interface InstallCode {
  code: string;
  expires_in: number;
  role: string;
  install_command: string;
}

/** The card; with one project it names it, with several it offers a choice. */
export function InstallCliCard(props: { projects: Array<{ slug: string; name: string }> }) {
  const [slug, setSlug] = useState(props.projects[0]?.slug ?? "");
  const [made, setMade] = useState<InstallCode | null>(null);
  const [error, setError] = useState<string | null>(null);
  async function make(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      setMade(await api<InstallCode>("POST", "/api/v1/cli/install-codes", { project: slug }));
    } catch (err) {
      setError(errorText(err));
    }
  }
  if (props.projects.length === 0) return <p class="muted">The CLI is installed for one of your projects; you have none yet.</p>;
  const only = props.projects.length === 1 ? props.projects[0] : null;
  return (
    <form class="card connect" onSubmit={(e) => void make(e)} aria-labelledby="install-title">
      <h2 id="install-title">Install the CLI</h2>
      {only ? (
        <p>
          For <strong>{only.name}</strong>.
        </p>
      ) : (
        <SelectField id="install-project" label="Project" value={slug} options={props.projects.map((p) => [p.slug, p.name] as const)} onChange={setSlug} />
      )}
      <p class="hint">
        The command installs <code>ops</code> in <code>~/.local/bin</code> and signs it in with a token of your role in that project. It works once, for {made ? Math.round(made.expires_in / 60) : 10} minutes.
      </p>
      {error && <Alert>{error}</Alert>}
      {made && (
        <div class="alert alert-ok" role="status">
          <p>Run this in a terminal on the machine (shown once; the token carries your {made.role} role):</p>
          <CopyField label="Install command" value={made.install_command} />
        </div>
      )}
      <div class="actions">
        <button type="submit" class="primary">
          Make an install command
        </button>
      </div>
    </form>
  );
}
