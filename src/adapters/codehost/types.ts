/**
 * The code-host adapter: everything ops asks of the place repositories live on. The sources domain
 * (`/host`, `/sources`, the studio, scans) and the builds domain talk to a `CodeHost` only, never
 * to a particular host, so the built-in git host (`builtin/`, the default) and the GitHub App
 * (`github/`) are interchangeable behind `codeHostFor(core)` (index.ts).
 *
 * Conventions every implementation keeps:
 * - A repository is named `owner/name` (`RepoRef.repo`); for the built-in host the owner is the
 *   project slug. `installationId` is the host's installation on the owner (`installationFor`);
 *   the built-in host gives each project one, always present.
 * - Shas are full 40-hex commit, tree or blob ids. Refs given to `resolveRef` may be a branch
 *   name, a tag name, a full ref (`refs/heads/x`) or a sha.
 * - Failures are `OpsError`s: `unavailable` (503) when the host is not configured or cannot be
 *   reached (rate limits and 5xx included, with `retry-after` when known), `not_found` for an
 *   unknown repository, ref or pull request, `conflict` (409) for a refused write (a branch that
 *   moved, a pull request that is not open). Methods never return partial success.
 * - Contract tests for every implementation: `test/codehost-contract.ts` (`codeHostContract`).
 */
import type { AnyElysia } from "elysia";
import type { ErrorStyle } from "../../core/core";
import type { Tx } from "../../core/db/client";

/** Which implementation a host is (`OPS_CODE_HOST`). */
export type CodeHostKind = "builtin" | "github";

/** A repository on a host, as an installation reaches it. */
export interface RepoRef {
  /** `owner/name`. */
  repo: string;
  /** The host's installation on the owner (0 = none; only `listRepos`/`ensureRepo` callers pass that). */
  installationId: number;
}

/** What `/host/app` shows (HostAppResponse). */
export interface HostApp {
  /** The App's slug (`ops` for the built-in host). */
  slug: string;
  /** The App's (or the built-in host's) web address. */
  htmlUrl: string;
  /** Where an owner installs the App (`<htmlUrl>/installations/new`). */
  installUrl: string;
  /** Owners the App is installed on now (built-in: projects with a repository). */
  installations: number;
}

/** A repository as the host reports it (spec `Repo`). */
export interface HostRepo {
  /** `owner/name`. */
  fullName: string;
  defaultBranch: string;
  private: boolean;
  /** The installation that sees it (0 when unknown). */
  installationId: number;
}

/** One entry of a tree listing. Submodules are never listed. */
export interface TreeEntry {
  /** Repository-relative path, no leading `/`. */
  path: string;
  type: "blob" | "tree";
  /** Blob or tree sha. */
  sha: string;
  /** Git mode: `100644`, `100755`, `120000` (symlink) for blobs, `040000` for trees. */
  mode: string;
  /** Bytes for a blob; null for a tree. */
  size: number | null;
}

/** A tree listing, in the host's order (a directory before what it contains). */
export interface TreeListing {
  /** The commit the listing is of. */
  commitSha: string;
  entries: TreeEntry[];
  /** True when the listing stopped at the limit: `entries` is a prefix. */
  truncated: boolean;
}

/** What is at a path on a commit. */
export type FileAt =
  | { kind: "missing" }
  | { kind: "directory"; sha: string }
  | {
      kind: "file";
      /** Blob sha. */
      sha: string;
      size: number;
      mode: string;
      /** The bytes; absent when `size` is over the `maxBytes` the caller allowed. */
      content?: Uint8Array;
    };

/** One change of a commit made through the host. */
export interface FileChange {
  /** Repository-relative path (checked by the caller: no `/` prefix, no `..`, not under `.git/`). */
  path: string;
  /** New bytes; null deletes the path. */
  content: Uint8Array | null;
  /**
   * A move: the source path, removed in the same commit; the new path keeps its git mode. Without
   * it an existing path keeps its own mode and a new path is `100644`.
   */
  movedFrom?: string;
}

/** A commit of changes on a new branch over a parent (a studio save). */
export interface CommitRequest {
  /** Branch to create (`ops/save-12`); refused (409) when it exists. */
  branch: string;
  /** The parent commit: the head of the branch the edit was made on. */
  parentSha: string;
  message: string;
  author: { name: string; email: string };
  changes: FileChange[];
}

/** Author and message of a commit (what a build shows). */
export interface CommitInfo {
  sha: string;
  /** The author's login on the host (built-in host: the author's name as committed). */
  author: string;
  authorEmail: string;
  /** First line of the commit message. */
  message: string;
  /** Commit time, epoch ms (builds clamp image mtimes to it). */
  committedAt: number;
  parents: string[];
}

/** A pull request (built-in host: an ops row). */
export interface PullRequest {
  number: number;
  state: "open" | "closed" | "merged";
  /** Head branch name. */
  head: string;
  /** Base branch name. */
  base: string;
  headSha: string;
  /** The commit the merge landed as (the head itself for a fast-forward); null until merged. */
  mergeSha: string | null;
  htmlUrl: string;
}

export interface OpenPullRequest {
  head: string;
  base: string;
  title: string;
  body?: string;
}

/** A merge's outcome: landed, or refused with the host's reason (and conflicting paths, if any). */
export type MergeResult =
  | { merged: true; sha: string }
  | { merged: false; reason: string; conflicts: string[] };

export interface CheckRunInput {
  name: string;
  headSha: string;
  status: "queued" | "in_progress" | "completed";
  /** Set with `status: completed`. */
  conclusion?: "success" | "failure" | "neutral" | "cancelled" | "timed_out" | "action_required" | "skipped";
  title?: string;
  summary?: string;
  detailsUrl?: string;
}

export interface CommitStatusInput {
  state: "pending" | "success" | "failure" | "error";
  /** The status's name (`ops/build`). */
  context: string;
  description?: string;
  targetUrl?: string;
}

export interface DeploymentInput {
  /** Commit sha deployed. */
  sha: string;
  environment: string;
  description?: string;
}

export interface DeploymentStatusInput {
  state: "queued" | "in_progress" | "success" | "failure" | "error" | "inactive";
  description?: string;
  environmentUrl?: string;
  logUrl?: string;
}

/** One updated ref of a push, reported after the ref is written. */
export interface HostPush {
  /** `owner/name`. */
  repo: string;
  installationId: number;
  /** Full ref: `refs/heads/main`, `refs/tags/v1.0.0`. */
  ref: string;
  /** Previous sha (40 zeros when the ref is new). */
  before: string;
  /** New sha (40 zeros when the ref was deleted). */
  after: string;
  /** Who pushed: the ops actor (built-in) or the host login (GitHub). */
  pusher: string;
  /** When the host received it, epoch ms. */
  at: number;
  /**
   * Tell the pusher one line (the built-in host prints it as `remote: …` in the push's answer,
   * docs/decisions/0430); unset where the push has no answer to write into (GitHub's webhooks).
   * One function for all the refs of one push: subscribers may key per-push work on it.
   */
  say?: (line: string) => void;
}

export type PushHandler = (push: HostPush) => void | Promise<void>;

/** The all-zero sha git uses for "no commit" in ref updates. */
export const ZERO_SHA = "0000000000000000000000000000000000000000";

/** A build's state for `recordReportIn`: its check run (null: not created yet) and a commit status. */
export interface BuildReport {
  checkRunId: number | null;
  check: CheckRunInput;
  sha: string;
  status: CommitStatusInput;
}

/** The code-host adapter. One instance per Core (`codeHostFor`). */
export interface CodeHost {
  /** Which implementation this is (for logs and `/host/app`; domains never branch on it). */
  readonly kind: CodeHostKind;

  /** False when the host cannot be used (App settings missing): every `/host` and `/sources` route answers 503. */
  configured(): boolean;
  /** The host as `/host/app` shows it. */
  describe(): Promise<HostApp>;
  /** Every repository the host's installations can see (`/host/repos`). */
  listRepos(): Promise<HostRepo[]>;
  /** The installation through which project `forProject` (slug) reaches `owner`'s repositories; null = not installed (409). */
  installationFor(owner: string, forProject: string): Promise<number | null>;
  /** The repository, or null when it does not exist. */
  getRepo(ref: RepoRef): Promise<HostRepo | null>;
  /** The repository, created empty (default branch `main`) when the host can create it; null when it does not exist and cannot be created. */
  ensureRepo(ref: RepoRef): Promise<HostRepo | null>;

  /** The commit sha a branch, tag, full ref or sha names; null when it names nothing. */
  resolveRef(ref: RepoRef, name: string): Promise<string | null>;
  /** Every entry of a commit's tree, recursively, stopping after `limit` entries. */
  readTree(ref: RepoRef, commitSha: string, opts: { limit: number }): Promise<TreeListing>;
  /** What is at `path` on a commit; the bytes only when the file is at most `maxBytes`. */
  readFile(ref: RepoRef, commitSha: string, path: string, opts: { maxBytes: number }): Promise<FileAt>;
  /** Author, first message line, time and parents of a commit; null when unknown. */
  commitInfo(ref: RepoRef, sha: string): Promise<CommitInfo | null>;
  /** Write a commit's tree (files, modes, symlinks; no submodules) into the empty directory `dir` (what the builder clones). */
  fetchCommit(ref: RepoRef, sha: string, dir: string): Promise<void>;

  /** Commit `changes` over `parentSha` as the new branch `branch`; returns the commit sha. 409 when the branch exists. */
  commitChanges(ref: RepoRef, req: CommitRequest): Promise<string>;
  /** Open a pull request from `head` into `base`. */
  openPull(ref: RepoRef, req: OpenPullRequest): Promise<PullRequest>;
  /** A pull request by number; null when unknown. */
  getPull(ref: RepoRef, number: number): Promise<PullRequest | null>;
  /** Merge an open pull request (fast-forward when possible, else a merge commit), or report why the host refuses. */
  mergePull(ref: RepoRef, number: number, opts: { message: string; committer: { name: string; email: string } }): Promise<MergeResult>;
  /** Close an open pull request without merging it. */
  closePull(ref: RepoRef, number: number): Promise<void>;

  /** Create a check run on a commit; returns the host's id. */
  createCheckRun(ref: RepoRef, input: CheckRunInput): Promise<number>;
  /** Update a check run (status, conclusion, texts). */
  updateCheckRun(ref: RepoRef, id: number, input: Partial<Omit<CheckRunInput, "headSha">>): Promise<void>;
  /** Set a commit status; returns the host's id. */
  setCommitStatus(ref: RepoRef, sha: string, input: CommitStatusInput): Promise<number>;
  /**
   * Only a host whose records live in ops's own database (the built-in host): a build's report —
   * its check run updated (created when `checkRunId` is null) and a new commit status — written
   * in the caller's transaction `t`, so that a report and the caller's own bookkeeping are one
   * commit instead of one each. A check run that cannot be updated any more is named in
   * `checkRunError` (its id comes back null) and the status is set all the same, as with the
   * separate calls.
   */
  recordReportIn?(t: Tx, ref: RepoRef, report: BuildReport): { checkRunId: number | null; statusId: number; checkRunError: string | null };
  /** Record a deployment of a commit to an environment; returns the host's id. */
  createDeployment(ref: RepoRef, input: DeploymentInput): Promise<number>;
  /** Add a status to a deployment; returns the host's id. */
  createDeploymentStatus(ref: RepoRef, deploymentId: number, input: DeploymentStatusInput): Promise<number>;

  /** The repository's web page. */
  repoUrl(repo: string): string;
  /** The URL `git clone` takes. */
  cloneUrl(repo: string): string;
  /** A file's web page at a ref. */
  fileUrl(repo: string, ref: string, path: string): string;
  /** A pull request's web page. */
  pullUrl(repo: string, number: number): string;

  /** Subscribe to pushes (built-in: after receive-pack wrote the refs; GitHub: from the webhook); returns the unsubscribe function. */
  onPush(handler: PushHandler): () => void;

  /** HTTP routes the host serves inside ops (the built-in host's `/git/`), mounted by the sources domain. */
  routes?(): AnyElysia;
  /** Body limits of those routes (kernel `bodyLimits` shape). */
  bodyLimits?(): Array<{ prefix: string; bytes: number; raw?: boolean }>;
  /** Error renderers of those routes. */
  errorStyles?(): ErrorStyle[];
}
