/**
 * The built-in git host (DESIGN §5), the default code host: bare repositories under
 * `<dataDir>/git/<owner>/<repo>.git` where the owner is a project slug, read and written with the
 * system `git`, served over smart HTTP at `/git/`, pull requests and build reports kept as ops
 * rows. Each project is its own installation and reaches only its own repositories.
 */
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { Elysia } from "elysia";
import type { Core } from "../../../core/core";
import { OpsError } from "../../../core/errors";
import { PushSubscribers } from "../push";
import type { CodeHost, HostRepo, PullRequest, RepoRef } from "../types";
import { gitEnv } from "./git";
import { defaultBranchOf, existingRepoDir, initRepo, installHooks, listRepoNames, parseRepoName, repoDir } from "./repos";
import * as reads from "./reads";
import * as writes from "./writes";
import * as records from "./records";
import { gitErrorStyle, gitHttpRoutes, GIT_PREFIX } from "./http";
import { gitWebRoutes } from "./web";

/** Slack above `OPS_GIT_MAX_PUSH_BYTES` for a push request's ref commands and protocol framing. */
const PUSH_FRAMING_BYTES = 1024 * 1024;

function encodePath(p: string): string {
  return p.split("/").map(encodeURIComponent).join("/");
}

/** The built-in host of a Core. */
export function createBuiltinHost(core: Core): CodeHost {
  const root = path.join(core.config.dataDir, "git");
  mkdirSync(root, { recursive: true });
  installHooks(root);
  const env = gitEnv({ root, maxPushBytes: core.config.gitMaxPushBytes });
  const pushes = new PushSubscribers(core.log);
  const base = core.config.publicUrl;

  const dirOf = (ref: RepoRef) => existingRepoDir(root, ref.repo);
  const toRepo = (full: string, dir: string): HostRepo => ({
    fullName: full,
    defaultBranch: defaultBranchOf(dir),
    private: true,
    installationId: records.knownInstallation(core, full.split("/")[0]!),
  });
  const pullOf = (row: records.PullRow): PullRequest => ({
    number: row.number,
    state: row.state,
    head: row.head,
    base: row.base,
    headSha: row.headSha,
    mergeSha: row.mergeSha,
    htmlUrl: host.pullUrl(row.repo, row.number),
  });
  const signature = (s: { name: string; email: string }) => ({ ...s, at: core.clock.now() });

  const host: CodeHost = {
    kind: "builtin",
    configured: () => true,
    async describe() {
      const owners = new Set(listRepoNames(root).map((r) => r.split("/")[0]));
      return { slug: "ops", htmlUrl: `${base}/git`, installUrl: `${base}/git/installations/new`, installations: owners.size };
    },
    async listRepos() {
      return listRepoNames(root).map((full) => toRepo(full, repoDir(root, full) as string));
    },
    async installationFor(owner, forProject) {
      if (owner !== forProject || !core.access.findProject(owner)) return null;
      return records.installationOf(core, owner);
    },
    async getRepo(ref) {
      const dir = repoDir(root, ref.repo);
      if (!dir || !existsSync(path.join(dir, "HEAD"))) return null;
      return toRepo(ref.repo, dir);
    },
    async ensureRepo(ref) {
      const parsed = parseRepoName(ref.repo);
      if (!parsed || !core.access.findProject(parsed.owner)) return null;
      const full = `${parsed.owner}/${parsed.name}`;
      return toRepo(full, await initRepo(root, full, core.config.gitMaxPushBytes));
    },
    resolveRef: async (ref, name) => reads.resolveRef(env, dirOf(ref), name),
    readTree: async (ref, sha, opts) => reads.readTree(env, dirOf(ref), sha, opts.limit),
    readFile: async (ref, sha, p, opts) => reads.readFile(env, dirOf(ref), sha, p, opts.maxBytes),
    commitInfo: async (ref, sha) => reads.commitInfo(env, dirOf(ref), sha),
    fetchCommit: async (ref, sha, dir) => reads.fetchCommit(env, dirOf(ref), sha, dir),
    async commitChanges(ref, req) {
      const author = signature(req.author);
      return writes.commitChanges(env, dirOf(ref), { ...req, author, committer: author });
    },
    async openPull(ref, req) {
      const dir = dirOf(ref);
      const headSha = await reads.resolveRef(env, dir, `refs/heads/${req.head}`);
      if (!headSha) throw new OpsError("not_found", `No branch ${req.head} in ${ref.repo}.`);
      if (!(await reads.resolveRef(env, dir, `refs/heads/${req.base}`))) throw new OpsError("not_found", `No branch ${req.base} in ${ref.repo}.`);
      return pullOf(records.insertPull(core, ref.repo, { head: req.head, base: req.base, title: req.title, body: req.body ?? "", headSha }));
    },
    async getPull(ref, number) {
      const row = records.findPull(core, ref.repo, number);
      return row ? pullOf(row) : null;
    },
    async mergePull(ref, number, opts) {
      const dir = dirOf(ref);
      const row = records.findPull(core, ref.repo, number);
      if (!row) throw new OpsError("not_found", `No pull request #${number} in ${ref.repo}.`);
      if (row.state !== "open") return { merged: false, reason: `Pull request #${number} is ${row.state}.`, conflicts: [] };
      const headSha = await reads.resolveRef(env, dir, `refs/heads/${row.head}`);
      const baseSha = await reads.resolveRef(env, dir, `refs/heads/${row.base}`);
      if (!headSha) return { merged: false, reason: `The head branch ${row.head} no longer exists.`, conflicts: [] };
      if (!baseSha) return { merged: false, reason: `The base branch ${row.base} no longer exists.`, conflicts: [] };
      const result = await writes.mergeInto(env, dir, { base: row.base, baseSha, headSha, message: opts.message, committer: signature(opts.committer) });
      if (result.merged) records.finishPull(core, ref.repo, number, "merged", result.sha);
      return result;
    },
    async closePull(ref, number) {
      if (!records.findPull(core, ref.repo, number)) throw new OpsError("not_found", `No pull request #${number} in ${ref.repo}.`);
      records.finishPull(core, ref.repo, number, "closed", null);
    },
    createCheckRun: async (ref, input) => (dirOf(ref), records.createCheckRun(core, ref.repo, input)),
    updateCheckRun: async (ref, id, input) => records.updateCheckRun(core, ref.repo, id, input),
    setCommitStatus: async (ref, sha, input) => (dirOf(ref), records.setCommitStatus(core, ref.repo, sha, input)),
    recordReportIn(t, ref, report) {
      dirOf(ref);
      let checkRunId = report.checkRunId;
      let checkRunError: string | null = null;
      try {
        if (checkRunId === null) checkRunId = records.createCheckRun(core, ref.repo, report.check, t);
        else records.updateCheckRun(core, ref.repo, checkRunId, report.check, t);
      } catch (e) {
        checkRunError = (e as Error).message;
        checkRunId = null;
      }
      return { checkRunId, statusId: records.setCommitStatus(core, ref.repo, report.sha, report.status, t), checkRunError };
    },
    createDeployment: async (ref, input) => (dirOf(ref), records.createDeployment(core, ref.repo, input)),
    createDeploymentStatus: async (ref, id, input) => records.createDeploymentStatus(core, ref.repo, id, input),
    repoUrl: (repo) => `${base}/git/${repo}`,
    cloneUrl: (repo) => `${base}/git/${repo}.git`,
    fileUrl: (repo, ref, p) => `${base}/git/${repo}/blob/${encodeURIComponent(ref)}/${encodePath(p)}`,
    pullUrl: (repo, number) => `${base}/git/${repo}/pulls/${number}`,
    onPush: (handler) => pushes.on(handler),
    routes: () => new Elysia({ name: "codehost-builtin" }).use(gitHttpRoutes(core, { root, pushes })).use(gitWebRoutes(core)),
    bodyLimits: () => [{ prefix: GIT_PREFIX, bytes: core.config.gitMaxPushBytes + PUSH_FRAMING_BYTES, raw: true }],
    errorStyles: () => [gitErrorStyle()],
  };
  return host;
}
