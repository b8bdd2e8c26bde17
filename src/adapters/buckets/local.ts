/**
 * Local buckets: a directory in the data dir. Counting walks it without following links.
 */
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";

export interface BucketCount {
  objects: number;
  bytes: number;
}

/** Count the files and bytes under `dir`; throws when the directory is missing or unreadable. */
export async function countLocal(dir: string): Promise<BucketCount> {
  const top = await lstat(dir);
  if (!top.isDirectory()) throw new Error("not a directory");
  let objects = 0;
  let bytes = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const d = stack.pop() as string;
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else if (e.isFile()) {
        objects++;
        bytes += (await lstat(p)).size;
      }
    }
  }
  return { objects, bytes };
}
