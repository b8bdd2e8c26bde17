/**
 * S3-compatible buckets, through Bun's built-in S3 client. Counting lists every key under the
 * prefix (paged, 1000 a page) within a time budget.
 */
import { S3Client } from "bun";
import type { BucketCount } from "./local";

export interface S3Target {
  endpoint: string;
  bucket: string;
  region?: string;
  prefix?: string;
  accessKeyId?: string | null;
  secretAccessKey?: string | null;
}

/** Count objects and bytes; throws when the endpoint does not answer within `timeoutMs`. */
export async function countS3(target: S3Target, timeoutMs = 10_000): Promise<BucketCount> {
  const client = new S3Client({
    endpoint: target.endpoint,
    bucket: target.bucket,
    region: target.region ?? "us-east-1",
    accessKeyId: target.accessKeyId ?? undefined,
    secretAccessKey: target.secretAccessKey ?? undefined,
  });
  const work = (async () => {
    let objects = 0;
    let bytes = 0;
    let token: string | undefined;
    for (let page = 0; page < 10_000; page++) {
      const res = await client.list({ prefix: target.prefix || undefined, maxKeys: 1000, continuationToken: token });
      for (const o of res.contents ?? []) {
        objects++;
        bytes += Number(o.size ?? 0);
      }
      if (!res.isTruncated || !res.nextContinuationToken) break;
      token = res.nextContinuationToken;
    }
    return { objects, bytes };
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
