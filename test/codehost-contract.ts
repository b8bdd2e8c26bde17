/**
 * The contract every code host implements (src/adapters/codehost/types.ts), as one reusable suite:
 * `codeHostContract(name, makeFixture)` registers the tests for a host. The built-in host runs it
 * in test/codehost-builtin.test.ts; the GitHub App adapter runs the same suite against its local
 * GitHub stand-in.
 *
 * The fixture hands over a host and one repository whose default branch `main` holds exactly
 * `SEED_FILES` (with `SEED_MODES`) in a single commit whose message is `SEED_MESSAGE`, reachable
 * through the installation `repo.installationId` from the project `project`, plus a way to make
 * the host report a push. The suite writes branches, pull requests and reports of its own; it
 * never relies on another test's writes except where a test says so.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { CodeHost, HostPush, RepoRef, TreeEntry } from "../src/adapters/codehost/types";

export const SEED_MESSAGE = "Seed the contract repository\n\nWith a body that is not the first line.";
export const BINARY = Uint8Array.from([0, 1, 2, 3, 255, 254, 0, 10, 13, 128]);
export const SEED_FILES: Record<string, string | Uint8Array> = {
  "README.md": "# contract\n",
  "src/app.js": "console.log('hello');\n",
  "src/lib/util.js": "export const one = 1;\n",
  "bin/run.sh": "#!/bin/sh\necho run\n",
  "data/blob.bin": BINARY,
};
export const SEED_MODES: Record<string, string> = { "bin/run.sh": "100755" };

export interface ContractFixture {
  host: CodeHost;
  /** The seeded repository (`owner/name`) and the installation that reaches it. */
  repo: RepoRef;
  /** A project slug through which `repo`'s owner is reachable (`installationFor(owner, project)`). */
  project: string;
  /** Make the host report a push to `refs/heads/<branch>` with new content; returns the new sha. */
  push(branch: string): Promise<string>;
  close(): Promise<void>;
}

const enc = (s: string | Uint8Array) => (typeof s === "string" ? new TextEncoder().encode(s) : s);
const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

export function codeHostContract(name: string, makeFixture: () => Promise<ContractFixture>): void {
  describe(`code host contract: ${name}`, () => {
    let f: ContractFixture;
    let host: CodeHost;
    let repo: RepoRef;
    let seed: string;
    let n = 0;
    const branch = (p: string) => `contract/${p}-${++n}-${Math.random().toString(36).slice(2, 7)}`;
    const author = { name: "Contract Tester", email: "contract@ops.test" };

    beforeAll(async () => {
      f = await makeFixture();
      host = f.host;
      repo = f.repo;
      seed = (await host.resolveRef(repo, "main")) as string;
    });
    afterAll(async () => {
      await f?.close();
    });

    test("describes itself, lists the repository, reaches its owner", async () => {
      expect(host.configured()).toBe(true);
      const app = await host.describe();
      expect(app.slug).not.toBe("");
      expect(app.installUrl).toBe(`${app.htmlUrl}/installations/new`);
      expect(app.installations).toBeGreaterThanOrEqual(1);
      const listed = (await host.listRepos()).find((r) => r.fullName === repo.repo);
      expect(listed).toMatchObject({ fullName: repo.repo, defaultBranch: "main" });
      expect(await host.installationFor(repo.repo.split("/")[0]!, f.project)).toBe(repo.installationId);
      expect(await host.getRepo(repo)).toMatchObject({ fullName: repo.repo, defaultBranch: "main" });
      expect(await host.getRepo({ ...repo, repo: `${repo.repo.split("/")[0]}/no-such-repository` })).toBeNull();
    });

    test("resolves branches, full refs and shas; unknown names resolve to null", async () => {
      expect(seed).toMatch(/^[0-9a-f]{40}$/);
      expect(await host.resolveRef(repo, "refs/heads/main")).toBe(seed);
      expect(await host.resolveRef(repo, seed)).toBe(seed);
      expect(await host.resolveRef(repo, "no-such-branch")).toBeNull();
      expect(await host.resolveRef(repo, "0".repeat(40))).toBeNull();
    });

    test("reads the whole tree (directories before their contents) and truncates at the limit", async () => {
      const tree = await host.readTree(repo, seed, { limit: 1000 });
      expect(tree.truncated).toBe(false);
      expect(tree.commitSha).toBe(seed);
      const byPath = new Map(tree.entries.map((e) => [e.path, e]));
      for (const [p, content] of Object.entries(SEED_FILES)) {
        const e = byPath.get(p) as TreeEntry;
        expect(e).toMatchObject({ type: "blob", size: enc(content).length, mode: SEED_MODES[p] ?? "100644" });
        expect(e.sha).toMatch(/^[0-9a-f]{40}$/);
      }
      for (const d of ["src", "src/lib", "bin", "data"]) expect(byPath.get(d)).toMatchObject({ type: "tree", size: null });
      const order = tree.entries.map((e) => e.path);
      expect(order.indexOf("src")).toBeLessThan(order.indexOf("src/app.js"));
      expect(order.indexOf("src/lib")).toBeLessThan(order.indexOf("src/lib/util.js"));
      const cut = await host.readTree(repo, seed, { limit: 2 });
      expect(cut.truncated).toBe(true);
      expect(cut.entries).toEqual(tree.entries.slice(0, 2));
    });

    test("reads a file with its blob sha and mode; directories, missing paths and the size cap", async () => {
      const file = await host.readFile(repo, seed, "src/app.js", { maxBytes: 1024 });
      expect(file.kind).toBe("file");
      if (file.kind !== "file") return;
      expect(text(file.content)).toBe(SEED_FILES["src/app.js"] as string);
      const tree = await host.readTree(repo, seed, { limit: 1000 });
      expect(file.sha).toBe(tree.entries.find((e) => e.path === "src/app.js")!.sha);
      const bin = await host.readFile(repo, seed, "data/blob.bin", { maxBytes: 1024 });
      expect(bin.kind === "file" && Buffer.from(bin.content!).equals(Buffer.from(BINARY))).toBe(true);
      const exe = await host.readFile(repo, seed, "bin/run.sh", { maxBytes: 1024 });
      expect(exe.kind === "file" && exe.mode).toBe("100755");
      expect((await host.readFile(repo, seed, "src", { maxBytes: 1024 })).kind).toBe("directory");
      expect(await host.readFile(repo, seed, "nope.txt", { maxBytes: 1024 })).toEqual({ kind: "missing" });
      const capped = await host.readFile(repo, seed, "README.md", { maxBytes: 3 });
      expect(capped.kind === "file" && capped.size).toBe(enc(SEED_FILES["README.md"]!).length);
      expect(capped.kind === "file" && capped.content).toBeUndefined();
    });

    test("commit metadata: first message line, time, parents", async () => {
      const info = await host.commitInfo(repo, seed);
      expect(info).not.toBeNull();
      expect(info!.sha).toBe(seed);
      expect(info!.message).toBe(SEED_MESSAGE.split("\n")[0]!);
      expect(info!.author).not.toBe("");
      expect(info!.committedAt).toBeGreaterThan(0);
      expect(Array.isArray(info!.parents)).toBe(true);
      expect(await host.commitInfo(repo, "f".repeat(40))).toBeNull();
    });

    test("fetches a commit's tree into a directory, modes included", async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "ops-contract-fetch-"));
      try {
        await host.fetchCommit(repo, seed, dir);
        for (const [p, content] of Object.entries(SEED_FILES)) expect(Buffer.from(readFileSync(path.join(dir, p))).equals(Buffer.from(enc(content)))).toBe(true);
        expect(statSync(path.join(dir, "bin/run.sh")).mode & 0o111).not.toBe(0);
        expect(statSync(path.join(dir, "README.md")).mode & 0o111).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test("commits add, modify, delete, move (keeping the mode) and bytes as a new branch over the parent", async () => {
      const b = branch("changes");
      const bytes = Uint8Array.from([0, 159, 146, 150, 0, 255]);
      const sha = await host.commitChanges(repo, {
        branch: b,
        parentSha: seed,
        message: "Contract changes\n\nbody",
        author,
        changes: [
          { path: "docs/new.md", content: enc("new\n") },
          { path: "README.md", content: enc("# changed\n") },
          { path: "src/lib/util.js", content: null },
          { path: "scripts/run.sh", content: enc("#!/bin/sh\necho moved\n"), movedFrom: "bin/run.sh" },
          { path: "data/more.bin", content: bytes },
        ],
      });
      expect(await host.resolveRef(repo, b)).toBe(sha);
      expect((await host.commitInfo(repo, sha))!.parents).toEqual([seed]);
      const tree = await host.readTree(repo, sha, { limit: 1000 });
      const paths = new Map(tree.entries.map((e) => [e.path, e]));
      expect(paths.has("src/lib/util.js")).toBe(false);
      expect(paths.has("bin/run.sh")).toBe(false);
      expect(paths.get("scripts/run.sh")?.mode).toBe("100755");
      expect(paths.get("docs/new.md")?.mode).toBe("100644");
      const readme = await host.readFile(repo, sha, "README.md", { maxBytes: 100 });
      expect(readme.kind === "file" && text(readme.content)).toBe("# changed\n");
      const more = await host.readFile(repo, sha, "data/more.bin", { maxBytes: 100 });
      expect(more.kind === "file" && Buffer.from(more.content!).equals(Buffer.from(bytes))).toBe(true);
      // The base branch did not move; the same branch cannot be created twice.
      expect(await host.resolveRef(repo, "main")).toBe(seed);
      await expect(host.commitChanges(repo, { branch: b, parentSha: seed, message: "again", author, changes: [{ path: "x.txt", content: enc("x") }] })).rejects.toMatchObject({ status: 409 });
    });

    test("opens and merges a pull request (the base moves to the merge); a conflicting one is refused with its paths", async () => {
      const base = branch("base");
      await host.commitChanges(repo, { branch: base, parentSha: seed, message: "Base of the merge test", author, changes: [{ path: "base.txt", content: enc("base\n") }] });
      const baseSha = (await host.resolveRef(repo, base)) as string;
      const a = branch("a");
      const c = branch("c");
      const aSha = await host.commitChanges(repo, { branch: a, parentSha: baseSha, message: "A edits the README", author, changes: [{ path: "README.md", content: enc("# from a\n") }] });
      await host.commitChanges(repo, { branch: c, parentSha: baseSha, message: "C edits the README too", author, changes: [{ path: "README.md", content: enc("# from c\n") }] });
      const pa = await host.openPull(repo, { head: a, base, title: "A" });
      expect(pa).toMatchObject({ state: "open", head: a, base, headSha: aSha, mergeSha: null });
      expect(pa.number).toBeGreaterThan(0);
      expect(pa.htmlUrl).toMatch(/^https?:\/\//);
      expect(await host.getPull(repo, pa.number)).toMatchObject({ number: pa.number, state: "open" });
      const merged = await host.mergePull(repo, pa.number, { message: "Merge A", committer: author });
      expect(merged.merged).toBe(true);
      if (!merged.merged) return;
      expect(await host.resolveRef(repo, base)).toBe(merged.sha);
      expect(await host.getPull(repo, pa.number)).toMatchObject({ state: "merged", mergeSha: merged.sha });

      const pc = await host.openPull(repo, { head: c, base, title: "C" });
      const refused = await host.mergePull(repo, pc.number, { message: "Merge C", committer: author });
      expect(refused.merged).toBe(false);
      if (refused.merged) return;
      expect(refused.conflicts).toContain("README.md");
      expect(refused.reason).toContain("README.md");
      expect(await host.resolveRef(repo, base)).toBe(merged.sha);
      expect(await host.getPull(repo, pc.number)).toMatchObject({ state: "open" });
    });

    test("a diverged, clean pull request lands as a merge commit with both parents", async () => {
      const base = branch("base2");
      const baseSha = await host.commitChanges(repo, { branch: base, parentSha: seed, message: "Base", author, changes: [{ path: "one.txt", content: enc("1\n") }] });
      const h = branch("head2");
      const headSha = await host.commitChanges(repo, { branch: h, parentSha: seed, message: "Head", author, changes: [{ path: "two.txt", content: enc("2\n") }] });
      const pr = await host.openPull(repo, { head: h, base, title: "Diverged" });
      const merged = await host.mergePull(repo, pr.number, { message: "Merge diverged", committer: author });
      expect(merged.merged).toBe(true);
      if (!merged.merged) return;
      expect((await host.commitInfo(repo, merged.sha))!.parents.sort()).toEqual([baseSha, headSha].sort());
      const tree = await host.readTree(repo, merged.sha, { limit: 1000 });
      expect(tree.entries.some((e) => e.path === "one.txt")).toBe(true);
      expect(tree.entries.some((e) => e.path === "two.txt")).toBe(true);
    });

    test("closes a pull request; a closed one does not merge; unknown numbers are null", async () => {
      const h = branch("closing");
      await host.commitChanges(repo, { branch: h, parentSha: seed, message: "To close", author, changes: [{ path: "close.txt", content: enc("c\n") }] });
      const pr = await host.openPull(repo, { head: h, base: "main", title: "Close me" });
      await host.closePull(repo, pr.number);
      expect(await host.getPull(repo, pr.number)).toMatchObject({ state: "closed" });
      expect((await host.mergePull(repo, pr.number, { message: "no", committer: author })).merged).toBe(false);
      expect(await host.getPull(repo, 999_999)).toBeNull();
    });

    test("records check runs, commit statuses, deployments and deployment statuses with host ids", async () => {
      const check = await host.createCheckRun(repo, { name: "ops/build", headSha: seed, status: "in_progress", title: "Building" });
      expect(Number.isInteger(check) && check > 0).toBe(true);
      await host.updateCheckRun(repo, check, { status: "completed", conclusion: "success", summary: "done" });
      const status = await host.setCommitStatus(repo, seed, { state: "success", context: "ops/build", description: "built" });
      expect(Number.isInteger(status) && status > 0).toBe(true);
      const dep = await host.createDeployment(repo, { sha: seed, environment: "production", description: "deploy" });
      expect(Number.isInteger(dep) && dep > 0).toBe(true);
      const ds = await host.createDeploymentStatus(repo, dep, { state: "success", environmentUrl: "https://example.com" });
      expect(Number.isInteger(ds) && ds > 0).toBe(true);
    });

    test("web URLs", () => {
      expect(host.repoUrl(repo.repo)).toMatch(/^https?:\/\//);
      expect(host.cloneUrl(repo.repo)).toMatch(/^https?:\/\/.*\.git$/);
      expect(host.fileUrl(repo.repo, "main", "src/app.js")).toMatch(/^https?:\/\/.*app\.js$/);
      expect(host.pullUrl(repo.repo, 7)).toMatch(/7$/);
    });

    test("delivers a push to its subscribers, once per updated ref, after the ref is written", async () => {
      const seen: HostPush[] = [];
      const resolvedAtDelivery: Array<string | null> = [];
      const off = host.onPush(async (p) => {
        seen.push(p);
        resolvedAtDelivery.push(await host.resolveRef(repo, p.ref));
      });
      try {
        const b = branch("pushed");
        const after = await f.push(b);
        const mine = seen.filter((p) => p.ref === `refs/heads/${b}`);
        expect(mine).toHaveLength(1);
        expect(mine[0]).toMatchObject({ repo: repo.repo, installationId: repo.installationId, after });
        expect(mine[0]!.before).toMatch(/^[0-9a-f]{40}$/);
        expect(mine[0]!.pusher).not.toBe("");
        expect(resolvedAtDelivery[seen.indexOf(mine[0]!)]).toBe(after);
      } finally {
        off();
      }
    });
  });
}
