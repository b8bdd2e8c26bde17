/**
 * Every `OPS_*` setting, parsed and validated once, then frozen. A bad value stops start-up with a
 * message naming the variable (ConfigError). Flags given to a command override the environment.
 * Nothing else in the code base reads `process.env`.
 */
import path from "node:path";
import { isIP } from "node:net";
import { Cron } from "croner";
import { bool, ConfigError, deepFreeze, int, oneOf, parseListen, str, url, type Env } from "./config-values";
import { ENGINE_VARIABLES, engineConfig, type EngineConfig } from "./config-engine";
import { IMAGE_VARIABLES, imagesConfig, type ImagesConfig } from "./config-images";

export { ConfigError } from "./config-values";

export interface Config extends EngineConfig, ImagesConfig {
  /** Folder holding ops.db, telemetry.db, blobs/, keys/, git/, run/. Absolute. */
  readonly dataDir: string;
  /** host:port the HTTP server binds. */
  readonly listen: { readonly host: string; readonly port: number };
  /** Base URL printed in verification URIs, installers and registry config. No trailing slash. */
  readonly publicUrl: string;
  /** Default token lifetime in days; 0 = never expires. */
  readonly tokenTtlDays: number;
  /** External registry host, or null for the embedded registry at the public URL. */
  readonly registry: string | null;
  /** SMTP URL for the email channel; null = email disabled. */
  readonly smtpUrl: string | null;
  /** Sender address on outgoing mail. */
  readonly mailFrom: string;
  /** Secrets master key material (raw string as given) or null. */
  readonly secretsKey: string | null;
  /** File holding the secrets master key, or null (then keys/secrets.key). */
  readonly secretsKeyFile: string | null;
  /** PostgreSQL URL of the plane that database resources live on; null = none. */
  readonly dbPlaneUrl: string | null;
  /** Whether the database plane runs point-in-time recovery (governs the restore runbook). */
  readonly dbPlanePitr: boolean;
  /** The pgBackRest stanza that backs up the database plane (named in restore runbooks). */
  readonly dbPlaneStanza: string;
  /** The estate's npm scope, with the `@`. */
  readonly npmScope: string;
  /** Bootstrap owner for an empty data dir. */
  readonly bootstrapEmail: string | null;
  readonly bootstrapPassword: string | null;
  /** Also audit allowed reads. */
  readonly auditReads: boolean;
  /** Largest JSON API body in bytes (413 above). */
  readonly maxBodyBytes: number;
  /** Largest package publish body (npm, cargo) in bytes. */
  readonly maxPublishBytes: number;
  /** Largest image blob (layer) pushed to the embedded registry, in bytes. */
  readonly maxBlobBytes: number;
  /** Largest CLI release upload in bytes. */
  readonly maxReleaseBytes: number;
  /** How long shutdown waits for in-flight requests and running work, in ms. */
  readonly shutdownGraceMs: number;
  /** Scheduler poll interval in ms. */
  readonly schedulerTickMs: number;
  readonly logLevel: "debug" | "info" | "warn" | "error";
  /** Code host App (GitHub App) settings; all null = App not configured. */
  readonly hostApp: {
    readonly id: string | null;
    readonly slug: string | null;
    readonly privateKeyFile: string | null;
    readonly webhookSecret: string | null;
    readonly apiUrl: string;
    readonly webUrl: string;
  };
  /** Which code host sources live on: the built-in git host, or the GitHub App. */
  readonly codeHost: "builtin" | "github";
  /** Largest push the built-in git host accepts, in bytes (refused by the pre-receive stage). */
  readonly gitMaxPushBytes: number;
  /** Builds running at once (the rest wait in a queue fair across projects). */
  readonly buildConcurrency: number;
  /** Time limit of one build step (checks, build commands), in seconds. */
  readonly buildStepTimeoutSecs: number;
  /** Memory limit of a build's processes in MiB (0 = no limit). */
  readonly buildMemoryMb: number;
  /** Memory limit of a job run's processes in MiB (0 = no limit). */
  readonly jobMemoryMb: number;
  /** Processes (and threads) one sandbox may hold at once: builds, steps, job runs, replicas (0 = no limit). */
  readonly sandboxPids: number;
  /** Memory limit of a replica without `limits.memory_mb`, in MiB (0 = none). */
  readonly replicaMemoryMb: number;
  /** Size of a sandbox's /tmp tmpfs in MiB. */
  readonly sandboxTmpMb: number;
  /** Disk a build's work dir (and a job run's home) may use, in MiB (0 = no cap). */
  readonly buildMaxDiskMb: number;
  /** Disk one project's dependency caches may use, in MiB (0 = no cap). */
  readonly cacheMaxMb: number;
  /** Largest image a build may produce, in MiB (0 = no cap). */
  readonly imageMaxMb: number;
  /** Sandbox networking (DESIGN §6): `isolated` (a namespace per sandbox through pasta) or `host` (none, on purpose). */
  readonly sandboxNetwork: "isolated" | "host";
  /** CIDRs sandboxes may reach although they are private or the host's own. */
  readonly sandboxAllowCidrs: readonly string[];
  /** Ports of the host's loopback sandboxes may reach besides ops's own public port. */
  readonly sandboxHostPorts: readonly number[];
  /** First host uid/gid of the per-project sandbox identities when ops is root. */
  readonly sandboxUidBase: number;
  /**
   * Where `ops serve` keeps the ingress and the replicas (decision 0600): `process`, a data plane
   * of its own that outlives the control plane; `inline`, in the one process (they die with it).
   */
  readonly dataPlane: "process" | "inline";
  /** Replica output the data plane keeps on disk while the control plane is away, in MiB. */
  readonly dataPlaneSpoolMb: number;
  /** Ingress processes on the listeners (SO_REUSEPORT); 0 = one per core, at most 4. */
  readonly ingressWorkers: number;
  /** host:port of the ingress listener, or null when it is off. */
  readonly ingressListen: { readonly host: string; readonly port: number } | null;
  /** host:port of the ingress's HTTPS listener, or null when it is off (the default). */
  readonly ingressTlsListen: { readonly host: string; readonly port: number } | null;
  /** `acme`: ops's own listener serves HTTPS with an ACME certificate for OPS_PUBLIC_URL's host; `off`: plain HTTP. */
  readonly tls: "off" | "acme";
  /** The ACME server certificates are ordered from. */
  readonly acme: { readonly directoryUrl: string; readonly email: string | null; readonly caFile: string | null };
  /** How long a rollout waits for new replicas to pass their health probe, in seconds. */
  readonly deployHealthTimeoutSecs: number;
  /** Days log events, spans and raw metric samples are kept. */
  readonly logRetentionDays: number;
  /** Size telemetry.db may grow to before the oldest telemetry is evicted, in bytes. */
  readonly telemetryMaxBytes: number;
  /** The ingress's deadlines (seconds) and connection caps (DESIGN §6, Ingress). */
  readonly ingressLimits: {
    readonly headerTimeoutSecs: number;
    readonly idleTimeoutSecs: number;
    readonly bodyTimeoutSecs: number;
    readonly sendTimeoutSecs: number;
    readonly maxConnPerIp: number;
    readonly maxConnections: number;
  };
  /** CIDRs of proxies in front of the ingress whose forwarding fields are believed (empty: none). */
  readonly trustedProxies: readonly string[];
  /** Largest OTLP export body once decompressed (and on the wire), in bytes (413 above). */
  readonly otlpMaxDecodedBytes: number;
  /** Scheduled backups: where to (a directory or s3://bucket/prefix; null = off), when, how many kept. */
  readonly backup: {
    readonly to: string | null;
    readonly schedule: string;
    readonly keep: number;
    readonly passphraseFile: string | null;
    readonly s3: { readonly endpoint: string | null; readonly region: string; readonly accessKeyId: string | null; readonly secretAccessKey: string | null };
  };
  /** URL of the release manifest `ops self-update` reads; null = self-update off. */
  readonly updateUrl: string | null;
}

/** The variables `loadConfig` reads, with a one-line description each (README and `--help`). */
export const CONFIG_VARIABLES: ReadonlyArray<{ name: string; default: string; description: string }> = [
  { name: "OPS_DATA_DIR", default: "./ops-data", description: "Data directory (state, telemetry, blobs, keys)" },
  { name: "OPS_LISTEN", default: "127.0.0.1:8080", description: "Address the server binds, host:port" },
  { name: "OPS_PUBLIC_URL", default: "http://<listen>", description: "Base URL printed in links, installers and registry config" },
  { name: "OPS_TOKEN_TTL_DAYS", default: "90", description: "Default token lifetime in days; 0 = never expires" },
  { name: "OPS_REGISTRY", default: "(embedded)", description: "External image registry host; unset = the embedded registry" },
  { name: "OPS_SMTP_URL", default: "(unset)", description: "smtp://user:pass@host:port for the email channel; unset = no email" },
  { name: "OPS_MAIL_FROM", default: "ops@localhost", description: "Sender address of notification mail" },
  { name: "OPS_SECRETS_KEY", default: "(unset)", description: "Secrets master key: 32 bytes as 64 hex chars or base64" },
  { name: "OPS_SECRETS_KEY_FILE", default: "(unset)", description: "File holding the secrets master key (else keys/secrets.key)" },
  { name: "OPS_DB_PLANE_URL", default: "(unset)", description: "PostgreSQL URL that database resources are provisioned on" },
  { name: "OPS_DB_PLANE_PITR", default: "false", description: "The plane runs point-in-time recovery (restore runbook)" },
  { name: "OPS_DB_PLANE_STANZA", default: "main", description: "pgBackRest stanza of the database plane (restore runbook)" },
  { name: "OPS_NPM_SCOPE", default: "@ops", description: "The estate's npm scope; npm names outside it are refused" },
  { name: "OPS_BOOTSTRAP_EMAIL", default: "admin@localhost", description: "Estate owner created on an empty data dir" },
  { name: "OPS_BOOTSTRAP_PASSWORD", default: "(generated)", description: "Owner's password; generated and printed once when unset" },
  { name: "OPS_AUDIT_READS", default: "0", description: "1 = also audit allowed reads" },
  { name: "OPS_MAX_BODY_BYTES", default: "1048576", description: "Largest JSON API request body (413 above)" },
  { name: "OPS_MAX_PUBLISH_BYTES", default: "67108864", description: "Largest npm or cargo publish body (413 above)" },
  { name: "OPS_MAX_BLOB_BYTES", default: "8589934592", description: "Largest image layer pushed to the embedded registry (413 above)" },
  { name: "OPS_MAX_RELEASE_BYTES", default: "268435456", description: "Largest CLI release upload (413 above)" },
  { name: "OPS_SHUTDOWN_GRACE_MS", default: "10000", description: "How long shutdown waits for in-flight work" },
  { name: "OPS_SCHEDULER_TICK_MS", default: "1000", description: "How often the scheduler looks for due work" },
  { name: "OPS_LOG_LEVEL", default: "info", description: "debug, info, warn or error" },
  { name: "OPS_GITHUB_APP_ID", default: "(unset)", description: "Code host App id (GitHub App)" },
  { name: "OPS_GITHUB_APP_SLUG", default: "(unset)", description: "Code host App slug" },
  { name: "OPS_GITHUB_APP_PRIVATE_KEY_FILE", default: "(unset)", description: "Code host App private key (PEM file)" },
  { name: "OPS_GITHUB_WEBHOOK_SECRET", default: "(unset)", description: "Code host webhook secret" },
  { name: "OPS_GITHUB_API_URL", default: "https://api.github.com", description: "Code host API base URL" },
  { name: "OPS_GITHUB_URL", default: "https://github.com", description: "Code host web base URL" },
  { name: "OPS_CODE_HOST", default: "builtin", description: "Code host of sources: builtin (git over HTTP at /git/) or github (the App)" },
  { name: "OPS_GIT_MAX_PUSH_BYTES", default: "1073741824", description: "Largest push the built-in git host accepts" },
  { name: "OPS_BUILD_CONCURRENCY", default: "2", description: "Builds running at once; the rest queue, fairly across projects (a project with no build running goes first, and the last free slot is kept for one)" },
  { name: "OPS_BUILD_STEP_TIMEOUT_SECS", default: "1800", description: "Time limit of one build step (checks, build commands)" },
  { name: "OPS_BUILD_MEMORY_MB", default: "2048", description: "Memory limit of a build's processes in MiB; 0 = none" },
  { name: "OPS_JOB_MEMORY_MB", default: "2048", description: "Memory limit of a job run's processes in MiB; 0 = none" },
  { name: "OPS_SANDBOX_PIDS", default: "512", description: "Processes and threads one build step, job run or replica may hold at once; 0 = none" },
  { name: "OPS_REPLICA_MEMORY_MB", default: "512", description: "Memory limit in MiB of a replica (and release step) whose service sets no limits.memory_mb; 0 = none" },
  { name: "OPS_SANDBOX_TMP_MB", default: "256", description: "Size in MiB of the /tmp and of the /dev/shm tmpfs of every build step, job run, release step and replica" },
  { name: "OPS_BUILD_MAX_DISK_MB", default: "10240", description: "Disk a build's work dir (checkout, home, output, packed image) or a job run's home may use in MiB, a loop-mounted ext4 image when ops is root; 0 = no cap" },
  { name: "OPS_CACHE_MAX_MB", default: "5120", description: "Disk one project's dependency caches (npm, cargo, pip, buildah's layers) may use in MiB: a loop-mounted ext4 image while its builds run when ops is root, trimmed least recently used first after them; 0 = no cap" },
  { name: "OPS_IMAGE_MAX_MB", default: "4096", description: "Largest image (compressed layers) a build may push, in MiB; 0 = no cap" },
  ...IMAGE_VARIABLES,
  { name: "OPS_SANDBOX_NETWORK", default: "isolated", description: "isolated: every build, job run and replica in its own network namespace (needs pasta, Debian package passt); host: no network isolation, on purpose (ops doctor and every build log say so)" },
  { name: "OPS_SANDBOX_ALLOW_CIDRS", default: "(none)", description: "Comma-separated CIDRs sandboxes may reach although private, link-local or the host's own" },
  { name: "OPS_SANDBOX_HOST_PORTS", default: "(none)", description: "Comma-separated ports of the host's loopback sandboxes may reach besides ops's own public port" },
  { name: "OPS_SANDBOX_UID_BASE", default: "200000", description: "First host uid/gid of the per-project sandbox identities when ops runs as root (one per project)" },
  ...ENGINE_VARIABLES,
  { name: "OPS_DATA_PLANE", default: "process", description: "Where ops serve keeps replicas and the ingress: process, a data plane of their own (ops data-plane) that keeps serving while ops crashes or restarts; inline, in the one process (they die with it)" },
  { name: "OPS_DATA_PLANE_SPOOL_MB", default: "64", description: "Replica output the data plane keeps on disk (run/data-plane/spool) until ops has stored it, in MiB; past it the oldest is dropped and counted" },
  { name: "OPS_INGRESS_WORKERS", default: "0", description: "Ingress processes the data plane runs on the same listeners (SO_REUSEPORT, each with its share of the connection caps); 0 = one per core, at most 4" },
  { name: "OPS_INGRESS_LISTEN", default: "127.0.0.1:8081", description: "host:port of the ingress that routes to services; off = none" },
  { name: "OPS_INGRESS_TLS_LISTEN", default: "off", description: "host:port of the ingress's HTTPS listener (certificates by SNI); a VM sets 0.0.0.0:443" },
  { name: "OPS_TLS", default: "off", description: "acme = ops's own listener (OPS_LISTEN) serves HTTPS for OPS_PUBLIC_URL's host with an ACME certificate; off = plain HTTP" },
  { name: "OPS_ACME_DIRECTORY", default: "https://acme-v02.api.letsencrypt.org/directory", description: "ACME directory certificates are ordered from" },
  { name: "OPS_ACME_EMAIL", default: "(unset)", description: "Contact address given to the ACME server (expiry and policy mail)" },
  { name: "OPS_ACME_CA_FILE", default: "(system CAs)", description: "PEM file to trust for the ACME server itself (a private CA)" },
  { name: "OPS_DEPLOY_HEALTH_TIMEOUT_SECS", default: "60", description: "How long a rollout waits for new replicas to pass their health probe" },
  { name: "OPS_LOG_RETENTION_DAYS", default: "14", description: "Days logs, spans and raw metric samples are kept" },
  { name: "OPS_TELEMETRY_MAX_BYTES", default: "10737418240", description: "Size telemetry may take before the oldest is evicted" },
  { name: "OPS_INGRESS_HEADER_TIMEOUT", default: "10", description: "Seconds a request head may take to arrive whole at the ingress (408 after)" },
  { name: "OPS_INGRESS_IDLE_TIMEOUT", default: "75", description: "Seconds a kept-alive ingress connection may sit idle between requests" },
  { name: "OPS_INGRESS_BODY_TIMEOUT", default: "60", description: "Seconds a request body may send nothing before its exchange ends" },
  { name: "OPS_INGRESS_SEND_TIMEOUT", default: "60", description: "Seconds a client may take no byte of its answer before the ingress cuts it (and its replica connection)" },
  { name: "OPS_INGRESS_MAX_CONN_PER_IP", default: "256", description: "Ingress connections one client address may hold open (503 past it)" },
  { name: "OPS_INGRESS_MAX_CONNECTIONS", default: "10000", description: "Ingress connections open at once, all clients together (503 past it)" },
  { name: "OPS_TRUSTED_PROXIES", default: "(none)", description: "Comma-separated CIDRs of proxies whose X-Forwarded-*/Forwarded the ingress keeps" },
  { name: "OPS_OTLP_MAX_DECODED_BYTES", default: "16777216", description: "Largest OTLP export once decompressed, counted as it inflates (413 above)" },
  { name: "OPS_BACKUP_TO", default: "(unset)", description: "Scheduled backups go to this directory or s3://bucket/prefix; unset = none" },
  { name: "OPS_BACKUP_SCHEDULE", default: "0 3 * * *", description: "Cron expression (UTC) of scheduled backups" },
  { name: "OPS_BACKUP_KEEP", default: "7", description: "Scheduled backups kept at OPS_BACKUP_TO; older ones and their unshared objects are removed" },
  { name: "OPS_BACKUP_PASSPHRASE_FILE", default: "(unset)", description: "File with the passphrase scheduled backups are encrypted with; unset = not encrypted" },
  { name: "OPS_BACKUP_S3_ENDPOINT", default: "(unset)", description: "S3 endpoint URL for s3:// backup places" },
  { name: "OPS_BACKUP_S3_REGION", default: "us-east-1", description: "S3 region for s3:// backup places" },
  { name: "OPS_BACKUP_S3_ACCESS_KEY_ID", default: "(unset)", description: "S3 access key id for s3:// backup places" },
  { name: "OPS_BACKUP_S3_SECRET_ACCESS_KEY", default: "(unset)", description: "S3 secret access key for s3:// backup places" },
  { name: "OPS_UPDATE_URL", default: "(unset)", description: "Release manifest that ops self-update reads (signed by the release key in the binary)" },
];

/**
 * Parse the configuration from `env` (normally `process.env`) with `overrides` from command-line
 * flags taking precedence. `cwd` anchors relative paths. The result is deeply frozen.
 */
export function loadConfig(env: Env = process.env, overrides: Env = {}, cwd = process.cwd()): Config {
  const e: Env = { ...env };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) e[k] = v;

  const dataDir = path.resolve(cwd, str(e, "OPS_DATA_DIR") ?? "./ops-data");
  const listen = parseListen(str(e, "OPS_LISTEN") ?? "127.0.0.1:8080");
  const publicRaw = url(e, "OPS_PUBLIC_URL", ["http:", "https:"]);
  const displayHost = listen.host.includes(":") ? `[${listen.host}]` : listen.host;
  const publicUrl = (publicRaw ?? `http://${displayHost === "0.0.0.0" ? "127.0.0.1" : displayHost}:${listen.port}`).replace(/\/+$/, "");

  const npmScope = str(e, "OPS_NPM_SCOPE") ?? "@ops";
  if (!/^@[a-z0-9][a-z0-9._-]*$/.test(npmScope)) {
    throw new ConfigError("OPS_NPM_SCOPE", `expected an npm scope like "@acme", got "${npmScope}"`);
  }
  const registry = str(e, "OPS_REGISTRY");
  if (registry !== null && !/^[a-zA-Z0-9.-]+(:\d+)?$/.test(registry)) {
    throw new ConfigError("OPS_REGISTRY", `expected a registry host like "registry.example.com:5000", got "${registry}"`);
  }
  const bootstrapEmail = str(e, "OPS_BOOTSTRAP_EMAIL");
  if (bootstrapEmail !== null && !/^[^\s@]+@[^\s@]+$/.test(bootstrapEmail)) {
    throw new ConfigError("OPS_BOOTSTRAP_EMAIL", `not an email address: "${bootstrapEmail}"`);
  }
  const bootstrapPassword = str(e, "OPS_BOOTSTRAP_PASSWORD");
  if (bootstrapPassword !== null && bootstrapPassword.length < 12) {
    throw new ConfigError("OPS_BOOTSTRAP_PASSWORD", "must be at least 12 characters");
  }
  const logLevel = (str(e, "OPS_LOG_LEVEL") ?? "info").toLowerCase();
  if (!["debug", "info", "warn", "error"].includes(logLevel)) {
    throw new ConfigError("OPS_LOG_LEVEL", `expected debug, info, warn or error, got "${logLevel}"`);
  }
  const secretsKeyFile = str(e, "OPS_SECRETS_KEY_FILE");
  const dbPlaneStanza = str(e, "OPS_DB_PLANE_STANZA") ?? "main";
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(dbPlaneStanza)) {
    throw new ConfigError("OPS_DB_PLANE_STANZA", `expected a stanza name (letters, digits, . _ -), got "${dbPlaneStanza}"`);
  }

  const ingress = (str(e, "OPS_INGRESS_LISTEN") ?? "127.0.0.1:8081").toLowerCase();
  const ingressTls = (str(e, "OPS_INGRESS_TLS_LISTEN") ?? "off").toLowerCase();
  const trustedProxies = (str(e, "OPS_TRUSTED_PROXIES") ?? "").split(",").map((c) => c.trim()).filter((c) => c !== "");
  for (const cidr of trustedProxies) {
    const [addr, bits, more] = cidr.split("/");
    const family = isIP(addr);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || more !== undefined || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))) {
      throw new ConfigError("OPS_TRUSTED_PROXIES", `expected IP addresses or CIDRs like 10.0.0.0/8, got "${cidr}"`);
    }
  }

  const backupSchedule = str(e, "OPS_BACKUP_SCHEDULE") ?? "0 3 * * *";
  try {
    // docs/decisions/0383: five fields, UTC, like every other schedule of ops.
    new Cron(backupSchedule, { timezone: "Etc/UTC", paused: true });
  } catch (err) {
    throw new ConfigError("OPS_BACKUP_SCHEDULE", `not a cron expression: ${(err as Error).message}`);
  }
  const backupPassphraseFile = str(e, "OPS_BACKUP_PASSPHRASE_FILE");
  const tls = oneOf(e, "OPS_TLS", ["off", "acme"] as const, "off");
  if (tls === "acme" && !(publicRaw ?? "").startsWith("https://")) {
    throw new ConfigError("OPS_TLS", "acme needs OPS_PUBLIC_URL=https://<host> naming the host to get a certificate for");
  }
  const acmeEmail = str(e, "OPS_ACME_EMAIL");
  if (acmeEmail !== null && !/^[^\s@]+@[^\s@]+$/.test(acmeEmail)) throw new ConfigError("OPS_ACME_EMAIL", `not an email address: "${acmeEmail}"`);
  const acmeCa = str(e, "OPS_ACME_CA_FILE");
  const sandboxAllowCidrs = (str(e, "OPS_SANDBOX_ALLOW_CIDRS") ?? "").split(",").map((c) => c.trim()).filter((c) => c !== "");
  for (const cidr of sandboxAllowCidrs) {
    const [addr, bits, more] = cidr.split("/");
    if (isIP(addr) !== 4 || more !== undefined || (bits !== undefined && (!/^\d{1,2}$/.test(bits) || Number(bits) > 32))) {
      throw new ConfigError("OPS_SANDBOX_ALLOW_CIDRS", `expected IPv4 addresses or CIDRs like 10.1.2.0/24, got "${cidr}"`);
    }
  }
  const sandboxHostPorts = (str(e, "OPS_SANDBOX_HOST_PORTS") ?? "").split(",").map((c) => c.trim()).filter((c) => c !== "").map((p) => {
    if (!/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65535) throw new ConfigError("OPS_SANDBOX_HOST_PORTS", `expected port numbers from 1 to 65535, got "${p}"`);
    return Number(p);
  });

  const config: Config = {
    dataDir,
    listen,
    publicUrl,
    tokenTtlDays: int(e, "OPS_TOKEN_TTL_DAYS", 90, 0, 36500),
    registry,
    smtpUrl: url(e, "OPS_SMTP_URL", ["smtp:", "smtps:"]),
    mailFrom: str(e, "OPS_MAIL_FROM") ?? "ops@localhost",
    secretsKey: str(e, "OPS_SECRETS_KEY"),
    secretsKeyFile: secretsKeyFile === null ? null : path.resolve(cwd, secretsKeyFile),
    dbPlaneUrl: url(e, "OPS_DB_PLANE_URL", ["postgres:", "postgresql:"]),
    dbPlanePitr: bool(e, "OPS_DB_PLANE_PITR", false),
    dbPlaneStanza,
    npmScope,
    bootstrapEmail,
    bootstrapPassword,
    auditReads: bool(e, "OPS_AUDIT_READS", false),
    maxBodyBytes: int(e, "OPS_MAX_BODY_BYTES", 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxPublishBytes: int(e, "OPS_MAX_PUBLISH_BYTES", 64 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024),
    maxBlobBytes: int(e, "OPS_MAX_BLOB_BYTES", 8 * 1024 * 1024 * 1024, 1024, 1024 * 1024 * 1024 * 1024),
    maxReleaseBytes: int(e, "OPS_MAX_RELEASE_BYTES", 256 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024),
    shutdownGraceMs: int(e, "OPS_SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    schedulerTickMs: int(e, "OPS_SCHEDULER_TICK_MS", 1000, 10, 3_600_000),
    logLevel: logLevel as Config["logLevel"],
    hostApp: {
      id: str(e, "OPS_GITHUB_APP_ID"),
      slug: str(e, "OPS_GITHUB_APP_SLUG"),
      privateKeyFile: str(e, "OPS_GITHUB_APP_PRIVATE_KEY_FILE"),
      webhookSecret: str(e, "OPS_GITHUB_WEBHOOK_SECRET"),
      apiUrl: (url(e, "OPS_GITHUB_API_URL", ["http:", "https:"]) ?? "https://api.github.com").replace(/\/+$/, ""),
      webUrl: (url(e, "OPS_GITHUB_URL", ["http:", "https:"]) ?? "https://github.com").replace(/\/+$/, ""),
    },
    codeHost: oneOf(e, "OPS_CODE_HOST", ["builtin", "github"] as const, "builtin"),
    gitMaxPushBytes: int(e, "OPS_GIT_MAX_PUSH_BYTES", 1024 * 1024 * 1024, 1024, 1024 * 1024 * 1024 * 1024),
    buildConcurrency: int(e, "OPS_BUILD_CONCURRENCY", 2, 1, 64),
    buildStepTimeoutSecs: int(e, "OPS_BUILD_STEP_TIMEOUT_SECS", 1800, 1, 86_400),
    buildMemoryMb: int(e, "OPS_BUILD_MEMORY_MB", 2048, 0, 1024 * 1024),
    jobMemoryMb: int(e, "OPS_JOB_MEMORY_MB", 2048, 0, 1024 * 1024),
    sandboxPids: int(e, "OPS_SANDBOX_PIDS", 512, 0, 4_194_304),
    replicaMemoryMb: int(e, "OPS_REPLICA_MEMORY_MB", 512, 0, 1024 * 1024),
    sandboxTmpMb: int(e, "OPS_SANDBOX_TMP_MB", 256, 1, 1024 * 1024),
    buildMaxDiskMb: int(e, "OPS_BUILD_MAX_DISK_MB", 10240, 0, 1024 * 1024 * 1024),
    cacheMaxMb: int(e, "OPS_CACHE_MAX_MB", 5120, 0, 1024 * 1024 * 1024),
    imageMaxMb: int(e, "OPS_IMAGE_MAX_MB", 4096, 0, 1024 * 1024),
    ...imagesConfig(e),
    sandboxNetwork: oneOf(e, "OPS_SANDBOX_NETWORK", ["isolated", "host"] as const, "isolated"),
    sandboxAllowCidrs,
    sandboxHostPorts,
    sandboxUidBase: int(e, "OPS_SANDBOX_UID_BASE", 200_000, 1000, 4_000_000_000),
    ...engineConfig(e, cwd),
    dataPlane: oneOf(e, "OPS_DATA_PLANE", ["process", "inline"] as const, "process"),
    dataPlaneSpoolMb: int(e, "OPS_DATA_PLANE_SPOOL_MB", 64, 1, 1024 * 1024),
    ingressWorkers: int(e, "OPS_INGRESS_WORKERS", 0, 0, 64),
    ingressListen: ingress === "off" ? null : parseListen(ingress, "OPS_INGRESS_LISTEN"),
    ingressTlsListen: ingressTls === "off" ? null : parseListen(ingressTls, "OPS_INGRESS_TLS_LISTEN"),
    tls,
    acme: {
      directoryUrl: url(e, "OPS_ACME_DIRECTORY", ["https:", "http:"]) ?? "https://acme-v02.api.letsencrypt.org/directory",
      email: acmeEmail,
      caFile: acmeCa === null ? null : path.resolve(cwd, acmeCa),
    },
    deployHealthTimeoutSecs: int(e, "OPS_DEPLOY_HEALTH_TIMEOUT_SECS", 60, 1, 3600),
    logRetentionDays: int(e, "OPS_LOG_RETENTION_DAYS", 14, 1, 3650),
    telemetryMaxBytes: int(e, "OPS_TELEMETRY_MAX_BYTES", 10 * 1024 * 1024 * 1024, 1024 * 1024, 1024 ** 5),
    ingressLimits: {
      headerTimeoutSecs: int(e, "OPS_INGRESS_HEADER_TIMEOUT", 10, 1, 3600),
      idleTimeoutSecs: int(e, "OPS_INGRESS_IDLE_TIMEOUT", 75, 1, 86_400),
      bodyTimeoutSecs: int(e, "OPS_INGRESS_BODY_TIMEOUT", 60, 1, 86_400),
      sendTimeoutSecs: int(e, "OPS_INGRESS_SEND_TIMEOUT", 60, 1, 86_400),
      maxConnPerIp: int(e, "OPS_INGRESS_MAX_CONN_PER_IP", 256, 1, 1_000_000),
      maxConnections: int(e, "OPS_INGRESS_MAX_CONNECTIONS", 10_000, 1, 10_000_000),
    },
    trustedProxies,
    otlpMaxDecodedBytes: int(e, "OPS_OTLP_MAX_DECODED_BYTES", 16 * 1024 * 1024, 64 * 1024, 256 * 1024 * 1024),
    backup: {
      to: str(e, "OPS_BACKUP_TO"),
      schedule: backupSchedule,
      keep: int(e, "OPS_BACKUP_KEEP", 7, 1, 10_000),
      passphraseFile: backupPassphraseFile === null ? null : path.resolve(cwd, backupPassphraseFile),
      s3: {
        endpoint: url(e, "OPS_BACKUP_S3_ENDPOINT", ["http:", "https:"]),
        region: str(e, "OPS_BACKUP_S3_REGION") ?? "us-east-1",
        accessKeyId: str(e, "OPS_BACKUP_S3_ACCESS_KEY_ID"),
        secretAccessKey: str(e, "OPS_BACKUP_S3_SECRET_ACCESS_KEY"),
      },
    },
    updateUrl: url(e, "OPS_UPDATE_URL", ["http:", "https:"]),
  };
  return deepFreeze(config);
}
