/**
 * Buckets: project-level object storage. `local` (default) is a directory under
 * `<data dir>/buckets/<project>/<bucket>`; `s3` names an S3-compatible endpoint, with its keys
 * kept as the bucket's unit secrets (`PUT /secrets/<bucket>/S3_ACCESS_KEY_ID` and
 * `S3_SECRET_ACCESS_KEY`; anonymous when absent). `check` counts objects and bytes now; a bucket
 * that does not answer is `pending`, never an error.
 */
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import { countLocal, type BucketCount } from "../../adapters/buckets/local";
import { countS3 } from "../../adapters/buckets/s3";
import { extendKind, secretValues } from "./kinds";
import { specOf, type Observed, type ResourceRow } from "./rows";
import type { BucketSpec } from "./specs";

export function bucketDir(core: Core, projectSlug: string, name: string): string {
  return path.join(core.config.dataDir, "buckets", projectSlug, name);
}

function slugOf(core: Core, row: ResourceRow): string {
  return core.access.findProjectById(row.projectId)?.slug ?? row.projectId;
}

function field(p: string, message: string): OpsError {
  return new OpsError("validation_failed", `${p}: ${message}`, { fields: [{ path: p, message }] });
}

function summary(c: BucketCount): string {
  return `${c.objects} object${c.objects === 1 ? "" : "s"}, ${c.bytes} bytes`;
}

/** Count the bucket now. */
export async function countBucket(core: Core, row: ResourceRow): Promise<Observed> {
  const spec = specOf<BucketSpec>(row);
  if ((spec.backend ?? "local") === "local") {
    const dir = bucketDir(core, slugOf(core, row), row.name);
    try {
      const c = await countLocal(dir);
      return { state: "ready", summary: summary(c), detail: { backend: "local", objects: c.objects, bytes: c.bytes } };
    } catch {
      return { state: "pending", summary: "does not answer: its directory is missing or unreadable", detail: { backend: "local" } };
    }
  }
  let accessKeyId: string | null = null;
  let secretAccessKey: string | null = null;
  try {
    accessKeyId = secretValues(core).unitSecret(core, core.db, row.projectId, row.name, "S3_ACCESS_KEY_ID");
    secretAccessKey = secretValues(core).unitSecret(core, core.db, row.projectId, row.name, "S3_SECRET_ACCESS_KEY");
  } catch (e) {
    if (e instanceof OpsError && e.code === "sealed") return { state: "pending", summary: "cannot be counted while the secrets store is sealed", detail: { backend: "s3" } };
    throw e;
  }
  try {
    const c = await countS3({ endpoint: spec.endpoint as string, bucket: spec.bucket as string, region: spec.region, prefix: spec.prefix, accessKeyId, secretAccessKey });
    return { state: "ready", summary: summary(c), detail: { backend: "s3", objects: c.objects, bytes: c.bytes } };
  } catch {
    return { state: "pending", summary: "does not answer: the S3 endpoint did not list the bucket", detail: { backend: "s3" } };
  }
}

export function installBucketKind(core: Core): void {
  extendKind(core, "bucket", {
    validate(_core, _q, ctx) {
      const spec = ctx.spec as BucketSpec;
      const s3 = spec.backend === "s3";
      if (s3 && (!spec.endpoint || !spec.bucket)) throw field("spec", "an s3 bucket needs `endpoint` and `bucket`");
      if (!s3 && (spec.endpoint || spec.bucket || spec.region || spec.prefix)) throw field("spec", "`endpoint`, `bucket`, `region` and `prefix` are for s3 buckets");
      if (ctx.prev && (specOf<BucketSpec>(ctx.prev).backend ?? "local") !== (spec.backend ?? "local")) throw field("spec.backend", "cannot change after creation");
    },
    afterWrite(c, _t, row, ctx) {
      if ((specOf<BucketSpec>(row).backend ?? "local") === "local") mkdirSync(bucketDir(c, ctx.project.slug, row.name), { recursive: true, mode: 0o750 });
    },
    refuseDelete(c, _q, row, confirm) {
      if ((specOf<BucketSpec>(row).backend ?? "local") !== "local" || confirm === row.name) return null;
      // A local bucket's objects go with it: ask for the name when it holds any.
      const status = JSON.parse(row.statusDetail) as { objects?: number };
      const dir = bucketDir(c, slugOf(c, row), row.name);
      let nonEmpty = (status.objects ?? 0) > 0;
      try {
        nonEmpty ||= readdirSync(dir).length > 0;
      } catch {
        // Missing directory: nothing to lose.
      }
      return nonEmpty ? `Bucket "${row.name}" holds objects that deleting removes; pass confirm=${row.name}.` : null;
    },
    async beforeDelete(c, row) {
      if ((specOf<BucketSpec>(row).backend ?? "local") === "local") rmSync(bucketDir(c, slugOf(c, row), row.name), { recursive: true, force: true });
    },
    observe: countBucket,
  });
}
