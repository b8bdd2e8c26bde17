/**
 * Deployment routes: deploy and rollback a service (`deployments.deploy`, in the service's
 * environment, so environment policies apply), the timeline (`deployments.read`), and what the
 * ingress that serves the deployed services counted (`estate.manage`: it is the estate's).
 */
import { Elysia, t } from "elysia";
import type { Core, ProjectRef } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { errors, IntParam } from "../../core/http-schemas";
import { deploymentsModels, TimelineQuery, type RollbackRequest } from "./model";
import { invalid } from "../../core/errors";
import { jsonBodyOf } from "../../core/body";
import { deployService, rollbackService } from "./deploy";
import { listTimeline } from "./timeline";
import { ingressReport, processesReport } from "./ingress-report";
import { nodesReport } from "./nodes-report";

const ServiceParams = t.Object({ slug: t.String(), name: t.String() });
const DeployQuery = t.Object({
  environment: t.Optional(t.String({ description: "Default production" })),
  service: t.Optional(t.String({ description: "Accepted and ignored (the path names the service)" })),
  limit: t.Optional(IntParam({ description: "Accepted and ignored" })),
});

/**
 * The rollback body as sent: absent or null (roll back to the default digest), or an object (its
 * fields already checked by the schema). An optional body schema hands the handler nothing for
 * JSON that is not an object (`"x"`, `123`, `[]`), and a rollback must not run on a body nobody
 * meant.
 */
function rollbackBody(body: unknown): RollbackRequest | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== "object" || Array.isArray(body)) throw invalid("(body)", 'must be a JSON object such as {"digest": "sha256:…"}, or no body at all');
  return body as RollbackRequest;
}

export function deploymentsRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["deployments"] })
    .use(authzPlugin(core))
    .model(deploymentsModels)
    .get(
      "/projects/:slug/deployments",
      ({ auth, query }) => listTimeline(core, auth.project as ProjectRef, auth.environment ?? "production", query.service || null, query.limit ?? 50),
      {
        permission: "deployments.read",
        params: t.Object({ slug: t.String() }),
        query: TimelineQuery,
        detail: { summary: "The deployment timeline of one environment: builds and rollouts, newest first" },
        response: { 200: t.Array(t.Ref("TimelineRow")), ...errors(401, 403, 404, 422) },
      },
    )
    .post(
      "/projects/:slug/resources/service/:name/deploy",
      async ({ auth, params, query, body, set }) => {
        const out = await deployService(core, auth.project as ProjectRef, query.environment, params.name, body, auth);
        set.status = 201;
        return out;
      },
      {
        permission: "deployments.deploy",
        params: ServiceParams,
        query: DeployQuery,
        body: "DeployRequest",
        detail: { summary: "Roll a service out to a signed digest, or to the image of one of its builds" },
        response: { 201: "DeploymentResponse", ...errors(401, 403, 404, 409, 422) },
      },
    )
    .post(
      "/projects/:slug/resources/service/:name/rollback",
      async ({ auth, params, query, request, set }) => {
        const out = await rollbackService(core, auth.project as ProjectRef, query.environment, params.name, rollbackBody(jsonBodyOf(request)), auth);
        set.status = 201;
        return out;
      },
      {
        permission: "deployments.deploy",
        params: ServiceParams,
        query: DeployQuery,
        body: t.Optional(t.Union([t.Ref("RollbackRequest"), t.Null()])),
        detail: { summary: "Roll a service back to a digest, by default the newest healthy one that is not current" },
        response: { 201: "DeploymentResponse", ...errors(401, 403, 404, 409, 422) },
      },
    )
    .get("/admin/ingress", () => ingressReport(core), {
      permission: "estate.manage",
      detail: { summary: "What the ingress counted since ops started: connections, requests, and each limit it enforced" },
      response: { 200: "IngressReport", ...errors(401, 403) },
    })
    .get("/admin/processes", () => processesReport(core), {
      permission: "estate.manage",
      detail: { summary: "The processes that serve this estate: the control plane, the data plane and its ingress (pid, uptime, what each does)" },
      response: { 200: "ProcessesReport", ...errors(401, 403) },
    })
    .get("/admin/nodes", () => nodesReport(core), {
      permission: "estate.manage",
      detail: { summary: "Where replicas run: the Swarm's nodes (role, state, availability, resources) with ops's replicas on each, or the one engine, or this host; an engine that does not answer is reported, not a 500" },
      response: { 200: "NodesReport", ...errors(401, 403) },
    });
}
