/**
 * Projects: the list of the caller's projects (`/projects`) and, for people who manage the estate,
 * the form that creates one (an estate-wide member without it is told why). A project's pages are drawn by project-frame.tsx.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Me } from "../api";
import { Alert, Link, navigate } from "../ui";
import type { ProjectInfo } from "../frame";
import { accessOf } from "../access";
import { Denied } from "../widgets/guard";

export function ProjectList(props: { me: Me }) {
  const [projects, setProjects] = useState<ProjectInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    api<ProjectInfo[]>("GET", "/api/v1/projects")
      .then(setProjects)
      .catch((e) => setError(e instanceof ApiError ? e.message : "Could not load your projects."));
  useEffect(() => {
    void load();
  }, []);
  // Creating projects needs estate.manage (POST /api/v1/projects): judged as the server judges it.
  const access = accessOf(props.me, null);
  const canCreate = access.can("estate.manage", null);
  if (error) return <Alert>{error}</Alert>;
  if (!projects) return <p aria-busy="true">Loading projects…</p>;
  return (
    <section aria-labelledby="projects-title">
      <h1 id="projects-title">Projects</h1>
      {projects.length === 0 ? (
        <p class="muted">{canCreate ? "There is no project yet: create the first one below." : "You are not a member of any project yet. An estate owner adds you to one."}</p>
      ) : (
        <ul class="components">
          {projects.map((p) => (
            <li key={p.slug}>
              <span class="component-name">
                <Link href={`/projects/${p.slug}`}>{p.name}</Link>
              </span>
              <code class="muted">{p.slug}</code>
              {p.archived && <span class="tag tag-warn">archived</span>}
            </li>
          ))}
        </ul>
      )}
      {canCreate ? <NewProject /> : props.me.memberships.some((m) => m.project == null) && <Denied access={access} perm="estate.manage" env={null} what="Creating projects" />}
    </section>
  );
}

/** The form that creates a project (`POST /api/v1/projects`), then opens it. */
function NewProject() {
  const [slug, setSlug] = useState("");
  const [name, setName] = useState("");
  const [environments, setEnvironments] = useState("production, staging");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function create(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const envs = environments
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean);
      const created = await api<ProjectInfo>("POST", "/api/v1/projects", { slug: slug.trim(), name: name.trim() || slug.trim(), ...(envs.length > 0 ? { environments: envs } : {}) });
      navigate(`/projects/${created.slug}/sources`);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : "Could not create the project.");
    } finally {
      setBusy(false);
    }
  }
  return (
    <form class="card connect" onSubmit={(e) => void create(e)}>
      <h2>New project</h2>
      {error && <Alert>{error}</Alert>}
      <label for="project-slug">Slug</label>
      <input id="project-slug" value={slug} required pattern="[a-z0-9][a-z0-9\-]{0,62}" onInput={(e) => setSlug((e.target as HTMLInputElement).value)} />
      <p class="hint">Lower-case letters, digits and dashes: it names the project's repositories, images and packages.</p>
      <label for="project-name">Name</label>
      <input id="project-name" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      <label for="project-envs">Environments</label>
      <input id="project-envs" value={environments} onInput={(e) => setEnvironments((e.target as HTMLInputElement).value)} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Creating…" : "Create project"}
        </button>
      </div>
    </form>
  );
}
