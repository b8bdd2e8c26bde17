/**
 * "Install the CLI": makes a single-use install code for one project and shows the line the
 * server composed for it (`install_command`, docs/decisions/0360). Shown on the CLI page, the
 * Account page and each project's overview. When no target has a release (a server run from
 * source publishes none), the card says so beside the line: the installer would stop with a 503
 * and the steps to publish one, and the code stays usable for its 10 minutes once one is.
 */
import { useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link } from "../ui";
import { CopyField } from "./copy-field";
import { errorText } from "./load";
import { SelectField } from "./select-field";

/** The targets ops builds the CLI for (the server's list: domains/cli/releases.ts KNOWN_TARGETS). */
export const CLI_TARGETS = ["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl", "darwin-x64", "darwin-arm64", "windows-x64"] as const;

export interface CliRelease {
  version: string;
  target: string;
  digest: string;
  size_bytes: number;
  published_at: string;
  download: string;
}

/** The current release for `target`, or null when nothing is published for it. */
export async function currentRelease(target: string): Promise<CliRelease | null> {
  try {
    return await api<CliRelease>("GET", `/api/v1/cli/release?target=${target}`);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 422)) return null;
    throw e;
  }
}

/** Whether any target has a release: null when the person may not read them (or the check failed), so nothing is claimed. */
async function anyRelease(): Promise<boolean | null> {
  try {
    return (await Promise.all(CLI_TARGETS.map(currentRelease))).some((r) => r !== null);
  } catch {
    return null;
  }
}

interface InstallCode {
  code: string;
  expires_in: number;
  role: string;
  install_command: string;
}

/**
 * The card; with one project it names it, with several it offers a choice. `published`: whether any
 * release exists, when the page already knows (the CLI page lists them); else the card asks.
 */
export function InstallCliCard(props: { projects: Array<{ slug: string; name: string }>; published?: boolean }) {
  const [slug, setSlug] = useState(props.projects[0]?.slug ?? "");
  const [made, setMade] = useState<InstallCode | null>(null);
  const [published, setPublished] = useState<boolean | null>(null);
  const [error, setError] = useState<string | null>(null);
  async function make(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      const [code, any] = await Promise.all([api<InstallCode>("POST", "/api/v1/cli/install-codes", { project: slug }), props.published ?? anyRelease()]);
      setPublished(any);
      setMade(code);
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
      {made && published === false && (
        <Alert kind="info">
          No CLI release is published on this server yet, so this command will stop and say how to publish one. Someone who manages the estate publishes one on the <Link href="/cli">CLI page</Link> (or
          with <code>ops admin publish-cli</code> on the server's host); the same command then works until it expires.
        </Alert>
      )}
      <div class="actions">
        <button type="submit" class="primary">
          Make an install command
        </button>
      </div>
    </form>
  );
}
