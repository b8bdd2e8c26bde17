/**
 * Running the real `git` CLI in tests: an isolated HOME and configuration (no user or system
 * config, no credential prompts), output captured, and a token put into the clone URL the way a
 * user does (`http://x:<token>@host/git/<owner>/<repo>.git`).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export interface GitRun {
  code: number;
  stdout: string;
  stderr: string;
}

const home = mkdtempSync(path.join(tmpdir(), "ops-git-home-"));

/** The environment every test git process runs with. */
export function gitTestEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: "Test Author",
    GIT_AUTHOR_EMAIL: "author@ops.test",
    GIT_COMMITTER_NAME: "Test Author",
    GIT_COMMITTER_EMAIL: "author@ops.test",
    ...extra,
  };
}

/** Run `git <args>` in `cwd`. */
export async function runGit(cwd: string, args: string[], extra: Record<string, string> = {}): Promise<GitRun> {
  const proc = Bun.spawn(["git", ...args], { cwd, env: gitTestEnv(extra), stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** Run git and fail with its output unless it exits 0; returns stdout. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const r = await runGit(cwd, args);
  if (r.code !== 0) throw new Error(`git ${args.join(" ")} exited ${r.code}\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

/** A clone URL carrying `token` as the Basic password. */
export function cloneUrl(base: string, repo: string, token?: string): string {
  const u = new URL(`${base}/git/${repo}.git`);
  if (token) {
    u.username = "x";
    u.password = token;
  }
  return u.toString();
}

/** A fresh empty directory. */
export function workDir(prefix = "ops-git-work-"): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}
