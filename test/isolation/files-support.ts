/**
 * What the hostile-repository suites share: a commit pushed with the real `git` CLI that holds
 * symbolic links (which the fixtures' working copy does not write), and a root-only folder on the
 * host that no build may read, own or pack.
 */
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { tempDir } from "../harness";
import { git, workDir } from "../sources-git-helpers";

/**
 * Push one commit holding `files` and `links` (path → link target, written as symlinks) as
 * `ref` (a branch, or a tag with `tag: true`) to `remote`; returns the commit's sha.
 */
export async function pushTree(remote: string, ref: string, files: Record<string, string>, links: Record<string, string> = {}, opts: { tag?: boolean } = {}): Promise<string> {
  const dir = workDir("ops-iso-tree-");
  try {
    await git(dir, "init", "-q", "-b", "main");
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
      writeFileSync(path.join(dir, p), text);
    }
    for (const [p, target] of Object.entries(links)) {
      mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
      symlinkSync(target, path.join(dir, p));
    }
    await git(dir, "add", "-A");
    await git(dir, "commit", "-q", "-m", `hostile tree for ${ref}`);
    if (opts.tag) await git(dir, "tag", ref);
    await git(dir, "push", "-q", remote, opts.tag ? `refs/tags/${ref}` : `HEAD:refs/heads/${ref}`);
    return (await git(dir, "rev-parse", "HEAD")).trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface RootOnly {
  /** A 0700 root folder: `x/secret.txt` inside it holds `secret`. */
  dir: string;
  secret: string;
  remove(): void;
}

/** A folder only root may enter, with a subfolder and a file a build must never see. */
export function rootOnlyFolder(): RootOnly {
  const base = tempDir("ops-iso-root-only-");
  const dir = path.join(base, "vault");
  const secret = `root-only-${crypto.randomUUID()}`;
  mkdirSync(path.join(dir, "x"), { recursive: true });
  writeFileSync(path.join(dir, "x", "secret.txt"), `${secret}\n`, { mode: 0o600 });
  for (const d of [dir, path.join(dir, "x")]) chmodSync(d, 0o700);
  return { dir, secret, remove: () => rmSync(base, { recursive: true, force: true }) };
}
