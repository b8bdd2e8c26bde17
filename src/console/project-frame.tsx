/**
 * The frame of one project's pages (`/projects/<slug>/<section>/…`): its name, the section
 * navigation (a section the person's roles cannot read is not offered), and the page the section
 * chooses for the rest of the path (sections.tsx).
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { api, ApiError, type Me } from "./api";
import { Alert, Link } from "./ui";
import { accessOf } from "./access";
import type { ProjectInfo } from "./frame";
import { SECTIONS } from "./sections";

/** `segments` = the path after `/projects/`: `[slug, section?, ...rest]`. */
export function ProjectFrame(props: { me: Me; segments: string[]; query: URLSearchParams }) {
  const [slug = "", sectionId = "", ...rest] = props.segments;
  const [project, setProject] = useState<ProjectInfo | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    api<ProjectInfo>("GET", `/api/v1/projects/${encodeURIComponent(slug)}`)
      .then(setProject)
      .catch((e) => setError(e instanceof ApiError ? (e.status === 404 ? `There is no project "${slug}".` : e.message) : "Could not load the project."));
  useEffect(() => {
    setProject(null);
    setError(null);
    void load();
  }, [slug]);
  const archived = project?.archived ?? false;
  const access = useMemo(() => accessOf(props.me, slug, { archived }), [props.me, slug, archived]);

  if (error) return <Alert>{error}</Alert>;
  if (!project) return <p aria-busy="true">Loading project…</p>;
  const section = SECTIONS.find((s) => s.id === sectionId);
  const offered = SECTIONS.filter((s) => s.id === sectionId || !s.needs || access.canSomewhere(s.needs, project.environments));
  return (
    <>
      <div class="project-head">
        <h1>
          <Link href="/projects">Projects</Link> <span class="muted">/</span> {project.name}
          {project.archived && <span class="tag tag-warn">archived</span>}
        </h1>
        <nav class="tabs" aria-label="Project">
          {offered.map((s) => (
            <Link key={s.id} href={`/projects/${project.slug}${s.id ? `/${s.id}` : ""}`} class={s.id === sectionId ? "current" : undefined}>
              {s.label}
            </Link>
          ))}
        </nav>
      </div>
      {section ? section.page({ me: props.me, project, rest, query: props.query, access, reload: () => void load() }) : <Alert kind="info">This project has no page "{sectionId}".</Alert>}
    </>
  );
}
