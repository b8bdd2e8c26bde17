/**
 * Resource and secret tools. Secrets are write-only here: `set_secret` stores a value and answers
 * with metadata only, `list_secret_variables` gives names and kinds. Both call the secrets
 * domain with the caller's permissions less `secrets.reveal`, so even a caller who may reveal
 * text values gets none through an assistant (and no reveal is audited, since none happened).
 */
import type { ResolveContext, AuthContext } from "../../core/authz/plugin";
import { getResource, listResources, listResourcesOfType, observeResource, placeFor, type ResourceType } from "../resources/service";
import { listVariables, setVariable } from "../secrets/service";
import { READS, changes, count, envOf, type ToolSpec } from "./tool-kit";

const describe = {
  project: "Project slug",
  service: "Service name",
  group: "The secret group's name (a `secret-group` resource)",
  name: "Variable name (an environment variable name such as DATABASE_URL)",
};

/** The resources routes' scope: the query's environment, except for project-level buckets. */
const typeEnvironment = (ctx: ResolveContext): string | null => (ctx.params.type === "bucket" ? null : ctx.query.environment || "production");

/** The caller's permissions without `secrets.reveal`: values never leave through a tool. */
const withoutReveal = (auth: AuthContext): AuthContext => ({ ...auth, permissions: new Set([...auth.permissions].filter((k) => k !== "secrets.reveal")) });

interface Variable {
  name: string;
  kind: string;
  has_value: boolean;
  pending: boolean;
  updated_at?: string | null;
  version: number;
  value?: string | null;
}

/** A variable's metadata, never its value. */
const metaOf = ({ value: _value, ...meta }: Variable) => meta;

interface Resource {
  name: string;
  type: string;
  environment?: string | null;
  status: { state?: string; summary?: string } & Record<string, unknown>;
}

const stateOf = (r: Resource) => `${r.name} (${r.type}${r.environment ? `, ${r.environment}` : ""}): ${r.status?.state ?? "unknown"}${r.status?.summary ? `, ${r.status.summary}` : ""}`;

export const RESOURCE_TOOLS: ToolSpec[] = [
  {
    name: "list_services",
    title: "List services",
    description: "The services of one environment of a project, with their status.",
    route: "GET /api/v1/projects/:slug/resources/:type",
    args: { rename: { slug: "project" }, fixed: { type: "service" }, omit: ["kind", "confirm"], describe },
    permission: { key: "resources.read", environment: typeEnvironment },
    annotations: READS,
    run: (c) => listResourcesOfType(c.core, c.project, "service", c.query.environment),
    text: (r: Resource[], c) => `${count(r.length, "service")} in ${c.project.slug}/${envOf(c)}${r.length ? `: ${r.map(stateOf).join("; ")}` : ""}.`,
  },
  {
    name: "service_status",
    title: "Service status",
    description: "Observe a service now: replicas, restarts and exits, the rollout in flight, health, and where it answers.",
    route: "POST /api/v1/projects/:slug/resources/:type/:name/observe",
    args: { rename: { slug: "project", name: "service" }, fixed: { type: "service" }, omit: ["kind", "confirm"], describe },
    permission: { key: "resources.read", environment: typeEnvironment },
    annotations: READS,
    run: (c) => observeResource(c.core, { project: c.project, type: "service", name: c.params.name, environment: c.query.environment }),
    text: (r: Resource) => `${stateOf(r)}.`,
  },
  {
    name: "list_resources",
    title: "List resources",
    description: "Every resource of one environment plus the project-level ones (services, databases, buckets, jobs, domains, secret groups), optionally of one type (`kind`).",
    route: "GET /api/v1/projects/:slug/resources",
    args: { rename: { slug: "project" }, omit: ["confirm"], describe },
    permission: "resources.read",
    annotations: READS,
    run: (c) => {
      const all = listResources(c.core, c.project, c.auth.environment as string);
      return c.query.kind ? all.filter((r) => r.type === c.query.kind) : all;
    },
    text: (r: Resource[], c) => `${count(r.length, "resource")} in ${c.project.slug}/${envOf(c)}${r.length ? `: ${r.slice(0, 10).map((x) => `${x.type} ${x.name}`).join(", ")}` : ""}.`,
  },
  {
    name: "get_resource",
    title: "Get a resource",
    description: "One resource with its spec and stored status (`type`: service, database, bucket, job, domain, secret-group).",
    route: "GET /api/v1/projects/:slug/resources/:type/:name",
    args: { rename: { slug: "project" }, omit: ["kind", "confirm"], describe: { ...describe, type: "Resource type", name: "Resource name" } },
    permission: { key: "resources.read", environment: typeEnvironment },
    annotations: READS,
    run: (c) => getResource(c.core, { project: c.project, type: c.params.type, name: c.params.name, environment: c.query.environment }),
    text: (r: Resource) => `${stateOf(r)}.`,
  },
  {
    name: "set_secret",
    title: "Set a secret",
    description:
      "Store a variable's value in a secret group of one environment (kind `secret` by default). Write-only: the answer never holds the value. Services that mount the group pick it up at the group's next rotate or their next rollout.",
    route: "PUT /api/v1/projects/:slug/resources/secret-group/:name/variables/:key",
    args: { rename: { slug: "project", name: "group", key: "name" }, omit: ["query.kind", "confirm"], describe },
    permission: "secrets.write",
    annotations: changes(true, true),
    run: (c) => metaOf(setVariable(c.core, placeFor(c.project, "secret-group" as ResourceType, c.query.environment), c.params.name, c.params.key, c.body as { value: string; kind?: string | null }, withoutReveal(c.auth))),
    text: (r: ReturnType<typeof metaOf>, c) => `Stored ${r.name} (${r.kind}, version ${r.version}) in ${c.params.name} of ${c.project.slug}/${envOf(c)}; the value is not shown.`,
  },
  {
    name: "list_secret_variables",
    title: "List secret variables",
    description: "The variables of a secret group: names, kinds, whether a value is stored and whether it changed since the last rotate. Never values.",
    route: "GET /api/v1/projects/:slug/resources/secret-group/:name/variables",
    args: { rename: { slug: "project", name: "group" }, omit: ["kind", "confirm"], describe },
    permission: "secrets.read",
    annotations: READS,
    run: (c) => listVariables(c.core, placeFor(c.project, "secret-group" as ResourceType, c.query.environment), c.params.name, withoutReveal(c.auth)).map(metaOf),
    text: (r: Array<ReturnType<typeof metaOf>>, c) => `${count(r.length, "variable")} in ${c.params.name}${r.length ? `: ${r.map((v) => `${v.name} (${v.kind})`).join(", ")}` : ""}.`,
  },
];
