/**
 * Fixtures for source tests: connect a repository through the service, and put commits straight
 * into a built-in bare repository with git plumbing (what a push would have done), so tests that
 * are not about pushing start from a known history.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestApp } from "./harness";
import type { AuthContext } from "../src/core/authz/plugin";
import type { ProjectRef } from "../src/core/core";
import { connectSource } from "../src/domains/sources/connections";
import { gitTestEnv } from "./sources-git-helpers";

/** The bare directory of a built-in repository. */
export function bareDir(t: TestApp, repo: string): string {
  return path.join(t.dataDir, "git", `${repo}.git`);
}

async function plumb(gitDir: string, args: string[], extra: Record<string, string> = {}, input?: string): Promise<string> {
  const proc = Bun.spawn(["git", `--git-dir=${gitDir}`, ...args], { env: gitTestEnv(extra), stdin: input === undefined ? "ignore" : Buffer.from(input), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`git ${args.join(" ")}: ${err}`);
  return out.trim();
}

/**
 * Commit `files` (path → text or bytes; null deletes) on `branch` of a built-in repository, over
 * the branch's head when it has one. Returns the commit sha.
 */
export async function commitFiles(t: TestApp, repo: string, files: Record<string, string | Uint8Array | null>, opts: { branch?: string; message?: string; mode?: Record<string, string> } = {}): Promise<string> {
  const gitDir = bareDir(t, repo);
  const branch = opts.branch ?? "main";
  const scratch = mkdtempSync(path.join(tmpdir(), "ops-seed-"));
  try {
    const idx = { GIT_INDEX_FILE: path.join(scratch, "index") };
    const parent = await plumb(gitDir, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`]).catch(() => "");
    if (parent) await plumb(gitDir, ["read-tree", parent], idx);
    for (const [p, content] of Object.entries(files)) {
      if (content === null) {
        await plumb(gitDir, ["update-index", "--force-remove", "--", p], idx);
        continue;
      }
      const f = path.join(scratch, "blob");
      writeFileSync(f, content);
      const sha = await plumb(gitDir, ["hash-object", "-w", "--no-filters", f]);
      await plumb(gitDir, ["update-index", "--add", "--cacheinfo", `${opts.mode?.[p] ?? "100644"},${sha},${p}`], idx);
    }
    const tree = await plumb(gitDir, ["write-tree"], idx);
    const commit = await plumb(gitDir, ["commit-tree", tree, ...(parent ? ["-p", parent] : []), "-F", "-"], {}, `${opts.message ?? "Seed"}\n`);
    await plumb(gitDir, ["update-ref", `refs/heads/${branch}`, commit]);
    return commit;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Connect `<project>/<name>` (created empty by the built-in host) and return the source id. */
export async function connect(t: TestApp, auth: AuthContext, name: string): Promise<{ id: string; repo: string }> {
  const project = auth.project as ProjectRef;
  const res = await connectSource(t.core, project, { repo: `${project.slug}/${name}` }, auth);
  return { id: res.id, repo: res.repo };
}
