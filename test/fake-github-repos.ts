/**
 * The repositories of the fake GitHub (test/fake-github.ts): bare git repositories in a temp
 * directory, driven by the real `git` CLI, so trees, blobs, commits, merges and conflicts are
 * git's own. Each handler answers one documented GitHub REST call with GitHub's JSON shape and
 * status codes (docs/decisions/0412-sources-github-app-host.md lists them).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export const ZERO = "0000000000000000000000000000000000000000";
const SHA_RE = /^[0-9a-f]{40}$/;
const NAME_RE = /^[A-Za-z0-9._/-]+$/;

/** What a handler answers. */
export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  raw?: Uint8Array;
}

export const json = (status: number, body: unknown, headers: Record<string, string> = {}): Answer => ({ status, body, headers });
export const notFound = (): Answer => json(404, { message: "Not Found", documentation_url: "https://docs.github.com/rest" });
export const unprocessable = (message: string, errors?: unknown[]): Answer => json(422, { message, ...(errors ? { errors } : {}), documentation_url: "https://docs.github.com/rest" });

export interface FakePull {
  number: number;
  title: string;
  body: string;
  head: string;
  base: string;
  state: "open" | "closed";
  /** Head sha while open; frozen when closed or merged. */
  headSha: string;
  baseSha: string;
  mergedAt: string | null;
  mergeSha: string | null;
}

export interface FakeRepo {
  owner: string;
  name: string;
  fullName: string;
  id: number;
  dir: string;
  installationId: number;
  private: boolean;
  defaultBranch: string;
  /** False answers a merge_method "merge" with GitHub's 405 (a squash-only repository). */
  allowMergeCommit: boolean;
  /** Status contexts branch protection requires green on a pull request's head. */
  requiredContexts: string[];
  pulls: FakePull[];
  checkRuns: Array<Record<string, unknown> & { id: number }>;
  statuses: Array<Record<string, unknown> & { id: number; sha: string; state: string; context: string }>;
  deployments: Array<Record<string, unknown> & { id: number }>;
  deploymentStatuses: Array<Record<string, unknown> & { id: number; deployment_id: number }>;
}

/** A git signature: name, email and an ISO date. */
interface Person {
  name: string;
  email: string;
  date: string;
}

const gitHome = mkdtempSync(path.join(tmpdir(), "fake-github-home-"));

function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: gitHome,
    LANG: "C",
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    ...extra,
  };
}

/** Run git in a bare repository; `ok` lists the exit codes that are answers. */
export function git(dir: string, args: string[], opts: { input?: string | Uint8Array; env?: Record<string, string>; ok?: number[] } = {}): { out: string; bytes: Uint8Array; code: number } {
  const r = Bun.spawnSync(["git", `--git-dir=${dir}`, ...args], { env: gitEnv(opts.env), stdin: opts.input === undefined ? "ignore" : Buffer.from(opts.input as string), stdout: "pipe", stderr: "pipe" });
  const code = r.exitCode ?? -1;
  if (!(opts.ok ?? [0]).includes(code)) throw new Error(`git ${args.join(" ")} exited ${code}: ${r.stderr.toString()}`);
  return { out: r.stdout.toString(), bytes: new Uint8Array(r.stdout), code };
}

function gitDate(iso: string): string {
  return `@${Math.floor(Date.parse(iso) / 1000)} +0000`;
}

function isoOf(epochSeconds: string): string {
  return new Date(Number(epochSeconds) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Parse a `cat-file commit` body. */
function parseCommit(text: string): { tree: string; parents: string[]; author: Person; committer: Person; message: string } {
  const split = text.indexOf("\n\n");
  const head = text.slice(0, split < 0 ? text.length : split).split("\n");
  const message = split < 0 ? "" : text.slice(split + 2);
  let tree = "";
  const parents: string[] = [];
  const people: Record<string, Person> = {};
  for (const line of head) {
    const [key, ...rest] = line.split(" ");
    const value = rest.join(" ");
    if (key === "tree") tree = value;
    else if (key === "parent") parents.push(value);
    else if (key === "author" || key === "committer") {
      const m = /^(.*) <(.*)> (\d+) [+-]\d{4}$/.exec(value);
      if (m) people[key] = { name: m[1]!, email: m[2]!, date: isoOf(m[3]!) };
    }
  }
  return { tree, parents, author: people.author!, committer: people.committer!, message };
}

export class FakeRepos {
  readonly root = mkdtempSync(path.join(tmpdir(), "fake-github-repos-"));
  private readonly repos = new Map<string, FakeRepo>();
  private nextId = 1000;
  private nextRecordId = 5000;
  /** Commit author emails → GitHub logins (`author.login` of `GET commits/{sha}`). */
  readonly logins = new Map<string, string>();

  constructor(
    private readonly api: () => string,
    private readonly web: string,
    private readonly now: () => number,
  ) {}

  close(): void {
    rmSync(this.root, { recursive: true, force: true });
  }

  get(fullName: string): FakeRepo | undefined {
    return this.repos.get(fullName.toLowerCase());
  }

  all(): FakeRepo[] {
    return [...this.repos.values()];
  }

  /** Create an empty bare repository (default branch `main`) seen by `installationId`. */
  create(fullName: string, installationId: number, opts: { private?: boolean; defaultBranch?: string } = {}): FakeRepo {
    const [owner, name] = fullName.split("/") as [string, string];
    const dir = path.join(this.root, owner, `${name}.git`);
    mkdirSync(dir, { recursive: true });
    const defaultBranch = opts.defaultBranch ?? "main";
    Bun.spawnSync(["git", "init", "--bare", "--quiet", `--initial-branch=${defaultBranch}`, dir], { env: gitEnv() });
    const repo: FakeRepo = {
      owner,
      name,
      fullName,
      id: this.nextId++,
      dir,
      installationId,
      private: opts.private ?? true,
      defaultBranch,
      allowMergeCommit: true,
      requiredContexts: [],
      pulls: [],
      checkRuns: [],
      statuses: [],
      deployments: [],
      deploymentStatuses: [],
    };
    this.repos.set(fullName.toLowerCase(), repo);
    return repo;
  }

  /**
   * Commit `files` (path → text or bytes, `{ link }` for a symlink; null deletes) on `branch`,
   * over its head when it has one (or over `parent`). Returns the commit sha.
   */
  commit(
    repo: FakeRepo,
    files: Record<string, string | Uint8Array | { link: string } | null>,
    opts: { branch?: string; message?: string; mode?: Record<string, string>; author?: { name: string; email: string }; parent?: string } = {},
  ): string {
    const branch = opts.branch ?? repo.defaultBranch;
    const scratch = mkdtempSync(path.join(tmpdir(), "fake-github-commit-"));
    try {
      const idx = { GIT_INDEX_FILE: path.join(scratch, "index") };
      const parent = opts.parent ?? this.refSha(repo, `refs/heads/${branch}`);
      if (parent) git(repo.dir, ["read-tree", parent], { env: idx });
      for (const [p, content] of Object.entries(files)) {
        if (content === null) {
          git(repo.dir, ["update-index", "-z", "--index-info"], { env: idx, input: `0 ${ZERO}\t${p}\0` });
          continue;
        }
        const isLink = typeof content === "object" && "link" in content;
        const f = path.join(scratch, "blob");
        writeFileSync(f, isLink ? content.link : content);
        const sha = git(repo.dir, ["hash-object", "-w", "--no-filters", f]).out.trim();
        const mode = isLink ? "120000" : (opts.mode?.[p] ?? "100644");
        git(repo.dir, ["update-index", "--add", "--cacheinfo", `${mode},${sha},${p}`], { env: idx });
      }
      const tree = git(repo.dir, ["write-tree"], { env: idx }).out.trim();
      const who = opts.author ?? { name: "Octo Dev", email: "octo@users.noreply.github.test" };
      const date = gitDate(new Date(this.now()).toISOString());
      const env = { GIT_AUTHOR_NAME: who.name, GIT_AUTHOR_EMAIL: who.email, GIT_AUTHOR_DATE: date, GIT_COMMITTER_NAME: who.name, GIT_COMMITTER_EMAIL: who.email, GIT_COMMITTER_DATE: date };
      const sha = git(repo.dir, ["commit-tree", tree, ...(parent ? ["-p", parent] : []), "-F", "-"], { env, input: `${opts.message ?? "Seed"}\n` }).out.trim();
      git(repo.dir, ["update-ref", `refs/heads/${branch}`, sha]);
      return sha;
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  /** An annotated tag `name` on `sha`. */
  tag(repo: FakeRepo, name: string, sha: string): string {
    const env = { GIT_COMMITTER_NAME: "Octo Dev", GIT_COMMITTER_EMAIL: "octo@users.noreply.github.test", GIT_COMMITTER_DATE: gitDate(new Date(this.now()).toISOString()) };
    git(repo.dir, ["tag", "-a", "-m", `Release ${name}`, name, sha], { env });
    return git(repo.dir, ["rev-parse", `refs/tags/${name}`]).out.trim();
  }

  /** The sha a full ref points at, or null. */
  refSha(repo: FakeRepo, ref: string): string | null {
    const r = git(repo.dir, ["rev-parse", "--verify", "--quiet", ref], { ok: [0, 1, 128] });
    return r.code === 0 ? r.out.trim() : null;
  }

  private typeOf(repo: FakeRepo, sha: string): string | null {
    const r = git(repo.dir, ["cat-file", "-t", sha], { ok: [0, 1, 128] });
    return r.code === 0 ? r.out.trim() : null;
  }

  private url(repo: FakeRepo, tail: string): string {
    return `${this.api()}/repos/${repo.fullName}${tail}`;
  }

  repoJson(repo: FakeRepo) {
    return {
      id: repo.id,
      node_id: `R_${repo.id}`,
      name: repo.name,
      full_name: repo.fullName,
      owner: { login: repo.owner, type: "Organization" },
      private: repo.private,
      html_url: `${this.web}/${repo.fullName}`,
      clone_url: `${this.web}/${repo.fullName}.git`,
      default_branch: repo.defaultBranch,
      url: `${this.api()}/repos/${repo.fullName}`,
    };
  }

  // ---- git data: refs, tags, commits, trees, blobs -------------------------------------------

  /** `GET /repos/{o}/{r}/git/ref/{ref}`: one exact ref. */
  getRef(repo: FakeRepo, ref: string): Answer {
    if (git(repo.dir, ["for-each-ref", "--count=1"]).out.trim() === "") return json(409, { message: "Git Repository is empty." });
    if (!NAME_RE.test(ref)) return notFound();
    const full = `refs/${ref}`;
    const line = git(repo.dir, ["for-each-ref", "--format=%(refname) %(objectname) %(objecttype)", full]).out.split("\n").find((l) => l.split(" ")[0] === full);
    if (!line) return notFound();
    const [, sha, type] = line.split(" ");
    return json(200, { ref: full, node_id: `REF_${sha}`, url: this.url(repo, `/git/${full}`), object: { type, sha, url: this.url(repo, `/git/${type}s/${sha}`) } });
  }

  /** `GET /repos/{o}/{r}/git/tags/{sha}`: an annotated tag object. */
  getTag(repo: FakeRepo, sha: string): Answer {
    if (!SHA_RE.test(sha) || this.typeOf(repo, sha) !== "tag") return notFound();
    const text = git(repo.dir, ["cat-file", "tag", sha]).out;
    const fields = Object.fromEntries(text.split("\n\n")[0]!.split("\n").map((l) => [l.split(" ")[0], l.split(" ").slice(1).join(" ")]));
    return json(200, { sha, tag: fields.tag, message: text.split("\n\n").slice(1).join("\n\n"), object: { type: fields.type, sha: fields.object, url: this.url(repo, `/git/${fields.type}s/${fields.object}`) } });
  }

  private gitCommitJson(repo: FakeRepo, sha: string) {
    const c = parseCommit(git(repo.dir, ["cat-file", "commit", sha]).out);
    return {
      sha,
      node_id: `C_${sha}`,
      url: this.url(repo, `/git/commits/${sha}`),
      html_url: `${this.web}/${repo.fullName}/commit/${sha}`,
      author: c.author,
      committer: c.committer,
      message: c.message.replace(/\n$/, ""),
      tree: { sha: c.tree, url: this.url(repo, `/git/trees/${c.tree}`) },
      parents: c.parents.map((p) => ({ sha: p, url: this.url(repo, `/git/commits/${p}`) })),
    };
  }

  /** `GET /repos/{o}/{r}/git/commits/{sha}`. */
  getGitCommit(repo: FakeRepo, sha: string): Answer {
    if (!SHA_RE.test(sha) || this.typeOf(repo, sha) !== "commit") return notFound();
    return json(200, this.gitCommitJson(repo, sha));
  }

  /** `GET /repos/{o}/{r}/commits/{ref}`: a branch, tag or (abbreviated) sha. */
  getCommit(repo: FakeRepo, ref: string): Answer {
    if (!NAME_RE.test(ref) || ref.startsWith("-")) return unprocessable(`No commit found for SHA: ${ref}`);
    const r = git(repo.dir, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], { ok: [0, 1, 128] });
    if (r.code !== 0) return unprocessable(`No commit found for SHA: ${ref}`);
    const sha = r.out.trim();
    const g = this.gitCommitJson(repo, sha);
    const login = (email: string) => {
      const l = this.logins.get(email);
      return l ? { login: l, id: l.length, type: "User" } : null;
    };
    return json(200, {
      sha,
      node_id: g.node_id,
      url: this.url(repo, `/commits/${sha}`),
      html_url: g.html_url,
      commit: { author: g.author, committer: g.committer, message: g.message, tree: g.tree, url: g.url },
      author: login(g.author.email),
      committer: login(g.committer.email),
      parents: g.parents,
    });
  }

  /** `GET /repos/{o}/{r}/git/trees/{sha}[?recursive=1]`; recursive listings stop at `limit` with `truncated`. */
  getTree(repo: FakeRepo, sha: string, recursive: boolean, limit: number): Answer {
    if (!SHA_RE.test(sha)) return notFound();
    const type = this.typeOf(repo, sha);
    if (type !== "tree" && type !== "commit") return notFound();
    const tree = git(repo.dir, ["rev-parse", `${sha}^{tree}`]).out.trim();
    const out = git(repo.dir, ["ls-tree", ...(recursive ? ["-r", "-t"] : []), "-l", "-z", tree]).out;
    const entries = out
      .split("\0")
      .filter(Boolean)
      .map((rec) => {
        const tab = rec.indexOf("\t");
        const [mode, t, s, size] = rec.slice(0, tab).split(/ +/);
        return { path: rec.slice(tab + 1), mode: mode!, type: t!, sha: s!, ...(t === "blob" ? { size: Number(size) } : {}), url: this.url(repo, `/git/${t}s/${s}`) };
      });
    const truncated = recursive && entries.length > limit;
    return json(200, { sha: tree, url: this.url(repo, `/git/trees/${tree}`), tree: truncated ? entries.slice(0, limit) : entries, truncated });
  }

  /** `GET /repos/{o}/{r}/git/blobs/{sha}`: base64 in 60-character lines, as GitHub sends it. */
  getBlob(repo: FakeRepo, sha: string): Answer {
    if (!SHA_RE.test(sha) || this.typeOf(repo, sha) !== "blob") return notFound();
    const bytes = git(repo.dir, ["cat-file", "blob", sha]).bytes;
    const b64 = Buffer.from(bytes).toString("base64").replace(/(.{60})/g, "$1\n");
    return json(200, { sha, node_id: `B_${sha}`, size: bytes.byteLength, url: this.url(repo, `/git/blobs/${sha}`), content: b64, encoding: "base64" });
  }

  /**
   * `GET /repos/{o}/{r}/compare/{base}...{head}`: the merge base, how far apart the two are, and
   * the files changed on the head side since the merge base (renames detected, as GitHub does).
   */
  compare(repo: FakeRepo, base: string, head: string): Answer {
    const b = this.resolve(repo, base);
    const h = this.resolve(repo, head);
    if (!b || !h) return notFound();
    const mb = git(repo.dir, ["merge-base", b, h], { ok: [0, 1] });
    if (mb.code !== 0) return notFound();
    const mergeBase = mb.out.trim();
    const count = (range: string) => Number(git(repo.dir, ["rev-list", "--count", range]).out.trim());
    const ahead = count(`${b}..${h}`);
    const behind = count(`${h}..${b}`);
    const names: Record<string, string> = { A: "added", D: "removed", M: "modified", T: "changed", R: "renamed", C: "copied" };
    const fields = git(repo.dir, ["diff", "--name-status", "-z", "-M", mergeBase, h]).out.split("\0").filter(Boolean);
    const files: Array<Record<string, unknown>> = [];
    for (let i = 0; i < fields.length; ) {
      const code = fields[i++]!;
      const kind = names[code[0]!] ?? "changed";
      if (kind === "renamed" || kind === "copied") {
        const from = fields[i++]!;
        const to = fields[i++]!;
        files.push({ filename: to, previous_filename: from, status: kind });
      } else {
        files.push({ filename: fields[i++]!, status: kind });
      }
    }
    const commit = (sha: string) => this.gitCommitJson(repo, sha);
    return json(200, {
      url: this.url(repo, `/compare/${base}...${head}`),
      html_url: `${this.web}/${repo.fullName}/compare/${base}...${head}`,
      base_commit: { sha: b, commit: commit(b) },
      merge_base_commit: { sha: mergeBase, commit: commit(mergeBase) },
      status: ahead === 0 && behind === 0 ? "identical" : behind === 0 ? "ahead" : ahead === 0 ? "behind" : "diverged",
      ahead_by: ahead,
      behind_by: behind,
      total_commits: ahead,
      commits: [],
      files: files.slice(0, 300),
    });
  }

  /** The commit a tarball ref names, or null. */
  resolve(repo: FakeRepo, ref: string): string | null {
    if (!NAME_RE.test(ref) || ref.startsWith("-")) return null;
    const r = git(repo.dir, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], { ok: [0, 1, 128] });
    return r.code === 0 ? r.out.trim() : null;
  }

  /** The gzip'd tarball of a commit under `owner-repo-sha7/` (what codeload serves). */
  archive(repo: FakeRepo, sha: string): Uint8Array {
    return git(repo.dir, ["archive", "--format=tar.gz", `--prefix=${repo.owner}-${repo.name}-${sha.slice(0, 7)}/`, sha]).bytes;
  }

  /** `POST /repos/{o}/{r}/git/blobs`. */
  createBlob(repo: FakeRepo, body: { content?: unknown; encoding?: unknown }): Answer {
    if (typeof body.content !== "string") return unprocessable("Invalid request.", ["content is missing"]);
    const encoding = body.encoding ?? "utf-8";
    if (encoding !== "base64" && encoding !== "utf-8") return unprocessable("Invalid request.", [`encoding ${String(encoding)} is not supported`]);
    const bytes = encoding === "base64" ? Buffer.from(body.content, "base64") : Buffer.from(body.content, "utf8");
    const sha = git(repo.dir, ["hash-object", "-w", "--stdin", "--no-filters"], { input: bytes }).out.trim();
    return json(201, { sha, url: this.url(repo, `/git/blobs/${sha}`) });
  }

  /** `POST /repos/{o}/{r}/git/trees`: entries over `base_tree`; `sha: null` deletes a path. */
  createTree(repo: FakeRepo, body: { base_tree?: unknown; tree?: unknown }): Answer {
    if (!Array.isArray(body.tree)) return unprocessable("Invalid request.", ["tree is missing"]);
    const scratch = mkdtempSync(path.join(tmpdir(), "fake-github-tree-"));
    try {
      const env = { GIT_INDEX_FILE: path.join(scratch, "index") };
      if (body.base_tree !== undefined) {
        if (typeof body.base_tree !== "string" || !SHA_RE.test(body.base_tree) || this.typeOf(repo, body.base_tree) !== "tree") return unprocessable("Invalid tree info");
        git(repo.dir, ["read-tree", body.base_tree], { env });
      }
      const present = new Set(git(repo.dir, ["ls-files", "-z"], { env }).out.split("\0").filter(Boolean));
      const lines: string[] = [];
      for (const raw of body.tree as Array<Record<string, unknown>>) {
        const p = raw.path;
        const mode = raw.mode;
        if (typeof p !== "string" || p === "" || p.startsWith("/") || p.split("/").includes("..")) return unprocessable("Invalid tree info", [`path ${String(p)} is invalid`]);
        if (!["100644", "100755", "120000", "160000", "040000"].includes(String(mode))) return unprocessable("Invalid tree info", [`mode ${String(mode)} is invalid`]);
        if (raw.type !== "blob") return unprocessable("Invalid tree info", ["only blob entries are supported here"]);
        if (raw.sha === null && raw.content === undefined) {
          if (!present.has(p)) return unprocessable("GitRPC::BadObjectState");
          lines.push(`0 ${ZERO}\t${p}`);
          continue;
        }
        let sha: string;
        if (typeof raw.content === "string") sha = git(repo.dir, ["hash-object", "-w", "--stdin", "--no-filters"], { input: raw.content }).out.trim();
        else if (typeof raw.sha === "string" && SHA_RE.test(raw.sha) && this.typeOf(repo, raw.sha) === "blob") sha = raw.sha;
        else return unprocessable("Invalid tree info", [`sha ${String(raw.sha)} is not a blob`]);
        lines.push(`${mode} ${sha}\t${p}`);
      }
      if (lines.length > 0) git(repo.dir, ["update-index", "-z", "--index-info"], { env, input: lines.join("\0") + "\0" });
      const tree = git(repo.dir, ["write-tree"], { env }).out.trim();
      return json(201, { ...(this.getTree(repo, tree, false, Infinity).body as object) });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  /** `POST /repos/{o}/{r}/git/commits`: committer defaults to the author, the author to the App's bot. */
  createCommit(repo: FakeRepo, body: Record<string, unknown>, bot: string): Answer {
    const tree = body.tree;
    const parents = body.parents;
    if (typeof body.message !== "string" || typeof tree !== "string" || !SHA_RE.test(tree) || this.typeOf(repo, tree) !== "tree") return unprocessable("Tree SHA does not exist");
    if (!Array.isArray(parents) || parents.some((p) => typeof p !== "string" || !SHA_RE.test(p) || this.typeOf(repo, p) !== "commit")) return unprocessable("Parent SHA does not exist or is not a commit object");
    const now = new Date(this.now()).toISOString();
    const sig = (v: unknown, fallback: { name: string; email: string; date?: string }) => {
      const o = (v ?? fallback) as { name?: string; email?: string; date?: string };
      return { name: o.name ?? fallback.name, email: o.email ?? fallback.email, date: o.date ?? now };
    };
    const author = sig(body.author, { name: `${bot}[bot]`, email: `${bot}[bot]@users.noreply.github.test` });
    const committer = sig(body.committer, author);
    const env = { GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email, GIT_AUTHOR_DATE: gitDate(author.date), GIT_COMMITTER_NAME: committer.name, GIT_COMMITTER_EMAIL: committer.email, GIT_COMMITTER_DATE: gitDate(committer.date) };
    const message = body.message.endsWith("\n") ? body.message : `${body.message}\n`;
    const sha = git(repo.dir, ["commit-tree", tree, ...(parents as string[]).flatMap((p) => ["-p", p]), "-F", "-"], { env, input: message }).out.trim();
    return json(201, this.gitCommitJson(repo, sha));
  }

  /** `POST /repos/{o}/{r}/git/refs`: 422 "Reference already exists". */
  createRef(repo: FakeRepo, body: { ref?: unknown; sha?: unknown }): Answer {
    const ref = body.ref;
    const sha = body.sha;
    if (typeof ref !== "string" || !/^refs\/[^/]+\/.+/.test(ref) || !NAME_RE.test(ref) || ref.includes("..")) return unprocessable("Reference name is invalid");
    if (typeof sha !== "string" || !SHA_RE.test(sha) || this.typeOf(repo, sha) === null) return unprocessable("Object does not exist");
    const r = git(repo.dir, ["update-ref", ref, sha, ZERO], { ok: [0, 1, 128] });
    if (r.code !== 0) return unprocessable("Reference already exists");
    return json(201, { ref, node_id: `REF_${sha}`, url: this.url(repo, `/git/${ref}`), object: { type: this.typeOf(repo, sha), sha, url: this.url(repo, `/git/commits/${sha}`) } });
  }

  // ---- pull requests -------------------------------------------------------------------------

  private isAncestor(repo: FakeRepo, a: string, b: string): boolean {
    return git(repo.dir, ["merge-base", "--is-ancestor", a, b], { ok: [0, 1] }).code === 0;
  }

  /** Whether the pull request's head merges cleanly into its base (`merge-tree`). */
  private mergeable(repo: FakeRepo, pr: FakePull): { clean: boolean; tree: string | null } {
    const base = this.refSha(repo, `refs/heads/${pr.base}`)!;
    const r = git(repo.dir, ["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", base, pr.headSha], { ok: [0, 1] });
    return { clean: r.code === 0, tree: r.code === 0 ? r.out.split("\0")[0]! : null };
  }

  /** Green when every required context has a successful status or check run on the head. */
  private checksGreen(repo: FakeRepo, sha: string): string | null {
    for (const ctx of repo.requiredContexts) {
      const status = [...repo.statuses].reverse().find((s) => s.sha === sha && s.context === ctx);
      const run = [...repo.checkRuns].reverse().find((c) => c.head_sha === sha && c.name === ctx);
      if (status?.state !== "success" && run?.conclusion !== "success") return ctx;
    }
    return null;
  }

  pullJson(repo: FakeRepo, pr: FakePull) {
    if (pr.state === "open") {
      pr.headSha = this.refSha(repo, `refs/heads/${pr.head}`) ?? pr.headSha;
      pr.baseSha = this.refSha(repo, `refs/heads/${pr.base}`) ?? pr.baseSha;
    }
    const open = pr.state === "open";
    const clean = open ? this.mergeable(repo, pr).clean : null;
    const blocked = open && this.checksGreen(repo, pr.headSha) !== null;
    return {
      number: pr.number,
      url: this.url(repo, `/pulls/${pr.number}`),
      html_url: `${this.web}/${repo.fullName}/pull/${pr.number}`,
      state: pr.state,
      title: pr.title,
      body: pr.body,
      merged: pr.mergedAt !== null,
      merged_at: pr.mergedAt,
      merge_commit_sha: pr.mergeSha,
      mergeable: clean,
      mergeable_state: !open ? "unknown" : clean === false ? "dirty" : blocked ? "blocked" : "clean",
      head: { ref: pr.head, sha: pr.headSha, label: `${repo.owner}:${pr.head}` },
      base: { ref: pr.base, sha: pr.baseSha, label: `${repo.owner}:${pr.base}` },
    };
  }

  /** `POST /repos/{o}/{r}/pulls`. */
  createPull(repo: FakeRepo, body: Record<string, unknown>): Answer {
    const { title, head, base } = body;
    if (typeof title !== "string" || title.trim() === "") return unprocessable("Validation Failed", [{ resource: "PullRequest", field: "title", code: "missing_field" }]);
    const headSha = typeof head === "string" ? this.refSha(repo, `refs/heads/${head}`) : null;
    if (!headSha) return unprocessable("Validation Failed", [{ resource: "PullRequest", field: "head", code: "invalid" }]);
    const baseSha = typeof base === "string" ? this.refSha(repo, `refs/heads/${base}`) : null;
    if (!baseSha) return unprocessable("Validation Failed", [{ resource: "PullRequest", field: "base", code: "invalid" }]);
    if (repo.pulls.some((p) => p.state === "open" && p.head === head && p.base === base)) {
      return unprocessable("Validation Failed", [{ resource: "PullRequest", code: "custom", message: `A pull request already exists for ${repo.owner}:${head}.` }]);
    }
    if (this.isAncestor(repo, headSha, baseSha)) return unprocessable("Validation Failed", [{ resource: "PullRequest", code: "custom", message: `No commits between ${base} and ${head}` }]);
    const pr: FakePull = { number: repo.pulls.length + 1, title, body: typeof body.body === "string" ? body.body : "", head: head as string, base: base as string, state: "open", headSha, baseSha, mergedAt: null, mergeSha: null };
    repo.pulls.push(pr);
    return json(201, this.pullJson(repo, pr));
  }

  /** `PATCH /repos/{o}/{r}/pulls/{n}`: `state` open or closed. */
  updatePull(repo: FakeRepo, pr: FakePull, body: Record<string, unknown>): Answer {
    if (body.state !== undefined) {
      if (body.state !== "open" && body.state !== "closed") return unprocessable("Validation Failed", [{ resource: "PullRequest", field: "state", code: "invalid" }]);
      if (pr.mergedAt === null) pr.state = body.state;
    }
    if (typeof body.title === "string") pr.title = body.title;
    return json(200, this.pullJson(repo, pr));
  }

  /** `PUT /repos/{o}/{r}/pulls/{n}/merge` with `merge_method: "merge"`: a merge commit, or GitHub's refusal. */
  mergePull(repo: FakeRepo, pr: FakePull, body: Record<string, unknown>, bot: string): Answer {
    if (pr.state !== "open") return json(405, { message: "Pull Request is not mergeable" });
    const method = body.merge_method ?? "merge";
    if (method !== "merge") return unprocessable(`merge_method ${String(method)} is not one this fake GitHub merges with`);
    if (!repo.allowMergeCommit) return json(405, { message: "Merge commits are not allowed on this repository." });
    this.pullJson(repo, pr);
    if (typeof body.sha === "string" && body.sha !== pr.headSha) return json(409, { message: "Head branch was modified. Review and try the merge again." });
    const missing = this.checksGreen(repo, pr.headSha);
    if (missing !== null) return json(405, { message: `Required status check "${missing}" is expected.` });
    const { clean, tree } = this.mergeable(repo, pr);
    if (!clean || !tree) return json(405, { message: "Pull Request is not mergeable" });
    const base = pr.baseSha;
    const title = typeof body.commit_title === "string" && body.commit_title !== "" ? body.commit_title : `Merge pull request #${pr.number} from ${repo.owner}/${pr.head}`;
    const extra = typeof body.commit_message === "string" && body.commit_message !== "" ? `\n\n${body.commit_message}` : "";
    const date = gitDate(new Date(this.now()).toISOString());
    const env = { GIT_AUTHOR_NAME: `${bot}[bot]`, GIT_AUTHOR_EMAIL: `${bot}[bot]@users.noreply.github.test`, GIT_AUTHOR_DATE: date, GIT_COMMITTER_NAME: "GitHub", GIT_COMMITTER_EMAIL: "noreply@github.test", GIT_COMMITTER_DATE: date };
    const sha = git(repo.dir, ["commit-tree", tree, "-p", base, "-p", pr.headSha, "-F", "-"], { env, input: `${title}${extra}\n` }).out.trim();
    const moved = git(repo.dir, ["update-ref", `refs/heads/${pr.base}`, sha, base], { ok: [0, 1, 128] });
    if (moved.code !== 0) return json(409, { message: "Base branch was modified. Review and try the merge again." });
    pr.state = "closed";
    pr.mergedAt = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, "Z");
    pr.mergeSha = sha;
    return json(200, { sha, merged: true, message: "Pull Request successfully merged" });
  }

  // ---- checks, statuses, deployments ---------------------------------------------------------

  /** `POST /repos/{o}/{r}/check-runs`. */
  createCheckRun(repo: FakeRepo, body: Record<string, unknown>): Answer {
    if (typeof body.name !== "string" || typeof body.head_sha !== "string" || !SHA_RE.test(body.head_sha) || this.typeOf(repo, body.head_sha) !== "commit") return unprocessable("Invalid request.", ["name and an existing head_sha are required"]);
    const problem = this.checkRunProblem(body);
    if (problem) return unprocessable("Invalid request.", [problem]);
    const run = { id: this.nextRecordId++, name: body.name, head_sha: body.head_sha, status: body.status ?? "queued", conclusion: body.conclusion ?? null, details_url: body.details_url ?? null, output: body.output ?? { title: null, summary: null } };
    repo.checkRuns.push(run);
    return json(201, { ...run, html_url: `${this.web}/${repo.fullName}/runs/${run.id}` });
  }

  /** `PATCH /repos/{o}/{r}/check-runs/{id}`. */
  updateCheckRun(repo: FakeRepo, id: number, body: Record<string, unknown>): Answer {
    const run = repo.checkRuns.find((c) => c.id === id);
    if (!run) return notFound();
    const merged = { ...run, ...Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) };
    const problem = this.checkRunProblem(merged);
    if (problem) return unprocessable("Invalid request.", [problem]);
    Object.assign(run, merged);
    return json(200, run);
  }

  private checkRunProblem(body: Record<string, unknown>): string | null {
    const status = body.status ?? "queued";
    if (!["queued", "in_progress", "completed"].includes(String(status))) return `status ${String(status)} is not a valid status`;
    if (body.conclusion != null && !["success", "failure", "neutral", "cancelled", "timed_out", "action_required", "skipped"].includes(String(body.conclusion))) return `conclusion ${String(body.conclusion)} is invalid`;
    if (status === "completed" && body.conclusion == null) return "conclusion is required when status is completed";
    const output = body.output as { title?: unknown; summary?: unknown } | undefined | null;
    if (output && (typeof output.title !== "string" || typeof output.summary !== "string")) return "output needs a title and a summary";
    return null;
  }

  /** `POST /repos/{o}/{r}/statuses/{sha}`. */
  createStatus(repo: FakeRepo, sha: string, body: Record<string, unknown>): Answer {
    if (!SHA_RE.test(sha) || this.typeOf(repo, sha) !== "commit") return unprocessable(`No commit found for SHA: ${sha}`);
    if (!["pending", "success", "failure", "error"].includes(String(body.state))) return unprocessable("Validation Failed", [{ resource: "Status", field: "state", code: "custom", message: "state is not included in the list" }]);
    const status = { id: this.nextRecordId++, sha, state: String(body.state), context: typeof body.context === "string" ? body.context : "default", description: body.description ?? null, target_url: body.target_url ?? null, created_at: new Date(this.now()).toISOString() };
    repo.statuses.push(status);
    return json(201, status);
  }

  /** `POST /repos/{o}/{r}/deployments`. */
  createDeployment(repo: FakeRepo, body: Record<string, unknown>): Answer {
    const sha = typeof body.ref === "string" ? this.resolve(repo, body.ref) : null;
    if (!sha) return unprocessable(`No ref found for: ${String(body.ref)}`);
    const dep = { id: this.nextRecordId++, sha, ref: body.ref as string, environment: typeof body.environment === "string" ? body.environment : "production", description: body.description ?? null, created_at: new Date(this.now()).toISOString() };
    repo.deployments.push(dep);
    return json(201, dep);
  }

  /** `POST /repos/{o}/{r}/deployments/{id}/statuses`. */
  createDeploymentStatus(repo: FakeRepo, deploymentId: number, body: Record<string, unknown>): Answer {
    if (!repo.deployments.some((d) => d.id === deploymentId)) return notFound();
    if (!["error", "failure", "inactive", "in_progress", "queued", "pending", "success"].includes(String(body.state))) return unprocessable("Validation Failed", [{ resource: "DeploymentStatus", field: "state", code: "invalid" }]);
    const st = { id: this.nextRecordId++, deployment_id: deploymentId, state: String(body.state), description: body.description ?? "", environment_url: body.environment_url ?? "", log_url: body.log_url ?? "", created_at: new Date(this.now()).toISOString() };
    repo.deploymentStatuses.push(st);
    return json(201, st);
  }
}
