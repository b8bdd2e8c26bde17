/**
 * Projects: the list of the caller's projects (`/projects`) and the frame of one project's pages
 * (`/projects/<slug>/<section>/…`): its name, an environment-independent section navigation, and
 * the section's screen (see sections.tsx).
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Me } from "../api";
import { Alert, Link, navigate } from "../ui";
import { SECTIONS, type ProjectInfo } from "../sections";

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
  // Creating projects is an estate permission: offered to people with an estate-wide role (the server decides).
  const estateWide = props.me.memberships.some((m) => m.project == null);
  if (error) return <Alert>{error}</Alert>;
  if (!projects) return <p aria-busy="true">Loading projects…</p>;
  return (
    <section aria-labelledby="projects-title">
      <h1 id="projects-title">Projects</h1>
      {projects.length === 0 ? (
        <p class="muted">{estateWide ? "There is no project yet: create the first one below." : "You are not a member of any project yet. An estate owner adds you to one."}</p>
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
      {estateWide && <NewProject />}
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

/** `segments` = the path after `/projects/`: `[slug, section?, ...rest]`. */
export function ProjectFrame(props: { me: Me; segments: string[]; query: URLSearchParams }) {
  const [slug, sectionId = "", ...rest] = props.segments;
  const [project, setProject] = useState<ProjectInfo | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setProject(null);
    setError(null);
    api<ProjectInfo>("GET", `/api/v1/projects/${encodeURIComponent(slug as string)}`)
      .then(setProject)
      .catch((e) => setError(e instanceof ApiError ? (e.status === 404 ? `There is no project "${slug}".` : e.message) : "Could not load the project."));
  }, [slug]);

  const section = SECTIONS.find((s) => s.id === sectionId);
  if (error) return <Alert>{error}</Alert>;
  if (!project) return <p aria-busy="true">Loading project…</p>;
  const Screen = section?.component;
  return (
    <>
      <div class="project-head">
        <h1>
          <Link href="/projects">Projects</Link> <span class="muted">/</span> {project.name}
          {project.archived && <span class="tag tag-warn">archived</span>}
        </h1>
        <nav class="tabs" aria-label="Project">
          {SECTIONS.map((s) => (
            <Link key={s.id} href={`/projects/${project.slug}${s.id ? `/${s.id}` : ""}`} class={s.id === sectionId ? "current" : undefined}>
              {s.label}
            </Link>
          ))}
        </nav>
      </div>
      {Screen ? <Screen me={props.me} project={project} rest={rest} query={props.query} /> : <Alert kind="info">This project has no page "{sectionId}".</Alert>}
    </>
  );
}
