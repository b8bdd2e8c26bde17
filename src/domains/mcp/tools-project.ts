/**
 * Tools about the caller and a project as a whole: who am I, which projects, the audit log, the
 * packages, and translation entries. Project-level routes evaluate without environment policies,
 * as their routes do.
 */
import { actorOf } from "../../core/authz/principal";
import { listAudit, listProjects, me } from "../access/service";
import { projectImages, projectPackages } from "../registries/service";
import { listEntries, setEntry } from "../translations/service";
import { READS, changes, count, type ToolSpec } from "./tool-kit";

const PROJECT = { slug: "project" };
const describe = { project: "Project slug" };

interface AuditRow {
  action: string;
  actor: string;
  outcome: string;
  reason: string;
  target: string;
}

export const PROJECT_TOOLS: ToolSpec[] = [
  {
    name: "whoami",
    title: "Who am I",
    description: "The operator this client acts as, its memberships and roles, the environment policies that narrow them, and the token's scopes and project pin.",
    route: "GET /api/v1/me",
    permission: "authenticated",
    annotations: READS,
    run: (c) => me(c.core, c.auth),
    text: (r: ReturnType<typeof me>) =>
      `${r.actor} (${r.display_name}) via ${r.via}${r.token_project ? `, pinned to ${r.token_project}` : ""}; ${count(r.memberships.length, "membership")}: ${r.memberships.map((m) => `${m.role_slug} in ${m.project ?? "every project"}`).join(", ") || "none"}.`,
  },
  {
    name: "list_projects",
    title: "List projects",
    description: "The projects the caller is a member of, with their environments.",
    route: "GET /api/v1/projects",
    permission: "authenticated",
    annotations: READS,
    run: (c) => listProjects(c.core, c.auth.principal),
    text: (r: Array<{ slug: string; environments: string[] }>) => `${count(r.length, "project")}${r.length ? `: ${r.map((p) => `${p.slug} (${p.environments.join(", ")})`).join("; ")}` : ""}.`,
  },
  {
    name: "audit_log",
    title: "Read the audit log",
    description: "A project's audit log, newest first: who did or was refused what, where and why. Filters: actor, environment, action (a trailing * matches a prefix), outcome, since (RFC 3339 or 15m, 24h, 7d).",
    route: "GET /api/v1/projects/:slug/audit",
    args: { rename: PROJECT, omit: ["query.project"], describe },
    permission: { key: "audit.read", environment: "none" },
    annotations: READS,
    run: (c) => listAudit(c.core, c.project, c.query),
    text: (r: AuditRow[]) => `${count(r.length, "audit row")}${r.length ? `; newest: ${r[0].actor} ${r[0].action} ${r[0].target} ${r[0].outcome}${r[0].reason ? ` (${r[0].reason})` : ""}` : ""}.`,
  },
  {
    name: "list_packages",
    title: "List packages",
    description: "A project's npm and cargo packages (latest versions) and its image repositories.",
    route: "GET /api/v1/projects/:slug/packages",
    args: { rename: PROJECT, describe },
    permission: { key: "packages.read", environment: "none" },
    annotations: READS,
    run: (c) => ({ ...projectPackages(c.core, c.project), images: projectImages(c.core, c.project) }),
    text: (r: { npm: unknown[]; cargo: unknown[]; images: unknown[] }) => `${count(r.npm.length, "npm package")}, ${count(r.cargo.length, "crate")}, ${count(r.images.length, "image repository", "image repositories")}.`,
  },
  {
    name: "translations_get",
    title: "Read translations",
    description: "The keys of one of the project's bundles with every locale's value (filter by namespace, a substring `q`, or only keys missing a value somewhere).",
    route: "GET /api/v1/projects/:slug/translations/entries",
    args: { rename: PROJECT, describe },
    permission: { key: "translations.read", environment: "none" },
    annotations: READS,
    run: (c) => listEntries(c.core, c.project, c.query as { bundle: string }),
    text: (r: unknown[], c) => `${count(r.length, "key")} in bundle ${c.query.bundle}.`,
  },
  {
    name: "translations_set",
    title: "Set a translation",
    description: "Create or change one value (namespace, key, locale) in one of the project's bundles; status `review` waits for approval.",
    route: "PUT /api/v1/projects/:slug/translations/entries",
    args: { rename: PROJECT, describe },
    permission: { key: "translations.write", environment: "none" },
    annotations: changes(true, true),
    run: (c) => setEntry(c.core, c.project, c.body as Parameters<typeof setEntry>[2], actorOf(c.auth.principal, c.auth.meta)),
    text: (r: { version: number }, c) => `Set ${c.body?.namespace}.${c.body?.key} in ${c.body?.locale} (version ${r.version}).`,
  },
];
