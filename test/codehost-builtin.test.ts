/**
 * The built-in git host passes the code-host contract (test/codehost-contract.ts): a test app's
 * host, a project's repository seeded with git plumbing, and pushes made with the real git CLI
 * over `/git/`. Plus what only the built-in host promises: names that could leave `git/` are
 * refused, and each project reaches only its own repositories.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createTestApp, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken } from "./fixtures";
import { codeHostContract, SEED_FILES, SEED_MESSAGE, SEED_MODES } from "./codehost-contract";
import { commitFiles } from "./sources-fixtures";
import { cloneUrl, git, workDir } from "./sources-git-helpers";
import { codeHostFor } from "../src/adapters/codehost";
import { parseRepoName, repoDir } from "../src/adapters/codehost/builtin/repos";
import { OpsError } from "../src/core/errors";

// Real git processes and servers on a shared machine: bun's preload timeout only reaches the first file.
setDefaultTimeout(120_000);

codeHostContract("built-in git host", async () => {
  const t = await createTestApp();
  const slug = makeProject(t).slug;
  const host = codeHostFor(t.core);
  const installationId = (await host.installationFor(slug, slug)) as number;
  const repo = { repo: `${slug}/contract`, installationId };
  await host.ensureRepo(repo);
  await commitFiles(t, repo.repo, SEED_FILES, { message: SEED_MESSAGE, mode: SEED_MODES });
  const dev = await makePerson(t, [{ role: "developer", project: slug }]);
  const token = mintToken(t, dev.principal, { role: "developer", project: slug });
  return {
    host,
    repo,
    project: slug,
    async push(branch) {
      const dir = workDir();
      await git(dir, "clone", "-q", cloneUrl(t.url, repo.repo, token), "c");
      const w = path.join(dir, "c");
      writeFileSync(path.join(w, "pushed.txt"), `${branch}\n`);
      await git(w, "add", "pushed.txt");
      await git(w, "commit", "-q", "-m", `Push ${branch}`);
      await git(w, "push", "-q", "origin", `HEAD:refs/heads/${branch}`);
      return (await git(w, "rev-parse", "HEAD")).trim();
    },
    close: () => t.close(),
  };
});

describe("built-in host: names and owners", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  test("repository names that could leave git/ are refused", () => {
    const root = path.join(t.dataDir, "git");
    for (const bad of ["../x", "a/..", "a/../b", "a/.hidden", "a/b/c", "A/b", "a/b.git.git", "-a/b", "a/", "/a", "a/b\0", "a/.", "a/.."]) {
      expect(parseRepoName(bad)).toBeNull();
      expect(repoDir(root, bad)).toBeNull();
    }
    expect(parseRepoName("proj/app.git")).toEqual({ owner: "proj", name: "app" });
    expect(repoDir(root, "proj/my_app-2.0")).toBe(path.join(root, "proj", "my_app-2.0.git"));
  });

  test("a commit is written out from the bare repository as files, executables and symlinks; an unknown commit or a tree is not_found", async () => {
    const slug = makeProject(t).slug;
    const host = codeHostFor(t.core);
    const repo = { repo: `${slug}/files`, installationId: (await host.installationFor(slug, slug)) as number };
    await host.ensureRepo(repo);
    const sha = await commitFiles(t, repo.repo, { "a.txt": "a\n", "bin/run.sh": "#!/bin/sh\n", "link": "a.txt" }, { mode: { "bin/run.sh": "100755", link: "120000" } });
    const dir = mkdtempSync(path.join(tmpdir(), "ops-fetch-"));
    try {
      await host.fetchCommit(repo, sha, dir);
      expect(readFileSync(path.join(dir, "a.txt"), "utf8")).toBe("a\n");
      expect(lstatSync(path.join(dir, "bin/run.sh")).mode & 0o111).not.toBe(0);
      expect(lstatSync(path.join(dir, "link")).isSymbolicLink()).toBe(true);
      expect(readlinkSync(path.join(dir, "link"))).toBe("a.txt");
      const tree = (await git(path.join(t.dataDir, "git", slug, "files.git"), "rev-parse", `${sha}^{tree}`)).trim();
      for (const missing of ["0".repeat(40), tree]) {
        const err = await host.fetchCommit(repo, missing, dir).catch((e) => e);
        expect(err).toBeInstanceOf(OpsError);
        expect((err as OpsError).code).toBe("not_found");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a project reaches only its own repositories; unknown owners are not installed", async () => {
    const a = makeProject(t).slug;
    const b = makeProject(t).slug;
    const host = codeHostFor(t.core);
    expect(await host.installationFor(a, a)).toBeGreaterThan(0);
    expect(await host.installationFor(a, b)).toBeNull();
    expect(await host.installationFor("no-such-project", "no-such-project")).toBeNull();
    expect(await host.ensureRepo({ repo: "no-such-project/x", installationId: 0 })).toBeNull();
    expect(await host.ensureRepo({ repo: `${a}/../../etc`, installationId: 0 })).toBeNull();
  });
});
