/**
 * OpenTelemetry wired into every replica (docs/decisions/0651): the `OTEL_*` variables ops adds to
 * a replica's environment so that an SDK's zero-code setup (`node --require
 * @opentelemetry/auto-instrumentations-node/register`, `opentelemetry-instrument python …`) sends
 * its traces, metrics and logs to ops's own OTLP intake with nothing else configured:
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT`: ops's public URL + `/otlp` (reachable from inside a sandbox:
 *   ops's public port is forwarded into every replica's namespace);
 * - `OTEL_EXPORTER_OTLP_HEADERS`: `Authorization=Bearer <credential>`, a credential minted for this
 *   replica alone (observability's ingest-credential.ts), good only for the OTLP export routes,
 *   only as this project, environment and service, for days; masked in the replica's output;
 * - `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (ops speaks OTLP/HTTP, not gRPC: Python's
 *   default);
 * - `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (`deployment.environment.name`,
 *   `service.version` = the commit, `ops.build` = the build id).
 *
 * What the service already sets (its env group, its secrets, its image's Env) wins: a variable set
 * there is not added, and when any OTLP endpoint or header variable is set there, neither the
 * endpoint nor the credential is (the credential is never sent to a collector ops does not run).
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { mintIngestCredential } from "../observability/service";
import { deployments } from "./tables";

/** What live.ts's `ServiceEnv` holds (spelled here so the two files do not import each other). */
interface ReplicaEnv {
  env: Array<[string, string]>;
  masked: string[];
}

/** Variables that, set by the service, mean it sends its telemetry somewhere of its own choosing. */
const OWN_EXPORTER = /^OTEL_EXPORTER_OTLP_(?:(?:TRACES|METRICS|LOGS)_)?(?:ENDPOINT|HEADERS)$/;

/** `key=value` pairs as OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS spell them (values percent-encoded). */
function pairs(entries: Array<[string, string]>): string {
  return entries.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join(",");
}

/**
 * The service's env with ops's `OTEL_*` variables added for one replica of deployment
 * `deploymentId` (a fresh credential each call: each replica start rotates it). `imageEnv` is the
 * image's `NAME=value` entries.
 */
export async function withOtelEnv(core: Core, addr: { project: { id: string }; environment: string; service: string }, deploymentId: number, env: ReplicaEnv, imageEnv: readonly string[]): Promise<ReplicaEnv> {
  const set = new Set([...imageEnv.map((e) => e.slice(0, Math.max(0, e.indexOf("=")))), ...env.env.map(([k]) => k)]);
  const added: Array<[string, string]> = [];
  const masked: string[] = [];
  if (![...set].some((k) => OWN_EXPORTER.test(k))) {
    const { token } = await mintIngestCredential(core, { projectId: addr.project.id, environment: addr.environment, service: addr.service });
    added.push(["OTEL_EXPORTER_OTLP_ENDPOINT", `${core.config.publicUrl.replace(/\/+$/, "")}/otlp`]);
    added.push(["OTEL_EXPORTER_OTLP_HEADERS", pairs([["Authorization", `Bearer ${token}`]])]);
    masked.push(token);
    if (!set.has("OTEL_EXPORTER_OTLP_PROTOCOL")) added.push(["OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"]);
  }
  if (!set.has("OTEL_SERVICE_NAME")) added.push(["OTEL_SERVICE_NAME", addr.service]);
  if (!set.has("OTEL_RESOURCE_ATTRIBUTES")) {
    const row = core.db.select({ commit: deployments.commitSha, build: deployments.buildId }).from(deployments).where(eq(deployments.id, deploymentId)).get();
    const attrs: Array<[string, string]> = [["deployment.environment.name", addr.environment]];
    if (row?.commit) attrs.push(["service.version", row.commit]);
    if (row?.build !== null && row?.build !== undefined) attrs.push(["ops.build", String(row.build)]);
    added.push(["OTEL_RESOURCE_ATTRIBUTES", pairs(attrs)]);
  }
  // Ops's variables first: anything the service sets still comes later and wins.
  return { env: [...added, ...env.env], masked: [...env.masked, ...masked] };
}
