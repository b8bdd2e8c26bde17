/**
 * The permission catalog: exactly 28 keys, in console order, groups contiguous
 * (`GET /api/v1/permissions` returns this list as is). DESIGN.md §3 is the source.
 */
export interface PermissionInfo {
  key: string;
  group: string;
  label: string;
  hint: string;
}

export const PERMISSIONS = [
  { key: "project.read", group: "Project", label: "See the project", hint: "Open the project, its environments, members and roles." },
  { key: "project.settings", group: "Project", label: "Change project settings", hint: "Rename the project, change its environments, archive it." },
  { key: "project.members", group: "Project", label: "Manage members and roles", hint: "Add and remove members, define roles and environment policies." },
  { key: "audit.read", group: "Project", label: "Read the audit log", hint: "See who did what in the project, allowed and denied." },
  { key: "resources.read", group: "Resources", label: "See resources", hint: "List services, databases, buckets, jobs, domains and secret groups." },
  { key: "resources.write", group: "Resources", label: "Change resources", hint: "Create and edit resources and their specs." },
  { key: "resources.destroy", group: "Resources", label: "Delete resources", hint: "Remove resources for good." },
  { key: "jobs.run", group: "Resources", label: "Run jobs", hint: "Start a job run by hand." },
  { key: "databases.manage", group: "Resources", label: "Manage databases", hint: "Rotate database passwords, read restore runbooks." },
  { key: "secrets.read", group: "Secrets", label: "See secret names", hint: "List secrets and variables, never their values." },
  { key: "secrets.write", group: "Secrets", label: "Set secrets", hint: "Create, change and delete secret values." },
  { key: "secrets.reveal", group: "Secrets", label: "Reveal secret values", hint: "Export values (dotenv, text variables); every export is audited." },
  { key: "secrets.rotate", group: "Secrets", label: "Rotate secrets", hint: "Render a new version of a secret group and restart its services." },
  { key: "sources.read", group: "Code", label: "Read sources", hint: "See connected repositories, files and saves." },
  { key: "sources.write", group: "Code", label: "Connect sources", hint: "Connect and disconnect repositories, run scans." },
  { key: "sources.save", group: "Code", label: "Save edits", hint: "Save edits as pull requests and merge them." },
  { key: "builds.read", group: "Delivery", label: "See builds", hint: "List builds and read their logs." },
  { key: "builds.run", group: "Delivery", label: "Run builds", hint: "Start, cancel and retry builds." },
  { key: "deployments.read", group: "Delivery", label: "See deployments", hint: "Read the deployment timeline." },
  { key: "deployments.deploy", group: "Delivery", label: "Deploy", hint: "Deploy and roll back services." },
  { key: "obs.read", group: "Observability", label: "Read telemetry", hint: "Search logs and traces, chart metrics." },
  { key: "obs.ingest", group: "Observability", label: "Send telemetry", hint: "Send logs, traces and metrics over OTLP." },
  { key: "translations.read", group: "Translations", label: "Read translations", hint: "See bundles, entries and exports." },
  { key: "translations.write", group: "Translations", label: "Edit translations", hint: "Edit entries, overrides, bundles and attachments." },
  { key: "packages.read", group: "Packages", label: "Install packages", hint: "Read and install the project's npm, cargo and image packages." },
  { key: "packages.publish", group: "Packages", label: "Publish packages", hint: "Claim names, publish, tag and yank versions." },
  { key: "operators.manage", group: "Estate", label: "Manage operators", hint: "Add, suspend and reset people and machines; see and revoke all tokens." },
  { key: "estate.manage", group: "Estate", label: "Manage the estate", hint: "Create projects, publish CLI releases, status components, App settings." },
] as const satisfies readonly PermissionInfo[];

export type PermissionKey = (typeof PERMISSIONS)[number]["key"];

export const PERMISSION_KEYS: readonly PermissionKey[] = PERMISSIONS.map((p) => p.key);
const KEY_SET: ReadonlySet<string> = new Set(PERMISSION_KEYS);

/** Keys only an estate-wide membership grants. */
export const ESTATE_KEYS: ReadonlySet<PermissionKey> = new Set<PermissionKey>(["operators.manage", "estate.manage"]);

export function isPermissionKey(s: string): s is PermissionKey {
  return KEY_SET.has(s);
}

/**
 * The route-level pseudo permission for self-service routes: any signed-in caller (a live
 * session or token of a non-suspended operator) may call them; what they see is their own.
 * It is not a catalog key and is never granted or stored.
 */
export const AUTHENTICATED = "authenticated" as const;

/** The fixed roles every project has (`fixed: true`, no policy, not editable). */
export const FIXED_ROLES: ReadonlyArray<{ slug: string; displayName: string; description: string; permissions: readonly PermissionKey[] }> = [
  { slug: "owner", displayName: "Owner", description: "Everything, including the estate.", permissions: PERMISSION_KEYS },
  {
    slug: "maintainer",
    displayName: "Maintainer",
    description: "Everything in the project; nothing estate-wide.",
    permissions: PERMISSION_KEYS.filter((k) => !ESTATE_KEYS.has(k)),
  },
  {
    slug: "developer",
    displayName: "Developer",
    description: "Builds, deploys and edits; no members, settings, audit or secret values.",
    permissions: [
      "project.read",
      "resources.read",
      "resources.write",
      "jobs.run",
      "secrets.read",
      "secrets.write",
      "sources.read",
      "sources.write",
      "sources.save",
      "builds.read",
      "builds.run",
      "deployments.read",
      "deployments.deploy",
      "obs.read",
      "obs.ingest",
      "translations.read",
      "translations.write",
      "packages.read",
      "packages.publish",
    ],
  },
  {
    slug: "viewer",
    displayName: "Viewer",
    description: "Reads everything but the audit log.",
    permissions: PERMISSION_KEYS.filter((k) => k.endsWith(".read") && k !== "audit.read"),
  },
];
