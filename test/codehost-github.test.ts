/**
 * The GitHub App code host against the fake GitHub (test/fake-github.ts): first the code-host
 * contract every host passes (test/codehost-contract.ts, the same suite the built-in host runs),
 * with pushes reported the way GitHub reports them — a commit on the fake's repository, then a
 * signed `push` delivery to ops's webhook route. Then what is particular to GitHub: the App JWT
 * and its installation tokens, rate limits and outages, GitHub's merge refusals and the conflicts
 * ops names for it, the archive download, and reads and writes checked with `git` on the fake's
 * real repositories.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createTestApp, type TestApp } from "./harness";
import { FakeGithub, hostWebhookModule, jwtClaims } from "./fake-github";
import { git, ZERO } from "./fake-github-repos";
import { codeHostContract, SEED_FILES, SEED_MESSAGE, SEED_MODES } from "./codehost-contract";
import { DOMAINS } from "../src/domains";
import { FixedClock } from "../src/core/clock";
import { OpsError } from "../src/core/errors";
import { codeHostFor } from "../src/adapters/codehost";
import type { CodeHost, RepoRef } from "../src/adapters/codehost/types";

// Real git processes and servers on a shared machine: bun's preload timeout only reaches the first file.
setDefaultTimeout(120_000);

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

async function opsError(p: Promise<unknown>): Promise<OpsError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof OpsError) return e;
    throw e;
  }
  throw new Error("expected an OpsError");
}

codeHostContract("GitHub App (fake GitHub)", async () => {
  const clock = new FixedClock();
  const gh = FakeGithub.start({ now: () => clock.now() });
  const t = await createTestApp({ clock, env: gh.env(), modules: [...DOMAINS, hostWebhookModule] });
  const inst = gh.install("contract-org");
  const repo = gh.createRepo("contract-org/contract");
  const seed = gh.repos.commit(repo, SEED_FILES, { mode: SEED_MODES, message: SEED_MESSAGE });
  return {
    host: codeHostFor(t.core),
    repo: { repo: repo.fullName, installationId: inst.id },
    // One App serves the whole estate: any project reaches an owner the App is installed on.
    project: "any-project",
    async push(branch) {
      const after = gh.repos.commit(repo, { "pushed.txt": `${branch}\n` }, { branch, parent: seed, message: `Push ${branch}` });
      const res = await gh.deliver(`${t.url}/api/v1/host/webhook`, "push", gh.pushPayload(repo.fullName, `refs/heads/${branch}`, ZERO, after));
      if (res.status !== 200) throw new Error(`webhook answered ${res.status}: ${await res.text()}`);
      return after;
    },
    async close() {
      await t.close();
      gh.stop();
    },
  };
});

describe("GitHub App host", () => {
  let clock: FixedClock;
  let gh: FakeGithub;
  let t: TestApp;
  let host: CodeHost;
  let ref: RepoRef;
  let main1: string;
  let main2: string;

  beforeAll(async () => {
    clock = new FixedClock();
    gh = FakeGithub.start({ now: () => clock.now() });
    t = await createTestApp({ clock, env: gh.env() });
    host = codeHostFor(t.core);
    const inst = gh.install("acme");
    gh.install("octo", "User");
    const repo = gh.createRepo("acme/shop");
    gh.createRepo("octo/notes", { private: false, defaultBranch: "trunk" });
    gh.repos.logins.set("dev@acme.test", "acme-dev");
    main1 = gh.repos.commit(repo, { "README.md": "# shop\n", "bin/run": "#!/bin/sh\necho hi\n", "src/app.ts": "export {};\n", "docs/link": { link: "../README.md" } }, { mode: { "bin/run": "100755" }, author: { name: "Dev", email: "dev@acme.test" }, message: "First\n\nbody" });
    main2 = gh.repos.commit(repo, { "src/app.ts": "export const x = 1;\n" }, { message: "Second" });
    gh.repos.tag(repo, "v1.0.0", main1);
    ref = { repo: "acme/shop", installationId: inst.id };
  });
  afterAll(async () => {
    await t.close();
    gh.stop();
  });

  test("is configured and describes the App from GET /app and its installations", async () => {
    expect(host.kind).toBe("github");
    expect(host.configured()).toBe(true);
    expect(await host.describe()).toEqual({ slug: gh.slug, htmlUrl: `${gh.webUrl}/apps/${gh.slug}`, installUrl: `${gh.webUrl}/apps/${gh.slug}/installations/new`, installations: 2 });
  });

  test("lists every repository of every installation; finds installations by owner, case-insensitively", async () => {
    const repos = await host.listRepos();
    expect(repos.map((r) => r.fullName).sort()).toEqual(["acme/shop", "octo/notes"]);
    expect(repos.find((r) => r.fullName === "octo/notes")).toEqual({ fullName: "octo/notes", defaultBranch: "trunk", private: false, installationId: gh.installations[1]!.id });
    expect(await host.installationFor("ACME", "any-project")).toBe(ref.installationId);
    expect(await host.installationFor("nobody", "any-project")).toBeNull();
    expect(await host.getRepo({ repo: "acme/shop", installationId: 0 })).toMatchObject({ fullName: "acme/shop", defaultBranch: "main", installationId: ref.installationId });
    expect(await host.getRepo({ repo: "acme/missing", installationId: 0 })).toBeNull();
    expect(await host.getRepo({ repo: "nobody/x", installationId: 0 })).toBeNull();
    // GitHub repositories are created by their owners: ensureRepo never creates one.
    expect(await host.ensureRepo({ repo: "acme/new-one", installationId: ref.installationId })).toBeNull();
  });

  test("a suspended installation refuses its token (409 on its repositories); the others still list", async () => {
    const sus = gh.install("suspended-org");
    gh.repos.create("suspended-org/hidden", sus.id);
    sus.suspended = true;
    try {
      expect((await host.listRepos()).map((r) => r.fullName).sort()).toEqual(["acme/shop", "octo/notes"]);
      expect((await opsError(host.resolveRef({ repo: "suspended-org/hidden", installationId: sus.id }, "main"))).status).toBe(409);
    } finally {
      gh.uninstall(sus.id);
    }
  });

  test("a call on an owner without the App is 409", async () => {
    const e = await opsError(host.resolveRef({ repo: "nobody/x", installationId: 0 }, "main"));
    expect(e.status).toBe(409);
  });

  test("resolves branches, annotated tags, full refs and shas; unknown and unsafe names are null", async () => {
    expect(await host.resolveRef(ref, "main")).toBe(main2);
    expect(await host.resolveRef(ref, "refs/heads/main")).toBe(main2);
    expect(await host.resolveRef(ref, "v1.0.0")).toBe(main1);
    expect(await host.resolveRef(ref, "refs/tags/v1.0.0")).toBe(main1);
    expect(await host.resolveRef(ref, main1)).toBe(main1);
    expect(await host.resolveRef(ref, main1.slice(0, 10))).toBe(main1);
    expect(await host.resolveRef(ref, "nope")).toBeNull();
    expect(await host.resolveRef(ref, "ma")).toBeNull();
    expect(await host.resolveRef(ref, "main~1")).toBeNull();
    expect(await host.resolveRef(ref, "../x")).toBeNull();
    expect(await host.resolveRef(ref, "f".repeat(40))).toBeNull();
  });

  test("reads a tree recursively in git's order with modes and sizes, truncated at the limit", async () => {
    const listing = await host.readTree(ref, main2, { limit: 100 });
    expect(listing.commitSha).toBe(main2);
    expect(listing.truncated).toBe(false);
    expect(listing.entries.map((e) => `${e.type} ${e.mode} ${e.path}`)).toEqual([
      "blob 100644 README.md",
      "tree 040000 bin",
      "blob 100755 bin/run",
      "tree 040000 docs",
      "blob 120000 docs/link",
      "tree 040000 src",
      "blob 100644 src/app.ts",
    ]);
    expect(listing.entries.find((e) => e.path === "src/app.ts")!.size).toBe("export const x = 1;\n".length);
    expect(listing.entries.find((e) => e.path === "bin")!.size).toBeNull();
    const cut = await host.readTree(ref, main2, { limit: 3 });
    expect(cut.truncated).toBe(true);
    expect(cut.entries.map((e) => e.path)).toEqual(["README.md", "bin", "bin/run"]);
    expect((await opsError(host.readTree(ref, "0".repeat(40), { limit: 10 }))).status).toBe(404);
  });

  test("when GitHub truncates a recursive listing, the tree is walked directory by directory", async () => {
    gh.treeLimit = 2;
    try {
      const before = gh.count("GET", /\/git\/trees\//);
      const listing = await host.readTree(ref, main2, { limit: 100 });
      expect(listing.truncated).toBe(false);
      expect(listing.entries.map((e) => e.path)).toEqual(["README.md", "bin", "bin/run", "docs", "docs/link", "src", "src/app.ts"]);
      expect(gh.count("GET", /\/git\/trees\//) - before).toBeGreaterThan(1);
      const cut = await host.readTree(ref, main2, { limit: 4 });
      expect(cut).toMatchObject({ truncated: true });
      expect(cut.entries.map((e) => e.path)).toEqual(["README.md", "bin", "bin/run", "docs"]);
    } finally {
      gh.treeLimit = 100_000;
    }
  });

  test("reads files with blob sha and mode; directories, missing paths and files over maxBytes", async () => {
    const f = await host.readFile(ref, main2, "src/app.ts", { maxBytes: 1024 });
    expect(f.kind).toBe("file");
    if (f.kind !== "file") return;
    expect(dec(f.content)).toBe("export const x = 1;\n");
    expect(f.sha).toBe(git(gh.repo("acme/shop").dir, ["rev-parse", `${main2}:src/app.ts`]).out.trim());
    expect(f.mode).toBe("100644");
    expect(await host.readFile(ref, main2, "bin/run", { maxBytes: 1024 })).toMatchObject({ kind: "file", mode: "100755" });
    const link = await host.readFile(ref, main2, "docs/link", { maxBytes: 1024 });
    expect(link).toMatchObject({ kind: "file", mode: "120000" });
    expect(dec((link as { content?: Uint8Array }).content)).toBe("../README.md");
    expect(await host.readFile(ref, main2, "src", { maxBytes: 1024 })).toMatchObject({ kind: "directory" });
    expect(await host.readFile(ref, main2, "src/nope.ts", { maxBytes: 1024 })).toEqual({ kind: "missing" });
    expect(await host.readFile(ref, main2, "README.md/x", { maxBytes: 1024 })).toEqual({ kind: "missing" });
    const big = await host.readFile(ref, main2, "src/app.ts", { maxBytes: 4 });
    expect(big).toMatchObject({ kind: "file", size: 20 });
    expect((big as { content?: Uint8Array }).content).toBeUndefined();
  });

  test("commit info carries the author's GitHub login, the first message line, the time and parents", async () => {
    const info = await host.commitInfo(ref, main1);
    expect(info).toEqual({ sha: main1, author: "acme-dev", authorEmail: "dev@acme.test", message: "First", committedAt: Math.floor(clock.now() / 1000) * 1000, parents: [] });
    expect((await host.commitInfo(ref, main2))!.parents).toEqual([main1]);
    // No GitHub user for the email: the name as committed.
    expect((await host.commitInfo(ref, main2))!.author).toBe("Octo Dev");
    expect(await host.commitInfo(ref, "0".repeat(40))).toBeNull();
    expect(await host.commitInfo(ref, "not-a-sha")).toBeNull();
  });

  test("fetches a commit through the tarball redirect: files, modes and symlinks", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "gh-fetch-"));
    try {
      await host.fetchCommit(ref, main2, dir);
      expect(readFileSync(path.join(dir, "src/app.ts"), "utf8")).toBe("export const x = 1;\n");
      expect(statSync(path.join(dir, "bin/run")).mode & 0o777).toBe(0o755);
      expect(statSync(path.join(dir, "README.md")).mode & 0o777).toBe(0o644);
      expect(lstatSync(path.join(dir, "docs/link")).isSymbolicLink()).toBe(true);
      expect(readlinkSync(path.join(dir, "docs/link"))).toBe("../README.md");
      expect(gh.calls.some((c) => c.auth === "download")).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await opsError(host.fetchCommit(ref, "0".repeat(40), mkdtempSync(path.join(tmpdir(), "gh-fetch-"))))).status).toBe(404);
  });

  test("commits changes on a new branch through the git data API; modes kept, moves keep the source's mode", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]);
    const sha = await host.commitChanges(ref, {
      branch: "ops/save-1",
      parentSha: main2,
      message: "Studio save\n\nwith a body",
      author: { name: "Ada", email: "ada@ops.test" },
      changes: [
        { path: "README.md", content: enc("# shop v2\n") },
        { path: "src/app.ts", content: null },
        { path: "bin/start", content: enc("#!/bin/sh\nexec run\n"), movedFrom: "bin/run" },
        { path: "img/logo.png", content: png },
        { path: "docs/link", content: enc("../CHANGELOG.md") },
      ],
    });
    const dir = gh.repo("acme/shop").dir;
    expect(git(dir, ["rev-parse", "refs/heads/ops/save-1"]).out.trim()).toBe(sha);
    expect(git(dir, ["rev-parse", `${sha}^`]).out.trim()).toBe(main2);
    expect(git(dir, ["log", "-1", "--format=%an <%ae>%n%B", sha]).out.trim()).toBe("Ada <ada@ops.test>\nStudio save\n\nwith a body");
    const tree = git(dir, ["ls-tree", "-r", sha]).out.trim().split("\n").map((l) => `${l.split(" ")[0]} ${l.split("\t")[1]}`);
    expect(tree).toEqual(["100644 README.md", "100755 bin/start", "120000 docs/link", "100644 img/logo.png"]);
    expect(new Uint8Array(git(dir, ["cat-file", "blob", `${sha}:img/logo.png`]).bytes)).toEqual(png);
    // The branch exists now: a second save on it is refused.
    const again = await opsError(host.commitChanges(ref, { branch: "ops/save-1", parentSha: main2, message: "x", author: { name: "A", email: "a@ops.test" }, changes: [{ path: "x", content: enc("x") }] }));
    expect(again.status).toBe(409);
  });

  test("refuses changes that do not fit the parent with 422 naming the path, writing nothing", async () => {
    const base = { parentSha: main2, message: "bad", author: { name: "A", email: "a@ops.test" } };
    const cases: Array<[string, Parameters<CodeHost["commitChanges"]>[1]["changes"], string]> = [
      ["bad-1", [{ path: "nope.txt", content: null }], "nope.txt"],
      ["bad-2", [{ path: "b.txt", content: enc("b"), movedFrom: "nope.txt" }], "nope.txt"],
      ["bad-3", [{ path: "src", content: enc("a file where a directory is") }], "src"],
      ["bad-4", [{ path: "README.md/inner", content: enc("under a file") }], "README.md/inner"],
    ];
    const blobsBefore = gh.count("POST", /\/git\/blobs$/);
    for (const [branch, changes, p] of cases) {
      const e = await opsError(host.commitChanges(ref, { ...base, branch, changes }));
      expect(e.status).toBe(422);
      expect(e.message.startsWith(`${p}:`)).toBe(true);
    }
    expect(gh.count("POST", /\/git\/blobs$/)).toBe(blobsBefore);
    // A file moved away makes room for a directory of its name.
    const ok = await host.commitChanges(ref, { ...base, branch: "ok-1", changes: [{ path: "README.md/inner", content: enc("now fine") }, { path: "README.txt", content: enc("# shop\n"), movedFrom: "README.md" }] });
    expect(git(gh.repo("acme/shop").dir, ["ls-tree", "-r", "--name-only", ok]).out).toContain("README.md/inner");
    expect((await opsError(host.commitChanges(ref, { ...base, parentSha: "0".repeat(40), branch: "bad-5", changes: [] }))).status).toBe(404);
  });

  test("pull requests: open, read, merge with a merge commit, refusals with GitHub's reason, close", async () => {
    const repo = gh.repo("acme/shop");
    const head = await host.commitChanges(ref, { branch: "feature-a", parentSha: main2, message: "A", author: { name: "A", email: "a@ops.test" }, changes: [{ path: "a.txt", content: enc("a\n") }] });
    const pr = await host.openPull(ref, { head: "feature-a", base: "main", title: "Add a", body: "why" });
    expect(pr).toEqual({ number: pr.number, state: "open", head: "feature-a", base: "main", headSha: head, mergeSha: null, htmlUrl: `${gh.webUrl}/acme/shop/pull/${pr.number}` });
    expect(await host.getPull(ref, pr.number)).toEqual(pr);
    expect(await host.getPull(ref, 9999)).toBeNull();
    expect((await opsError(host.openPull(ref, { head: "no-such-branch", base: "main", title: "x" }))).status).toBe(404);

    // A squash-only repository refuses merge commits.
    repo.allowMergeCommit = false;
    const squashOnly = await host.mergePull(ref, pr.number, { message: "Merge A", committer: { name: "Ada", email: "ada@ops.test" } });
    expect(squashOnly).toEqual({ merged: false, reason: "GitHub refused the merge: Merge commits are not allowed on this repository.", conflicts: [] });
    repo.allowMergeCommit = true;

    const merged = await host.mergePull(ref, pr.number, { message: "Merge A\n\nstudio", committer: { name: "Ada", email: "ada@ops.test" } });
    expect(merged.merged).toBe(true);
    if (!merged.merged) return;
    expect(git(repo.dir, ["rev-parse", "refs/heads/main"]).out.trim()).toBe(merged.sha);
    expect(git(repo.dir, ["log", "-1", "--format=%P%n%s", merged.sha]).out.trim()).toBe(`${main2} ${head}\nMerge A`);
    expect(await host.getPull(ref, pr.number)).toMatchObject({ state: "merged", mergeSha: merged.sha });
    expect(await host.mergePull(ref, pr.number, { message: "again", committer: { name: "A", email: "a@ops.test" } })).toEqual({ merged: false, reason: `Pull request #${pr.number} is merged.`, conflicts: [] });

    // A conflict: GitHub refuses without naming paths; ops names them from the three versions.
    const mainNow = merged.sha;
    await host.commitChanges(ref, { branch: "left", parentSha: mainNow, message: "L", author: { name: "A", email: "a@ops.test" }, changes: [{ path: "a.txt", content: enc("left\n") }] });
    const right = await host.commitChanges(ref, { branch: "right", parentSha: mainNow, message: "R", author: { name: "A", email: "a@ops.test" }, changes: [{ path: "a.txt", content: enc("right\n") }] });
    const prL = await host.openPull(ref, { head: "left", base: "main", title: "L" });
    const prR = await host.openPull(ref, { head: "right", base: "main", title: "R" });
    expect((await host.mergePull(ref, prL.number, { message: "L", committer: { name: "A", email: "a@ops.test" } })).merged).toBe(true);
    const conflict = await host.mergePull(ref, prR.number, { message: "R", committer: { name: "A", email: "a@ops.test" } });
    expect(conflict).toEqual({ merged: false, reason: "GitHub refused the merge: Pull Request is not mergeable; merge conflict in a.txt.", conflicts: ["a.txt"] });
    expect((await host.getPull(ref, prR.number))!.headSha).toBe(right);

    await host.closePull(ref, prR.number);
    expect(await host.getPull(ref, prR.number)).toMatchObject({ state: "closed", mergeSha: null });
    expect((await opsError(host.closePull(ref, 9999))).status).toBe(404);
    expect((await opsError(host.mergePull(ref, 9999, { message: "x", committer: { name: "A", email: "a@ops.test" } }))).status).toBe(404);
  });

  test("the conflicts named for GitHub are the paths git's merge would stop on, and only those", async () => {
    const repo = gh.repo("acme/shop");
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n") + "\n";
    const base = gh.repos.commit(repo, { "merge/both-clean.txt": lines, "merge/both-clash.txt": lines, "merge/same.txt": "x\n", "merge/gone.txt": "g\n" }, { branch: "m-base", parent: git(repo.dir, ["rev-parse", "refs/heads/main"]).out.trim() });
    const edit = (from: string, at: number, to: string) => from.replace(`line ${at}\n`, `${to}\n`);
    gh.repos.commit(repo, { "merge/both-clean.txt": edit(lines, 2, "top edit"), "merge/both-clash.txt": edit(lines, 15, "left"), "merge/same.txt": "y\n", "merge/gone.txt": null }, { branch: "m-base", message: "base side" });
    gh.repos.commit(repo, { "merge/both-clean.txt": edit(lines, 27, "bottom edit"), "merge/both-clash.txt": edit(lines, 15, "right"), "merge/same.txt": "y\n", "merge/gone.txt": "changed\n" }, { branch: "m-head", parent: base, message: "head side" });
    const pr = await host.openPull(ref, { head: "m-head", base: "m-base", title: "M" });
    const refused = await host.mergePull(ref, pr.number, { message: "M", committer: { name: "A", email: "a@ops.test" } });
    expect(refused).toEqual({ merged: false, reason: "GitHub refused the merge: Pull Request is not mergeable; merge conflict in merge/both-clash.txt, merge/gone.txt.", conflicts: ["merge/both-clash.txt", "merge/gone.txt"] });
    // git agrees: the same two paths.
    const r = git(repo.dir, ["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", "refs/heads/m-base", "refs/heads/m-head"], { ok: [1] });
    expect(r.out.split("\0").filter(Boolean).slice(1).sort()).toEqual(["merge/both-clash.txt", "merge/gone.txt"]);
  });

  test("a required check that is not green blocks the merge, with GitHub's reason", async () => {
    const repo = gh.repo("acme/shop");
    const base = git(repo.dir, ["rev-parse", "refs/heads/main"]).out.trim();
    const head = await host.commitChanges(ref, { branch: "checked", parentSha: base, message: "C", author: { name: "A", email: "a@ops.test" }, changes: [{ path: "c.txt", content: enc("c\n") }] });
    const pr = await host.openPull(ref, { head: "checked", base: "main", title: "C" });
    repo.requiredContexts = ["ops/build"];
    try {
      const refused = await host.mergePull(ref, pr.number, { message: "C", committer: { name: "A", email: "a@ops.test" } });
      expect(refused).toEqual({ merged: false, reason: 'GitHub refused the merge: Required status check "ops/build" is expected; branch protection blocks it (a required check or review is missing).', conflicts: [] });
      const id = await host.setCommitStatus(ref, head, { state: "success", context: "ops/build", description: "built", targetUrl: "https://ops.example/builds/1" });
      expect(typeof id).toBe("number");
      expect((await host.mergePull(ref, pr.number, { message: "C", committer: { name: "A", email: "a@ops.test" } })).merged).toBe(true);
    } finally {
      repo.requiredContexts = [];
    }
  });

  test("check runs, commit statuses, deployments and deployment statuses are GitHub's records with GitHub's ids", async () => {
    const repo = gh.repo("acme/shop");
    const run = await host.createCheckRun(ref, { name: "ops/build", headSha: main2, status: "in_progress", title: "Building", summary: "step 1", detailsUrl: "https://ops.example/b/1" });
    await host.updateCheckRun(ref, run, { status: "completed", conclusion: "success", title: "Built", summary: "done" });
    expect(repo.checkRuns.find((c) => c.id === run)).toMatchObject({ name: "ops/build", head_sha: main2, status: "completed", conclusion: "success", output: { title: "Built", summary: "done" }, details_url: "https://ops.example/b/1" });
    const st = await host.setCommitStatus(ref, main2, { state: "pending", context: "ops/deploy" });
    expect(repo.statuses.find((s) => s.id === st)).toMatchObject({ sha: main2, state: "pending", context: "ops/deploy" });
    const dep = await host.createDeployment(ref, { sha: main2, environment: "production", description: "build 7" });
    expect(repo.deployments.find((d) => d.id === dep)).toMatchObject({ sha: main2, environment: "production", description: "build 7" });
    const ds = await host.createDeploymentStatus(ref, dep, { state: "success", environmentUrl: "https://shop.example", logUrl: "https://ops.example/b/7" });
    expect(repo.deploymentStatuses.find((d) => d.id === ds)).toMatchObject({ deployment_id: dep, state: "success", environment_url: "https://shop.example" });
    expect((await opsError(host.createDeploymentStatus(ref, 1, { state: "success" }))).status).toBe(404);
    expect((await opsError(host.updateCheckRun(ref, 1, { status: "completed" }))).status).toBe(404);
  });

  test("web URLs point at the GitHub web host", () => {
    expect(host.repoUrl("acme/shop")).toBe(`${gh.webUrl}/acme/shop`);
    expect(host.cloneUrl("acme/shop")).toBe(`${gh.webUrl}/acme/shop.git`);
    expect(host.fileUrl("acme/shop", "feature/x", "src/a b.ts")).toBe(`${gh.webUrl}/acme/shop/blob/feature/x/src/a%20b.ts`);
    expect(host.pullUrl("acme/shop", 7)).toBe(`${gh.webUrl}/acme/shop/pull/7`);
  });
});

describe("GitHub App credentials", () => {
  let clock: FixedClock;
  let gh: FakeGithub;
  let t: TestApp;
  let host: CodeHost;
  let ref: RepoRef;

  beforeAll(async () => {
    clock = new FixedClock();
    gh = FakeGithub.start({ now: () => clock.now() });
    t = await createTestApp({ clock, env: gh.env() });
    host = codeHostFor(t.core);
    ref = { repo: "acme/shop", installationId: gh.install("acme").id };
    gh.repos.commit(gh.createRepo("acme/shop"), { "a.txt": "a\n" });
  });
  afterAll(async () => {
    await t.close();
    gh.stop();
  });

  test("the App JWT is RS256 with iss = App id, iat 60 s in the past and exp within 10 minutes", async () => {
    await host.describe();
    const jwt = gh.jwts.at(-1)!;
    const header = JSON.parse(Buffer.from(jwt.split(".")[0]!, "base64url").toString());
    expect(header.alg).toBe("RS256");
    const claims = jwtClaims(jwt);
    const now = Math.floor(clock.now() / 1000);
    expect(claims.iss).toBe(gh.appId);
    expect(claims.iat).toBe(now - 60);
    expect(claims.exp! - now).toBeLessThanOrEqual(600);
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(600);
  });

  test("one installation token serves many calls; a new one is asked for shortly before it expires", async () => {
    const tokens = () => gh.count("POST", /^\/app\/installations\/\d+\/access_tokens$/);
    const before = tokens();
    await Promise.all([host.resolveRef(ref, "main"), host.resolveRef(ref, "main"), host.getRepo(ref)]);
    for (let i = 0; i < 5; i++) await host.resolveRef(ref, "main");
    expect(tokens() - before).toBeLessThanOrEqual(1);
    const afterFirst = tokens();
    clock.advance(50 * 60_000); // 10 minutes left: still used
    await host.resolveRef(ref, "main");
    expect(tokens()).toBe(afterFirst);
    clock.advance(6 * 60_000); // 4 minutes left: renewed
    await host.resolveRef(ref, "main");
    expect(tokens()).toBe(afterFirst + 1);
    await host.resolveRef(ref, "main");
    expect(tokens()).toBe(afterFirst + 1);
  });

  test("the JWT is reused while valid and renewed before it lapses", async () => {
    await host.describe();
    const first = gh.jwts.at(-1);
    await host.describe();
    expect(gh.jwts.at(-1)).toBe(first);
    clock.advance(9 * 60_000);
    await host.describe();
    expect(gh.jwts.at(-1)).not.toBe(first);
  });

  test("a token GitHub no longer accepts is replaced once, and the call goes through", async () => {
    const tokens = () => gh.count("POST", /access_tokens$/);
    const before = tokens();
    gh.revokeTokens();
    expect(await host.resolveRef(ref, "main")).toMatch(/^[0-9a-f]{40}$/);
    expect(tokens()).toBe(before + 1);
  });

  test("a rate limit is 503 with retry-after from the reset time, and not retried", async () => {
    const reset = Math.floor(clock.now() / 1000) + 120;
    gh.failNext({ status: 403, path: /\/git\/ref\//, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) }, body: { message: "API rate limit exceeded for installation ID 1." } });
    const calls = gh.calls.length;
    const e = await opsError(host.resolveRef(ref, "main"));
    expect(e.status).toBe(503);
    expect(e.headers["retry-after"]).toBe("120");
    expect(gh.calls.length - calls).toBe(1);
  });

  test("a secondary rate limit (429 retry-after) is 503 with that retry-after", async () => {
    gh.failNext({ status: 429, path: /\/git\/ref\//, headers: { "retry-after": "42" }, body: { message: "You have exceeded a secondary rate limit." } });
    const e = await opsError(host.resolveRef(ref, "main"));
    expect(e.status).toBe(503);
    expect(e.headers["retry-after"]).toBe("42");
  });

  test("a GET answered 5xx is retried once; twice is 503 with GitHub's retry-after", async () => {
    gh.failNext({ status: 502, path: /\/git\/ref\// });
    expect(await host.resolveRef(ref, "main")).toMatch(/^[0-9a-f]{40}$/);
    gh.failNext({ status: 503, path: /\/git\/ref\//, times: 2, headers: { "retry-after": "30" } });
    const calls = gh.calls.length;
    const e = await opsError(host.resolveRef(ref, "main"));
    expect(e.status).toBe(503);
    expect(e.headers["retry-after"]).toBe("30");
    expect(gh.calls.length - calls).toBe(2);
  });

  test("a write answered 5xx is not repeated", async () => {
    gh.failNext({ status: 500, path: /\/statuses\// });
    const sha = (await host.resolveRef(ref, "main"))!;
    const calls = gh.count("POST", /\/statuses\//);
    const e = await opsError(host.setCommitStatus(ref, sha, { state: "pending", context: "ops/x" }));
    expect(e.status).toBe(503);
    expect(gh.count("POST", /\/statuses\//) - calls).toBe(1);
  });

  test("GitHub unreachable is 503", async () => {
    const app = await createTestApp({ env: { ...gh.env(), OPS_GITHUB_API_URL: `http://127.0.0.1:1` } });
    try {
      const e = await opsError(codeHostFor(app.core).describe());
      expect(e.status).toBe(503);
      expect(e.headers["retry-after"]).toBe("30");
    } finally {
      await app.close();
    }
  });

  test("a private key file that cannot be read is 503 naming the setting", async () => {
    const app = await createTestApp({ env: { ...gh.env(), OPS_GITHUB_APP_PRIVATE_KEY_FILE: "/nonexistent/key.pem" } });
    try {
      const h = codeHostFor(app.core);
      expect(h.configured()).toBe(true);
      const e = await opsError(h.describe());
      expect(e.status).toBe(503);
      expect(e.message).toContain("OPS_GITHUB_APP_PRIVATE_KEY_FILE");
    } finally {
      await app.close();
    }
  });
});

describe("GitHub App host without its settings", () => {
  test("configured() is false and every call is 503 naming what is missing", async () => {
    const app = await createTestApp({ env: { OPS_CODE_HOST: "github", OPS_GITHUB_APP_ID: "1" } });
    try {
      const h = codeHostFor(app.core);
      expect(h.kind).toBe("github");
      expect(h.configured()).toBe(false);
      for (const p of [h.describe(), h.listRepos(), h.resolveRef({ repo: "a/b", installationId: 1 }, "main")]) {
        const e = await opsError(p);
        expect(e.status).toBe(503);
        expect(e.message).toContain("OPS_GITHUB_APP_PRIVATE_KEY_FILE, OPS_GITHUB_WEBHOOK_SECRET");
      }
    } finally {
      await app.close();
    }
  });
});
