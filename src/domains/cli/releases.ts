/**
 * CLI releases. A release is a binary for one `<platform>-<arch>` target under a version; the
 * bytes live in the blob store under their SHA-256, which clients verify before installing or
 * replacing themselves. The current release of a target is the one published last — never the
 * highest version number — so publishing an older build is how an estate rolls the CLI back.
 */
import { and, desc, eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuditActor } from "../../core/audit";
import { auditAllowed } from "../../core/audit";
import { tx } from "../../core/db/client";
import type { BlobSource } from "../../core/blobs/store";
import { iso } from "../../core/clock";
import { OpsError, invalid } from "../../core/errors";
import { uuidv7 } from "../../core/ids";
import { cliReleases, type CliReleaseRow } from "./tables";
import type { CliReleaseResponse } from "./model";

/** The targets `bun build --compile` produces; anything else is not a target (422). */
export const KNOWN_TARGETS = ["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl", "darwin-x64", "darwin-arm64", "windows-x64"] as const;
export const VERSION_PATTERN = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;

export function isKnownTarget(target: string): boolean {
  return (KNOWN_TARGETS as readonly string[]).includes(target);
}

function assertTarget(target: string): void {
  if (!isKnownTarget(target)) {
    throw new OpsError("refused", `"${target.slice(0, 40)}" is not a target ops publishes; use one of ${KNOWN_TARGETS.join(", ")}.`, { targets: [...KNOWN_TARGETS] });
  }
}

/** The target of the running binary, e.g. `linux-x64`. */
export function hostTarget(): string {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  return `${platform}-${process.arch}`;
}

export function toReleaseResponse(r: CliReleaseRow): CliReleaseResponse {
  return {
    digest: r.digest,
    download: `/api/v1/cli/releases/${encodeURIComponent(r.version)}/${r.target}/download`,
    published_at: iso(r.publishedAt),
    size_bytes: r.size,
    target: r.target,
    version: r.version,
  };
}

export interface PublishInput {
  version: string;
  target: string;
  body: BlobSource;
  /** Expected digest; the upload is refused when the bytes differ. */
  digest?: string;
  publishedBy?: string | null;
}

/**
 * Publish a binary: stream it into the blob store (refusing past OPS_MAX_RELEASE_BYTES), then
 * record the release and its audit row (`estate.manage`) in one transaction. 409 when that
 * version is already published for the target.
 */
export async function publishRelease(core: Core, input: PublishInput, actor: AuditActor): Promise<CliReleaseResponse> {
  if (!VERSION_PATTERN.test(input.version)) throw invalid("version", "must be 1 to 64 letters, digits, '.', '+', '_' or '-'");
  assertTarget(input.target);
  if (input.digest !== undefined && !/^[0-9a-f]{64}$/.test(input.digest)) throw invalid("digest", "must be a lowercase hex SHA-256");
  const exists = () => core.db.select({ id: cliReleases.id }).from(cliReleases).where(and(eq(cliReleases.version, input.version), eq(cliReleases.target, input.target))).get();
  if (exists()) throw new OpsError("already_exists", `Version ${input.version} is already published for ${input.target}; publish a new version instead.`);

  let put;
  try {
    put = await core.blobs.put(input.body, { maxBytes: core.config.maxReleaseBytes, expectDigest: input.digest });
  } catch (e) {
    if (e instanceof OpsError && e.code === "bad_request") throw new OpsError("refused", "The uploaded bytes do not match the digest given.", e.details);
    throw e;
  }
  if (put.size === 0) {
    if (put.created) await core.blobs.delete(put.digest);
    throw invalid("body", "the binary is empty");
  }
  const now = core.clock.now();
  try {
    const row = tx(core.db, (t) => {
      const r = t
        .insert(cliReleases)
        .values({ id: uuidv7(now), version: input.version, target: input.target, digest: put.digest, size: put.size, publishedAt: now, publishedBy: input.publishedBy ?? null })
        .returning()
        .get();
      auditAllowed(core, t, actor, "estate.manage", `cli-release:${input.version}/${input.target}`, {}, { op: "cli.publish", digest: put.digest });
      return r;
    });
    core.log.info("cli release published", { version: row.version, target: row.target, digest: row.digest, size: row.size });
    return toReleaseResponse(row);
  } catch (e) {
    // Keep no orphan: a blob this call created and no row refers to goes again.
    if (put.created && !core.db.select({ id: cliReleases.id }).from(cliReleases).where(eq(cliReleases.digest, put.digest)).get()) await core.blobs.delete(put.digest);
    throw e;
  }
}

/** The current release for `target`: 422 not a target, 404 nothing published for it. */
export function currentRelease(core: Core, target: string): CliReleaseRow {
  assertTarget(target);
  const row = core.db.select().from(cliReleases).where(eq(cliReleases.target, target)).orderBy(desc(cliReleases.publishedAt), desc(cliReleases.id)).limit(1).get();
  if (!row) throw new OpsError("not_found", `No ops CLI release is published for ${target}.`);
  return row;
}

/** A release's row and bytes: 422 not a target, 404 no such release. */
export function openRelease(core: Core, version: string, target: string): { row: CliReleaseRow; blob: Blob } {
  assertTarget(target);
  const row = core.db.select().from(cliReleases).where(and(eq(cliReleases.version, version), eq(cliReleases.target, target))).get();
  const blob = row ? core.blobs.open(row.digest) : null;
  if (!row || !blob) throw new OpsError("not_found", `No ops CLI release ${version.slice(0, 64)} for ${target}.`);
  return { row, blob };
}

/** True when at least one release is published (the installer has something to install). */
export function anyReleasePublished(core: Core): boolean {
  return core.db.select({ id: cliReleases.id }).from(cliReleases).limit(1).get() !== undefined;
}
