/**
 * The OTLP intake for a replica's own credential (docs/decisions/0651): the export routes'
 * `transform` hook, which runs before the permission macro. A request whose bearer is an ops
 * ingest credential (ingest-credential.ts) is verified and answered here; any other request goes
 * on to the macro unchanged (an ops token is authorized as before; anything else is its 401).
 *
 * The credential is not a principal: the kernel's authentication never resolves it, so every
 * other route answers it 401. Here it sends only into its own project, and every resource it
 * sends is stored as its own service and environment, whatever `service.name` and
 * `deployment.environment.name` say (rewritten, not refused: an SDK that names itself in code
 * still lands where the replica is). Naming another project (`X-Ops-Project`, `?project=`) is 403.
 */
import { status } from "elysia";
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import { writeAudit } from "../../core/audit";
import { requestMeta } from "../../core/authz/plugin";
import type { Signal } from "./otlp-model";
import { ingestCredentialOf, verifyIngestCredential, type IngestClaim } from "./ingest-credential";
import { exportInto } from "./otlp";

interface HookContext {
  request: Request;
  query: Record<string, string | undefined>;
  headers: Record<string, string | undefined>;
}

/** The project a request names (`X-Ops-Project` or `?project=`), if any. */
function namedProject(ctx: HookContext): string | undefined {
  const header = ctx.headers["x-ops-project"];
  if (typeof header === "string" && header.trim() !== "") return header.trim();
  return typeof ctx.query.project === "string" && ctx.query.project !== "" ? ctx.query.project : undefined;
}

function refuse(core: Core, ctx: HookContext, claim: IngestClaim, project: string | null, reason: string): never {
  const meta = requestMeta(ctx.request, null);
  writeAudit(core, core.db, {
    actor: `replica:${claim.service}`,
    operatorId: null,
    via: "system",
    ip: meta.ip,
    context: { request: meta.requestId, credential: claim.id },
    action: "obs.ingest",
    target: new URL(ctx.request.url).pathname,
    outcome: "denied",
    reason,
    project,
    environment: claim.environment,
  });
  throw new OpsError("forbidden", `This replica's telemetry credential sends only into its own project, environment and service: ${reason}.`, { permission: "obs.ingest" });
}

/** The `transform` hook of `POST /otlp/v1/<signal>`: answers a replica credential's export, else returns nothing. */
export function replicaIntake(core: Core, signal: Signal): (ctx: HookContext) => Promise<void> {
  const hook = async (ctx: HookContext) => {
    const token = ingestCredentialOf(ctx.request.headers.get("authorization"));
    if (token === null) return;
    const claim = await verifyIngestCredential(core, token);
    const project = core.access.findProjectById(claim.projectId);
    if (!project || !project.environments.includes(claim.environment)) throw new OpsError("unauthorized", "The telemetry credential names a project or environment that no longer exists.");
    const named = namedProject(ctx);
    if (named !== undefined && named !== project.slug) refuse(core, ctx, claim, project.slug, `it named project "${named.slice(0, 64)}"`);
    const response = await exportInto(core, signal, ctx.request, {
      caller: `ingest:${claim.id}`,
      projectId: project.id,
      denied: [],
      identity: { service: claim.service, environment: claim.environment },
    });
    // A transform that returns a status answers the request: the permission macro never runs.
    return status(200, response);
  };
  // Elysia's types say a transform returns nothing; at run time a returned status is the answer
  // (compose.ts maps it as an early response), which is what this hook is for.
  return hook as unknown as (ctx: HookContext) => Promise<void>;
}
