/**
 * Pull requests on GitHub: open (`POST pulls`), read (`GET pulls/{n}`), close (`PATCH pulls/{n}`)
 * and merge (`PUT pulls/{n}/merge` with `merge_method: "merge"` and the head sha it was asked
 * about, so a head that moved meanwhile is refused rather than merged unseen).
 *
 * GitHub's merge API always writes a merge commit for the "merge" method (it has no fast-forward),
 * and the repository's merge settings and branch protection apply: a squash-only repository, a
 * required check that is not green or a conflict come back as refusals carrying GitHub's message
 * (405 "Pull Request is not mergeable", "Merge commits are not allowed on this repository", 409
 * "Head branch was modified"). GitHub does not name conflicting paths: when it refuses a pull
 * request as not mergeable, ops works them out from the three versions of every path both sides
 * changed (conflicts.ts) and reports them with the reason; when it cannot, the list is empty and
 * the reason says so. The merge commit's committer is GitHub's, not the one asked for; the message
 * is used as asked (first line as the title).
 */
import { OpsError } from "../../../core/errors";
import type { Logger } from "../../../core/log";
import type { MergeResult, OpenPullRequest, PullRequest } from "../types";
import { githubMessage, repoPath, type GithubClient } from "./client";
import type { Installed, Reader } from "./reads";
import { conflictingPaths } from "./conflicts";

interface GithubPull {
  number: number;
  state: "open" | "closed";
  merged?: boolean;
  merged_at: string | null;
  merge_commit_sha: string | null;
  mergeable?: boolean | null;
  mergeable_state?: string;
  html_url: string;
  head: { ref: string; sha: string };
  base: { ref: string; sha: string };
}

function toPull(p: GithubPull): PullRequest {
  const merged = p.merged === true || p.merged_at !== null;
  return {
    number: p.number,
    state: merged ? "merged" : p.state,
    head: p.head.ref,
    base: p.base.ref,
    headSha: p.head.sha,
    mergeSha: merged ? p.merge_commit_sha : null,
    htmlUrl: p.html_url,
  };
}

/** Why GitHub's `mergeable_state` stops a merge, in words. */
const BLOCKERS: Record<string, string> = {
  dirty: "the head and base branches conflict (GitHub names no paths)",
  blocked: "branch protection blocks it (a required check or review is missing)",
  behind: "the head branch is behind its base and the base requires branches to be up to date",
  draft: "the pull request is a draft",
  unstable: "a required check is not green",
};

export class Pulls {
  constructor(
    private readonly client: GithubClient,
    private readonly reader: Reader,
    private readonly log: Logger,
  ) {}

  private path(ref: Installed, n?: number) {
    return `${repoPath(ref.repo)}/pulls${n === undefined ? "" : `/${n}`}`;
  }

  async open(ref: Installed, req: OpenPullRequest): Promise<PullRequest> {
    const auth = { installation: ref.installationId };
    const r = await this.client.call<GithubPull>({ method: "POST", path: this.path(ref), auth, body: { title: req.title, head: req.head, base: req.base, body: req.body ?? "" }, expect: [422] });
    if (r.status === 201 || r.status === 200) return toPull(r.data);
    // 422 covers a missing branch and "No commits between"; name the missing branch like the built-in host.
    for (const branch of [req.head, req.base]) {
      if (!(await this.reader.resolveRef(ref, `refs/heads/${branch}`))) throw new OpsError("not_found", `No branch ${branch} in ${ref.repo}.`);
    }
    throw new OpsError("conflict", `GitHub refused to open the pull request: ${githubMessage(r.data)}`);
  }

  async get(ref: Installed, n: number): Promise<PullRequest | null> {
    const raw = await this.raw(ref, n);
    return raw ? toPull(raw) : null;
  }

  private async raw(ref: Installed, n: number): Promise<GithubPull | null> {
    if (!Number.isSafeInteger(n) || n < 1) return null;
    const r = await this.client.call<GithubPull>({ path: this.path(ref, n), auth: { installation: ref.installationId }, expect: [404] });
    return r.status === 200 ? r.data : null;
  }

  async merge(ref: Installed, n: number, message: string): Promise<MergeResult> {
    const pr = await this.raw(ref, n);
    if (!pr) throw new OpsError("not_found", `No pull request #${n} in ${ref.repo}.`);
    const current = toPull(pr);
    if (current.state !== "open") return { merged: false, reason: `Pull request #${n} is ${current.state}.`, conflicts: [] };
    const [title, ...rest] = message.split("\n");
    const r = await this.client.call<{ sha?: string; merged?: boolean; message?: string }>({
      method: "PUT",
      path: `${this.path(ref, n)}/merge`,
      auth: { installation: ref.installationId },
      body: { commit_title: title, commit_message: rest.join("\n").trim(), sha: pr.head.sha, merge_method: "merge" },
      expect: [405, 409, 422],
    });
    if (r.status === 200 && r.data.merged !== false && typeof r.data.sha === "string") return { merged: true, sha: r.data.sha };
    const said = githubMessage(r.data).replace(/\.+$/, "");
    const state = pr.mergeable_state ?? "unknown";
    if (r.status === 405 && /not mergeable/i.test(said) && !["blocked", "behind", "draft", "unstable"].includes(state)) {
      // The pull request's base.sha can lag behind its branch: merge against the branch's head now.
      const baseHead = (await this.reader.resolveRef(ref, `refs/heads/${pr.base.ref}`)) ?? pr.base.sha;
      const found = await conflictingPaths(this.client, this.reader, ref, baseHead, pr.head.sha, this.log);
      if (found.paths.length > 0) {
        const more = found.partial ? " (and possibly more: the branches differ in too many files to check them all)" : "";
        return { merged: false, reason: `GitHub refused the merge: ${said}; merge conflict in ${found.paths.join(", ")}${more}.`, conflicts: found.paths };
      }
    }
    const blocker = BLOCKERS[state];
    return { merged: false, reason: blocker ? `GitHub refused the merge: ${said}; ${blocker}.` : `GitHub refused the merge: ${said}.`, conflicts: [] };
  }

  async close(ref: Installed, n: number): Promise<void> {
    if (!(await this.raw(ref, n))) throw new OpsError("not_found", `No pull request #${n} in ${ref.repo}.`);
    await this.client.call({ method: "PATCH", path: this.path(ref, n), auth: { installation: ref.installationId }, body: { state: "closed" } });
  }
}
