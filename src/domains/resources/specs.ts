/**
 * The per-type spec schemas (JSON Schema through TypeBox), published at GET /api/v1/catalog.
 * Each type's spec is what a Render or Coolify user sets for that kind of thing; unknown fields
 * are refused so a typo is a 422 rather than a silently ignored setting. What a spec names in
 * other resources (a service's env group, a domain's service) is checked by the type's rules in
 * kinds.ts, not here.
 */
import { Type, type TSchema, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { OpsError } from "../../core/errors";
import { NAME_PATTERN } from "./model";

const ResourceName = (description: string) => Type.String({ pattern: NAME_PATTERN, description });
export const ENV_VAR_PATTERN = "^[A-Za-z_][A-Za-z0-9_]{0,254}$";
const COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
/**
 * A base image (decision 0620): `[host/]<repository>` with `:<tag>`, `@sha256:<digest>` or both,
 * in the OCI distribution grammar. Which registry and project it may name is the build's check.
 */
export const BASE_IMAGE_PATTERN = `^(?:[A-Za-z0-9.-]+(?::[0-9]{1,5})?/)?${COMPONENT}(?:/${COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(?:@sha256:[0-9a-f]{64})?|@sha256:[0-9a-f]{64})$`;

/** A Swarm placement constraint: `node.<attribute>` or `engine.labels.<key>`, `==` or `!=`, a value (no spaces, no quotes). */
export const PLACEMENT_PATTERN = "^(?:node\\.(?:id|hostname|role|platform\\.os|platform\\.arch|labels\\.[A-Za-z0-9_.-]+)|engine\\.labels\\.[A-Za-z0-9_.-]+)\\s*(?:==|!=)\\s*[A-Za-z0-9_.:/-]+$";

const Limits = Type.Object(
  {
    cpu: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 256, description: "CPU cores (fractions allowed)" })),
    memory_mb: Type.Optional(Type.Integer({ minimum: 16, maximum: 1048576, description: "Memory limit in MiB" })),
  },
  { additionalProperties: false },
);

export const ServiceSpec = Type.Object(
  {
    source: Type.Optional(
      Type.Union(
        [
          Type.Object(
            {
              repo: Type.String({ pattern: "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", description: "owner/repo on the code host" }),
              branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
              context: Type.Optional(Type.String({ maxLength: 1024, description: "Build context, relative to the repository root" })),
              dockerfile: Type.Optional(Type.String({ maxLength: 1024 })),
              base: Type.Optional(
                Type.String({
                  pattern: BASE_IMAGE_PATTERN,
                  maxLength: 512,
                  description: "Native builds: the image (in ops's registry, of this project or the estate's shared base images) the app's layer goes on top of, so it runs on a bare engine; `<project>/<name>:<tag>` or `@sha256:…`",
                }),
              ),
            },
            { additionalProperties: false },
          ),
          Type.Null(),
        ],
        { description: "Build from a repository (give this or `image`)" },
      ),
    ),
    image: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 512 }), Type.Null()], { description: "Run a prebuilt image reference (give this or `source`)" })),
    command: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()], { description: "Override the image's start command" })),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Port the service listens on (default 8080)" })),
    health_check_path: Type.Optional(Type.Union([Type.String({ pattern: "^/", maxLength: 1024 }), Type.Null()], { description: "HTTP path probed for health; null = no probe" })),
    replicas: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: "Instances to run (default 1; 0 = stopped)" })),
    env_group: Type.Optional(Type.Union([ResourceName("A secret-group of the same environment mounted as environment variables"), Type.Null()])),
    limits: Type.Optional(Limits),
    placement: Type.Optional(
      Type.Object(
        {
          constraints: Type.Array(Type.String({ pattern: PLACEMENT_PATTERN, maxLength: 256 }), {
            maxItems: 32,
            description: "Where its replicas may run on an engine with nodes (OPS_RUNTIME=swarm): Swarm constraints such as `node.labels.zone==eu`, `node.role!=manager`, `node.hostname==vm2`; every one must hold. The process and docker runtimes run on one host and ignore them",
          }),
        },
        { additionalProperties: false, description: "Placement of its replicas on a Swarm's nodes (`[services.<name>.placement]` in ops.toml)" },
      ),
    ),
    status_page: Type.Optional(Type.Boolean({ description: "Show on the public status page (needs a health check)" })),
  },
  { additionalProperties: false },
);
export type ServiceSpec = Static<typeof ServiceSpec>;

export const DatabaseSpec = Type.Object(
  {
    engine: Type.Literal("postgres", { description: "Database engine (the plane is PostgreSQL)" }),
    version: Type.Optional(Type.String({ pattern: "^[0-9]{1,2}(\\.[0-9]{1,2})?$", description: "Major version expected on the plane (informational; the plane's version is what runs)" })),
    size: Type.Optional(Type.Union([Type.Literal("small"), Type.Literal("medium"), Type.Literal("large")], { description: "small (20 connections, default), medium (50), large (100)" })),
    adopted: Type.Optional(Type.Boolean({ description: "An existing database ops records but does not own: never dropped, its password never rotated" })),
    database: Type.Optional(Type.String({ pattern: "^[a-z_][a-z0-9_]{0,62}$", description: "Adopted only: the database's name on the plane" })),
    service: Type.Optional(Type.Union([ResourceName("The service whose env group receives the connection string (required unless adopted)"), Type.Null()])),
    variable: Type.Optional(Type.String({ pattern: ENV_VAR_PATTERN, description: "Variable that holds the connection string (default DATABASE_URL)" })),
  },
  { additionalProperties: false },
);
export type DatabaseSpec = Static<typeof DatabaseSpec>;

export const BucketSpec = Type.Object(
  {
    backend: Type.Optional(Type.Union([Type.Literal("local"), Type.Literal("s3")], { description: "local (default): a directory in the data dir; s3: an S3-compatible endpoint" })),
    endpoint: Type.Optional(Type.String({ pattern: "^https?://", maxLength: 1024, description: "s3 only: endpoint URL" })),
    bucket: Type.Optional(Type.String({ pattern: "^[a-z0-9][a-z0-9.-]{1,62}$", description: "s3 only: bucket name at the endpoint" })),
    region: Type.Optional(Type.String({ maxLength: 64, description: "s3 only (default us-east-1)" })),
    prefix: Type.Optional(Type.String({ maxLength: 1024, description: "s3 only: key prefix ops counts under" })),
    public: Type.Optional(Type.Boolean({ description: "Objects readable without credentials" })),
  },
  { additionalProperties: false },
);
export type BucketSpec = Static<typeof BucketSpec>;

export const JobSpec = Type.Object(
  {
    command: Type.String({ minLength: 1, maxLength: 16384, description: "Shell command, run with `sh -c`" }),
    schedule: Type.Optional(Type.Union([Type.String({ minLength: 9, maxLength: 200 }), Type.Null()], { description: "Cron expression, 5 fields, UTC; null = manual only" })),
    timeout_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: "Stop a run after this long (default 3600)" })),
    env_group: Type.Optional(Type.Union([ResourceName("A secret-group of the same environment passed as environment variables"), Type.Null()])),
  },
  { additionalProperties: false },
);
export type JobSpec = Static<typeof JobSpec>;

/** A host name (lower case) or `*.` wildcard with at least two labels; never an IP address or `localhost` (domain-hosts.ts has the rest). */
export const HOST_PATTERN = "^(\\*\\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63}$";
export const DomainSpec = Type.Object(
  {
    hosts: Type.Array(Type.String({ pattern: HOST_PATTERN, maxLength: 253 }), { minItems: 1, maxItems: 100, uniqueItems: true, description: "Host names (lower case; `*.` wildcard allowed)" }),
    service: ResourceName("The service of the same environment traffic goes to"),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: "Service port (default: the service's port)" })),
    path_prefix: Type.Optional(Type.String({ pattern: "^/", maxLength: 1024, description: "Route only this path prefix (default /)" })),
    tls: Type.Optional(Type.Boolean({ description: "Serve HTTPS with an automatic certificate (default true)" })),
    redirect_http: Type.Optional(Type.Boolean({ description: "Redirect plain HTTP to HTTPS (default true)" })),
    // Decision 0346: an uploaded certificate instead of ACME.
    tls_secret_group: Type.Optional(ResourceName("A secret-group of the same environment whose TLS_CERT and TLS_KEY are served instead of an ACME certificate")),
  },
  { additionalProperties: false },
);
export type DomainSpec = Static<typeof DomainSpec>;

export const SecretGroupSpec = Type.Object(
  {
    variables: Type.Array(
      Type.Object(
        {
          name: Type.String({ pattern: ENV_VAR_PATTERN }),
          kind: Type.Union([Type.Literal("secret"), Type.Literal("text")], { description: "secret: never read back; text: readable by secrets.reveal" }),
        },
        { additionalProperties: false },
      ),
      { maxItems: 1000, description: "Names and kinds only; values are set through the variables routes" },
    ),
  },
  { additionalProperties: false },
);
export type SecretGroupSpec = Static<typeof SecretGroupSpec>;

export const RESOURCE_TYPES = ["service", "database", "bucket", "job", "domain", "secret-group"] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export interface TypeInfo {
  type: ResourceType;
  projectLevel: boolean;
  description: string;
  deleteConfirm: boolean;
  schema: TSchema;
}

export const TYPE_INFO: Record<ResourceType, TypeInfo> = {
  service: { type: "service", projectLevel: false, deleteConfirm: false, description: "A long-running process built from a source or run from an image", schema: ServiceSpec },
  database: { type: "database", projectLevel: false, deleteConfirm: true, description: "A PostgreSQL database and role on the database plane", schema: DatabaseSpec },
  bucket: { type: "bucket", projectLevel: true, deleteConfirm: true, description: "Object storage: a directory in the data dir, or an S3-compatible endpoint", schema: BucketSpec },
  job: { type: "job", projectLevel: false, deleteConfirm: false, description: "A command run by hand or on a cron schedule", schema: JobSpec },
  domain: { type: "domain", projectLevel: false, deleteConfirm: false, description: "Host names routed to a service", schema: DomainSpec },
  "secret-group": { type: "secret-group", projectLevel: false, deleteConfirm: false, description: "Environment variables (secret or text) mounted by services and jobs", schema: SecretGroupSpec },
};

export function isResourceType(s: string): s is ResourceType {
  return (RESOURCE_TYPES as readonly string[]).includes(s);
}

/** 422 unless `type` is a known resource type. */
export function assertType(type: string): ResourceType {
  if (!isResourceType(type)) {
    throw new OpsError("validation_failed", `Unknown resource type "${type}"; one of ${RESOURCE_TYPES.join(", ")}.`, { fields: [{ path: "type", message: "unknown resource type" }] });
  }
  return type;
}

/** 422 with the failing fields unless `spec` satisfies the type's schema. */
export function checkSpec(type: ResourceType, spec: unknown): void {
  const schema = TYPE_INFO[type].schema;
  if (Value.Check(schema, spec)) return;
  const fields: Array<{ path: string; message: string }> = [];
  for (const e of Value.Errors(schema, spec)) {
    fields.push({ path: `spec${e.path.replace(/\//g, ".")}`, message: e.message });
    if (fields.length >= 20) break;
  }
  throw new OpsError("validation_failed", `The spec is not a valid ${type}: ${fields[0]?.path ?? "spec"}: ${fields[0]?.message ?? "invalid"}.`, { fields });
}
