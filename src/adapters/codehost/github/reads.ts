/**
 * Reading repositories through GitHub's git data API: refs (`git/ref`, peeling annotated tags
 * through `git/tags`), commits (`git/commits` for the tree, `commits/{sha}` for the author's
 * login), trees and blobs. Tree listings are content-addressed, so a tree read once is kept
 * (bounded, per repository) and a path lookup walks directory by directory without asking twice.
 *
 * A recursive tree listing comes from one `git/trees/{sha}?recursive=1`; when GitHub truncates it
 * (past 100 000 entries or 7 MB) and the caller allows more, the listing is walked directory by
 * directory instead, in the same order (a directory before what it contains), up to the limit.
 */
import { OpsError } from "../../../core/errors";
import type { CommitInfo, FileAt, RepoRef, TreeEntry, TreeListing } from "../types";
import { repoPath, type GithubClient } from "./client";
import { isSafeRefName } from "../refs";

export const SHA_RE = /^[0-9a-f]{40}$/;
const HEX_RE = /^[0-9a-f]{7,40}$/;
const TREE_CACHE_MAX = 2000;

/** Each `/`-separated segment encoded (ref names and paths in URLs). */
export function encodeSegments(p: string): string {
  return p.split("/").map(encodeURIComponent).join("/");
}

/** An entry as GitHub lists it in a tree. */
export interface GithubTreeEntry {
  path: string;
  mode: string;
  type: "blob" | "tree" | "commit";
  sha: string;
  size?: number;
}

interface GithubTree {
  sha: string;
  tree: GithubTreeEntry[];
  truncated: boolean;
}

interface GithubGitCommit {
  sha: string;
  tree: { sha: string };
  parents: Array<{ sha: string }>;
}

/** How a call reaches a repository: the installation it goes through. */
export type Installed = RepoRef & { installationId: number };

export class Reader {
  /** Non-recursive tree listings by `repo@sha`, oldest dropped first. */
  private readonly trees = new Map<string, GithubTreeEntry[]>();

  constructor(private readonly client: GithubClient) {}

  private auth(ref: Installed) {
    return { installation: ref.installationId };
  }

  /** The git commit object (`git/commits/{sha}`), or null when the repository has no such commit. */
  async gitCommit(ref: Installed, sha: string): Promise<GithubGitCommit | null> {
    if (!SHA_RE.test(sha)) return null;
    const r = await this.client.call<GithubGitCommit>({ path: `${repoPath(ref.repo)}/git/commits/${sha}`, auth: this.auth(ref), expect: [404, 409, 422] });
    return r.status === 200 ? r.data : null;
  }

  /** One directory's entries (cached: a tree sha never changes what it lists). */
  async listTree(ref: Installed, treeSha: string): Promise<{ entries: GithubTreeEntry[]; truncated: boolean }> {
    const key = `${ref.repo}@${treeSha}`;
    const hit = this.trees.get(key);
    if (hit) return { entries: hit, truncated: false };
    const r = await this.client.call<GithubTree>({ path: `${repoPath(ref.repo)}/git/trees/${treeSha}`, auth: this.auth(ref), expect: [404, 409, 422] });
    if (r.status !== 200) throw new OpsError("not_found", `No tree ${treeSha} in ${ref.repo}.`);
    if (!r.data.truncated) {
      if (this.trees.size >= TREE_CACHE_MAX) this.trees.delete(this.trees.keys().next().value as string);
      this.trees.set(key, r.data.tree);
    }
    return { entries: r.data.tree, truncated: r.data.truncated };
  }

  /** The commit a branch, tag, full ref or (abbreviated) sha names, or null. */
  async resolveRef(ref: Installed, name: string): Promise<string | null> {
    if (!isSafeRefName(name)) return null;
    if (SHA_RE.test(name)) return (await this.gitCommit(ref, name)) ? name : null;
    const candidates = name.startsWith("refs/") ? [name] : [`refs/heads/${name}`, `refs/tags/${name}`];
    for (const full of candidates) {
      const sha = await this.peelRef(ref, full);
      if (sha) return sha;
    }
    if (HEX_RE.test(name)) {
      const r = await this.client.call<{ sha: string }>({ path: `${repoPath(ref.repo)}/commits/${name}`, auth: this.auth(ref), expect: [404, 409, 422] });
      if (r.status === 200 && SHA_RE.test(r.data.sha) && r.data.sha.startsWith(name)) return r.data.sha;
    }
    return null;
  }

  /** The commit a full ref points at, through annotated tags; null when the ref does not exist. */
  private async peelRef(ref: Installed, full: string): Promise<string | null> {
    const r = await this.client.call<{ ref: string; object: { type: string; sha: string } }>({
      path: `${repoPath(ref.repo)}/git/ref/${encodeSegments(full.slice("refs/".length))}`,
      auth: this.auth(ref),
      expect: [404, 409, 422],
    });
    // GitHub's single-ref endpoint answers an exact name only; an array means it matched prefixes.
    if (r.status !== 200 || Array.isArray(r.data) || r.data.ref !== full) return null;
    let object = r.data.object;
    for (let depth = 0; depth < 5 && object.type === "tag"; depth++) {
      const tag = await this.client.call<{ object: { type: string; sha: string } }>({ path: `${repoPath(ref.repo)}/git/tags/${object.sha}`, auth: this.auth(ref), expect: [404] });
      if (tag.status !== 200) return null;
      object = tag.data.object;
    }
    return object.type === "commit" && SHA_RE.test(object.sha) ? object.sha : null;
  }

  /** Every entry of a commit's tree, recursively, stopping after `limit`. */
  async readTree(ref: Installed, commitSha: string, limit: number): Promise<TreeListing> {
    const commit = await this.gitCommit(ref, commitSha);
    if (!commit) throw new OpsError("not_found", `No commit ${commitSha} in ${ref.repo}.`);
    const r = await this.client.call<GithubTree>({ path: `${repoPath(ref.repo)}/git/trees/${commit.tree.sha}`, query: { recursive: 1 }, auth: this.auth(ref) });
    const listed = r.data.tree.filter((e) => e.type !== "commit").map(toEntry);
    if (listed.length > limit) return { commitSha, entries: listed.slice(0, limit), truncated: true };
    if (!r.data.truncated) return { commitSha, entries: listed, truncated: false };
    const entries: TreeEntry[] = [];
    const truncated = await this.walk(ref, commit.tree.sha, "", entries, limit);
    return { commitSha, entries, truncated };
  }

  /** Depth-first listing from `treeSha` into `out`; true when it stopped at `limit` (or GitHub cut a directory short). */
  private async walk(ref: Installed, treeSha: string, prefix: string, out: TreeEntry[], limit: number): Promise<boolean> {
    const { entries, truncated } = await this.listTree(ref, treeSha);
    for (const e of entries) {
      if (e.type === "commit") continue;
      if (out.length >= limit) return true;
      out.push(toEntry({ ...e, path: prefix + e.path }));
      if (e.type === "tree" && (await this.walk(ref, e.sha, `${prefix}${e.path}/`, out, limit))) return true;
    }
    return truncated;
  }

  /** The entry at `p` under the tree `rootTree`, or null; walks one directory at a time. */
  async entryAt(ref: Installed, rootTree: string, p: string): Promise<GithubTreeEntry | null> {
    const parts = p.split("/");
    if (parts.some((s) => s === "")) return null;
    let tree = rootTree;
    for (let i = 0; i < parts.length; i++) {
      const { entries } = await this.listTree(ref, tree);
      const e = entries.find((x) => x.path === parts[i]);
      if (!e) return null;
      if (i === parts.length - 1) return { ...e, path: p };
      if (e.type !== "tree") return null;
      tree = e.sha;
    }
    return null;
  }

  /** The first proper prefix of `p` that is not a directory under `rootTree` (a file, link or submodule), or null. */
  async blockingPrefix(ref: Installed, rootTree: string, p: string): Promise<string | null> {
    const parts = p.split("/");
    let tree = rootTree;
    for (let i = 0; i < parts.length - 1; i++) {
      const { entries } = await this.listTree(ref, tree);
      const e = entries.find((x) => x.path === parts[i]);
      if (!e) return null;
      if (e.type !== "tree") return parts.slice(0, i + 1).join("/");
      tree = e.sha;
    }
    return null;
  }

  /** A blob's bytes (`git/blobs/{sha}`, base64). */
  async blob(ref: Installed, sha: string): Promise<Uint8Array> {
    const r = await this.client.call<{ content: string; encoding: string }>({ path: `${repoPath(ref.repo)}/git/blobs/${sha}`, auth: this.auth(ref) });
    if (r.data.encoding !== "base64") throw new OpsError("bad_gateway", `GitHub sent blob ${sha} as ${r.data.encoding}, not base64.`);
    return new Uint8Array(Buffer.from(r.data.content, "base64"));
  }

  /** What is at `p` on a commit; the bytes when the blob is at most `maxBytes`. */
  async readFile(ref: Installed, commitSha: string, p: string, maxBytes: number): Promise<FileAt> {
    const commit = await this.gitCommit(ref, commitSha);
    if (!commit) throw new OpsError("not_found", `No commit ${commitSha} in ${ref.repo}.`);
    const e = await this.entryAt(ref, commit.tree.sha, p);
    if (!e || e.type === "commit") return { kind: "missing" };
    if (e.type === "tree") return { kind: "directory", sha: e.sha };
    const size = e.size ?? 0;
    if (size > maxBytes) return { kind: "file", sha: e.sha, size, mode: e.mode };
    return { kind: "file", sha: e.sha, size, mode: e.mode, content: await this.blob(ref, e.sha) };
  }

  /** Author login, first message line, commit time and parents (`commits/{sha}`); null when unknown. */
  async commitInfo(ref: Installed, sha: string): Promise<CommitInfo | null> {
    if (!HEX_RE.test(sha)) return null;
    const r = await this.client.call<{
      sha: string;
      commit: { author: { name: string; email: string; date: string } | null; committer: { date: string } | null; message: string };
      author: { login: string } | null;
      parents: Array<{ sha: string }>;
    }>({ path: `${repoPath(ref.repo)}/commits/${sha}`, auth: this.auth(ref), expect: [404, 409, 422] });
    if (r.status !== 200 || !SHA_RE.test(r.data.sha) || !r.data.sha.startsWith(sha)) return null;
    const c = r.data.commit;
    const when = Date.parse(c.committer?.date ?? c.author?.date ?? "");
    return {
      sha: r.data.sha,
      author: r.data.author?.login ?? c.author?.name ?? "",
      authorEmail: c.author?.email ?? "",
      message: c.message.split("\n")[0]?.trim() ?? "",
      committedAt: Number.isNaN(when) ? 0 : when,
      parents: r.data.parents.map((x) => x.sha).filter((s) => SHA_RE.test(s)),
    };
  }
}

function toEntry(e: GithubTreeEntry): TreeEntry {
  const isTree = e.type === "tree";
  return { path: e.path, type: isTree ? "tree" : "blob", sha: e.sha, mode: isTree ? "040000" : e.mode, size: isTree ? null : (e.size ?? 0) };
}
