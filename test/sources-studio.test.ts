/**
 * The studio through the API, checked with the real git CLI: a save (add, modify, delete, moves
 * keeping the mode, a binary file) becomes a commit whose tree and parent `git` confirms on the
 * fetched branch; a conflicting merge is 409 naming the path; a clean merge lands on the default
 * branch and queues a scan. Plus every refusal of the spec's Errors table for saves and file
 * reads, the tree's refs and truncation, and the last-20 list.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import path from "node:path";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken } from "./fixtures";
import { commitFiles, bareDir } from "./sources-fixtures";
import { cloneUrl, git, workDir } from "./sources-git-helpers";
import { eq } from "drizzle-orm";
import { codeHostFor } from "../src/adapters/codehost";
import { sourceSaves } from "../src/domains/sources/tables";

// Real git processes and servers on a shared machine: bun's preload timeout only reaches the first file.
setDefaultTimeout(120_000);

let t: TestApp;
let slug: string;
let session: string;
let token: string;
let sourceId: string;
let repo: string;
let seed: string;

const PIXEL = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const api = (p: string) => `/api/v1/projects/${slug}/sources${p}`;
const req = (method: string, p: string, body?: unknown) => t.request(method, api(p), { token: session, body });

async function fileSha(p: string, ref?: string): Promise<string> {
  const f = await expectStatus(await req("GET", `/${sourceId}/file?path=${encodeURIComponent(p)}${ref ? `&ref=${encodeURIComponent(ref)}` : ""}`), 200);
  return f.sha;
}

/** POST a save and run the scheduler until it has run; returns the save. */
async function save(body: unknown): Promise<any> {
  const queued = await expectStatus(await req("POST", `/${sourceId}/saves`, body), 202);
  expect(queued.status).toBe("queued");
  await t.core.scheduler.runDue();
  return expectStatus(await req("GET", `/saves/${queued.save_id}`), 200);
}

beforeAll(async () => {
  t = await createTestApp();
  slug = makeProject(t).slug;
  const dev = await makePerson(t, [{ role: "developer", project: slug }], { displayName: "Dee Veloper" });
  session = dev.session;
  token = mintToken(t, dev.principal, { role: "developer", project: slug });
  const created = await expectStatus(await req("POST", "", { repo: `${slug}/site` }), 201);
  sourceId = created.id;
  repo = created.repo;
  seed = await commitFiles(
    t,
    repo,
    {
      "README.md": "# site\n",
      "bin/run.sh": "#!/bin/sh\necho hi\n",
      "src/a.txt": "a\n",
      "old/name.txt": "name\n",
      "assets/logo.bin": Buffer.from([0, 1, 2, 0, 255]),
      Dockerfile: "FROM node:22\nEXPOSE 8080\n",
    },
    { mode: { "bin/run.sh": "100755" } },
  );
});

afterAll(() => t.close());

describe("saves", () => {
  test("a save becomes a branch and a pull request; git sees its tree, modes and parent", async () => {
    const readme = await fileSha("README.md");
    const a = await fileSha("src/a.txt");
    const s = await save({
      message: "Edit the site\n\nA longer description.",
      changes: [
        { path: "docs/new.md", text: "new page\n" },
        { path: "README.md", text: "# site, edited\n", base_sha: readme },
        { path: "src/a.txt", text: null, base64: null, base_sha: a },
        { path: "new/name.txt", text: "name\n", moved_from: "old/name.txt" },
        { path: "scripts/run.sh", text: "#!/bin/sh\necho moved\n", moved_from: "bin/run.sh" },
        { path: "img/pixel.png", base64: PIXEL.toString("base64") },
      ],
    });
    expect(s.status).toBe("open");
    expect(s.branch).toBe(`ops/save-${s.id}`);
    expect(s.ref).toBeNull();
    expect(s.pull_number).toBeGreaterThan(0);
    expect(s.pull_url).toBe(`${t.url}/git/${repo}/pulls/${s.pull_number}`);
    expect(s.requested_by).toContain("@ops.test");
    expect(s.files).toEqual([
      { path: "docs/new.md", action: "add" },
      { path: "README.md", action: "modify" },
      { path: "src/a.txt", action: "delete" },
      { path: "new/name.txt", action: "add" },
      { path: "scripts/run.sh", action: "add" },
      { path: "img/pixel.png", action: "add" },
      { path: "old/name.txt", action: "delete" },
      { path: "bin/run.sh", action: "delete" },
    ]);
    expect(s.log).toContain(`opened pull request #${s.pull_number}`);

    const dir = workDir();
    await git(dir, "clone", "-q", cloneUrl(t.url, repo, token), "c");
    const w = path.join(dir, "c");
    await git(w, "fetch", "-q", "origin", s.branch);
    expect((await git(w, "rev-parse", "FETCH_HEAD")).trim()).toBe(s.commit_sha);
    expect((await git(w, "rev-parse", `${s.commit_sha}^`)).trim()).toBe(seed);
    expect((await git(w, "log", "-1", "--format=%s|%an", s.commit_sha)).trim()).toBe("Edit the site|Dee Veloper");
    const tree = Object.fromEntries(
      (await git(w, "ls-tree", "-r", s.commit_sha))
        .trim()
        .split("\n")
        .map((l) => {
          const [meta, p] = l.split("\t");
          return [p, meta!.split(" ")[0]];
        }),
    );
    expect(tree).toEqual({
      "Dockerfile": "100644",
      "README.md": "100644",
      "assets/logo.bin": "100644",
      "docs/new.md": "100644",
      "img/pixel.png": "100644",
      "new/name.txt": "100644",
      "scripts/run.sh": "100755",
    });
    expect((await git(w, "show", `${s.commit_sha}:README.md`))).toBe("# site, edited\n");
    const proc = Bun.spawn(["git", "-C", w, "show", `${s.commit_sha}:img/pixel.png`], { stdout: "pipe" });
    expect(Buffer.from(await new Response(proc.stdout).arrayBuffer()).equals(PIXEL)).toBe(true);

    // The tree lists the save's branch after the default branch, with its save and pull request.
    const treeRes = await expectStatus(await req("GET", `/${sourceId}/tree?ref=${encodeURIComponent(s.branch)}`), 200);
    expect(treeRes.refs[0]).toEqual({ name: "main", pull_number: null, save_id: null });
    expect(treeRes.refs).toContainEqual({ name: s.branch, pull_number: s.pull_number, save_id: s.id });
    expect(treeRes.sha).toBe(s.commit_sha);
  });

  test("a merge conflict is 409 naming the path; a clean merge lands on main and queues a scan", async () => {
    const readme = await fileSha("README.md");
    const one = await save({ message: "One", changes: [{ path: "README.md", text: "# one\n", base_sha: readme }] });
    const two = await save({ message: "Two", changes: [{ path: "README.md", text: "# two\n", base_sha: readme }] });
    expect([one.status, two.status]).toEqual(["open", "open"]);

    const merged = await expectStatus(await req("POST", `/saves/${one.id}/merge`), 200);
    expect(merged.status).toBe("merged");
    expect(merged.merge_sha).toMatch(/^[0-9a-f]{40}$/);
    expect(merged.merged_by).toContain("@ops.test");
    expect(merged.scan_id).toBeGreaterThan(0);
    const main = await git(workDir(), "ls-remote", cloneUrl(t.url, repo, token), "refs/heads/main");
    expect(main.split("\t")[0]).toBe(merged.merge_sha);
    const queued = await expectStatus(await req("GET", `/scans/${merged.scan_id}`), 200);
    expect(queued).toMatchObject({ status: "queued", git_ref: "main", repo });
    await t.core.scheduler.runDue();
    const scanned = await expectStatus(await req("GET", `/scans/${merged.scan_id}`), 200);
    expect(scanned.status).toBe("succeeded");
    expect(scanned.services.map((s: { name: string }) => s.name)).toEqual(["site"]);

    const conflict = await expectStatus(await req("POST", `/saves/${two.id}/merge`), 409);
    expect(conflict.message).toContain("README.md");
    expect(conflict.details.conflicts).toEqual(["README.md"]);
    expect((await expectStatus(await req("GET", `/saves/${two.id}`), 200)).status).toBe("open");
    // Merging what is no longer open is 409 too.
    await expectStatus(await req("POST", `/saves/${one.id}/merge`), 409);
  });

  test("a save interrupted after its commit resumes: the branch's commit is reused and the pull request opened", async () => {
    const queued = await expectStatus(await req("POST", `/${sourceId}/saves`, { message: "Resumed", changes: [{ path: "docs/resume.md", text: "resumed\n" }] }), 202);
    // What the first run did before ops stopped: the commit on ops/save-<id>, the row `running`.
    const host = codeHostFor(t.core);
    const listed = (await expectStatus(await req("GET", ""), 200)) as Array<{ id: string; installation_id: number }>;
    const ref = { repo, installationId: listed.find((x) => x.id === sourceId)!.installation_id };
    const head = (await host.resolveRef(ref, "refs/heads/main"))!;
    const commit = await host.commitChanges(ref, { branch: `ops/save-${queued.save_id}`, parentSha: head, message: "Resumed", author: { name: "Dee Veloper", email: "dee@ops.test" }, changes: [{ path: "docs/resume.md", content: Buffer.from("resumed\n") }] });
    t.core.db.update(sourceSaves).set({ status: "running" }).where(eq(sourceSaves.id, queued.save_id)).run();
    await t.core.scheduler.runDue();
    const resumed = await expectStatus(await req("GET", `/saves/${queued.save_id}`), 200);
    expect(resumed.status).toBe("open");
    expect(resumed.commit_sha).toBe(commit);
    expect(resumed.pull_number).toBeGreaterThan(0);
    expect(resumed.log).toContain("resumed");

    // A branch of that name holding something else fails the save, saying so.
    const other = await expectStatus(await req("POST", `/${sourceId}/saves`, { message: "Clash", changes: [{ path: "docs/clash.md", text: "x\n" }] }), 202);
    await host.commitChanges(ref, { branch: `ops/save-${other.save_id}`, parentSha: seed, message: "Elsewhere", author: { name: "X", email: "x@ops.test" }, changes: [{ path: "x.md", content: Buffer.from("x") }] });
    await t.core.scheduler.runDue();
    const failed = await expectStatus(await req("GET", `/saves/${other.save_id}`), 200);
    expect(failed.status).toBe("failed");
    expect(failed.error).toContain(`ops/save-${other.save_id} already exists`);
  });

  test("a base_sha that no longer matches is refused naming the path; so is a new file over an existing one", async () => {
    const res = await expectStatus(await req("POST", `/${sourceId}/saves`, { message: "Stale", changes: [{ path: "README.md", text: "x", base_sha: "0".repeat(40) }] }), 422);
    expect(res.details.fields[0].path).toBe("changes[0].base_sha");
    expect(res.message).toContain("README.md");
    const exists = await expectStatus(await req("POST", `/${sourceId}/saves`, { message: "Clobber", changes: [{ path: "README.md", text: "x" }] }), 422);
    expect(exists.details.fields[0].path).toBe("changes[0].base_sha");
    const gone = await expectStatus(await req("POST", `/${sourceId}/saves`, { message: "Delete nothing", changes: [{ path: "nope.txt", text: null }] }), 422);
    expect(gone.details.fields[0].path).toBe("changes[0].path");
  });

  test("every shape refusal of the Errors table is 422 with the field", async () => {
    const big = "x".repeat(3 * 1024 * 1024);
    const cases: Array<[unknown, string]> = [
      [{ message: " ", changes: [{ path: "a.txt", text: "a" }] }, "message"],
      [{ message: "m", changes: [] }, "changes"],
      [{ message: "m", changes: Array.from({ length: 201 }, (_, i) => ({ path: `f${i}.txt`, text: "x" })) }, "changes"],
      [{ message: "m", changes: [{ path: "/abs.txt", text: "a" }] }, "changes[0].path"],
      [{ message: "m", changes: [{ path: "a/../../etc/passwd", text: "a" }] }, "changes[0].path"],
      [{ message: "m", changes: [{ path: ".git/config", text: "a" }] }, "changes[0].path"],
      [{ message: "m", changes: [{ path: "a.txt", text: "a" }, { path: "a.txt", text: "b" }] }, "changes[1].path"],
      [{ message: "m", changes: [{ path: "a.txt", text: "a", base64: "YQ==" }] }, "changes[0].base64"],
      [{ message: "m", changes: [{ path: "a.bin", base64: "not base64!" }] }, "changes[0].base64"],
      [{ message: "m", changes: [{ path: "a.bin", base64: Buffer.alloc(5 * 1024 * 1024 + 1).toString("base64") }] }, "changes[0].base64"],
      [{ message: "m", changes: [{ path: "a.txt", text: big }, { path: "b.txt", text: big }, { path: "c.txt", text: big }] }, "changes"],
      [{ message: "m", changes: [{ path: "a.txt", text: "a", moved_from: "../x" }] }, "changes[0].moved_from"],
    ];
    for (const [body, field] of cases) {
      const res = await expectStatus(await req("POST", `/${sourceId}/saves`, body), 422);
      expect(res.details.fields[0].path).toBe(field);
    }
  });

  test("unknown ref or source is 404; an archived project is 409; the list holds the last 20, newest first", async () => {
    await expectStatus(await req("POST", `/${sourceId}/saves`, { message: "m", ref: "no-such-branch", changes: [{ path: "z.txt", text: "z" }] }), 404);
    await expectStatus(await req("POST", `/00000000-0000-7000-8000-000000000000/saves`, { message: "m", changes: [{ path: "z.txt", text: "z" }] }), 404);
    const ids: number[] = [];
    for (let i = 0; i < 21; i++) ids.push((await expectStatus(await req("POST", `/${sourceId}/saves`, { message: `List ${i}`, changes: [{ path: `list/${i}.txt`, text: "x" }] }), 202)).save_id);
    const list = await expectStatus(await req("GET", `/${sourceId}/saves`), 200);
    expect(list).toHaveLength(20);
    expect(list[0].id).toBe(ids[20]);
    expect(list.map((s: { id: number }) => s.id)).toEqual([...list.map((s: { id: number }) => s.id)].sort((x, y) => y - x));

    const other = makeProject(t).slug;
    const owner = await makePerson(t, [{ role: "owner", project: other }]);
    const src = await expectStatus(await t.request("POST", `/api/v1/projects/${other}/sources`, { token: owner.session, body: { repo: `${other}/r` } }), 201);
    await commitFiles(t, `${other}/r`, { "a.txt": "a\n" });
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${other}`, { token: owner.session, body: { archived: true } }), 200);
    await expectStatus(await t.request("POST", `/api/v1/projects/${other}/sources/${src.id}/saves`, { token: owner.session, body: { message: "m", changes: [{ path: "b.txt", text: "b" }] } }), 409);
  });
});

describe("file and tree reads", () => {
  test("text, binary (NUL, or invalid UTF-8 past the first 8 KiB), missing, directory, bad path, unknown ref", async () => {
    await commitFiles(t, repo, { "late.bin": Buffer.concat([Buffer.from("a".repeat(9000)), Buffer.from([0xc3, 0x28])]), "big.txt": "y".repeat(1024 * 1024 + 1), "huge.bin": Buffer.alloc(5 * 1024 * 1024 + 1, 1) });
    const text = await expectStatus(await req("GET", `/${sourceId}/file?path=Dockerfile`), 200);
    expect(text).toMatchObject({ exists: true, binary: false, base64: null, text: "FROM node:22\nEXPOSE 8080\n", path: "Dockerfile", ref: "main" });
    expect(text.sha).toMatch(/^[0-9a-f]{40}$/);
    expect(text.html_url).toBe(`${t.url}/git/${repo}/blob/main/Dockerfile`);
    const bin = await expectStatus(await req("GET", `/${sourceId}/file?path=assets/logo.bin`), 200);
    expect(bin).toMatchObject({ exists: true, binary: true, text: "", base64: Buffer.from([0, 1, 2, 0, 255]).toString("base64") });
    expect((await expectStatus(await req("GET", `/${sourceId}/file?path=late.bin`), 200)).binary).toBe(true);
    expect(await expectStatus(await req("GET", `/${sourceId}/file?path=nope.txt`), 200)).toMatchObject({ exists: false, sha: "", text: "", base64: null });
    await expectStatus(await req("GET", `/${sourceId}/file?path=assets`), 422);
    await expectStatus(await req("GET", `/${sourceId}/file?path=../x`), 422);
    await expectStatus(await req("GET", `/${sourceId}/file?path=.git/HEAD`), 422);
    await expectStatus(await req("GET", `/${sourceId}/file?path=Dockerfile&ref=nope`), 404);
    await expectStatus(await req("GET", `/${sourceId}/file?path=big.txt`), 413);
    await expectStatus(await req("GET", `/${sourceId}/file?path=huge.bin`), 413);
    // A web link to the file redirects to the console's studio.
    const web = await fetch(text.html_url, { redirect: "manual" });
    expect(web.status).toBe(302);
    expect(web.headers.get("location")).toBe(`/projects/${slug}/sources?repo=${encodeURIComponent(repo)}&ref=main&path=Dockerfile`);
  });

  test("the tree is cut past 100 000 entries, and a save of an unlisted path is refused", async () => {
    const created = await expectStatus(await req("POST", "", { repo: `${slug}/wide` }), 201);
    // 100 001 entries sharing one blob, written with plumbing.
    const gitDir = bareDir(t, `${slug}/wide`);
    const hash = Bun.spawn(["git", `--git-dir=${gitDir}`, "hash-object", "-w", "--stdin"], { stdin: Buffer.from("same\n"), stdout: "pipe" });
    const sha = (await new Response(hash.stdout).text()).trim();
    const lines = Array.from({ length: 100_001 }, (_, i) => `100644 ${sha}\tf/${String(i).padStart(6, "0")}.txt`).join("\n") + "\n";
    const index = path.join(workDir(), "index");
    const env = { ...process.env, GIT_INDEX_FILE: index } as Record<string, string>;
    const upd = Bun.spawn(["git", `--git-dir=${gitDir}`, "update-index", "--add", "--index-info"], { stdin: Buffer.from(lines), env });
    expect(await upd.exited).toBe(0);
    const wt = Bun.spawn(["git", `--git-dir=${gitDir}`, "write-tree"], { env, stdout: "pipe" });
    const tree = (await new Response(wt.stdout).text()).trim();
    const ct = Bun.spawn(["git", `--git-dir=${gitDir}`, "commit-tree", tree, "-m", "wide"], { env: { ...env, GIT_AUTHOR_NAME: "a", GIT_AUTHOR_EMAIL: "a@b", GIT_COMMITTER_NAME: "a", GIT_COMMITTER_EMAIL: "a@b" }, stdout: "pipe" });
    const commit = (await new Response(ct.stdout).text()).trim();
    expect(await Bun.spawn(["git", `--git-dir=${gitDir}`, "update-ref", "refs/heads/main", commit]).exited).toBe(0);

    const res = await expectStatus(await t.request("GET", api(`/${created.id}/tree`), { token: session }), 200);
    expect(res.truncated).toBe(true);
    expect(res.entries).toHaveLength(100_000);
    expect(res.entries[0]).toEqual({ path: "f", sha: expect.any(String), size: null, type: "tree" });
    const refused = await expectStatus(await t.request("POST", api(`/${created.id}/saves`), { token: session, body: { message: "m", changes: [{ path: "f/100000.txt", text: "x", base_sha: sha }] } }), 422);
    expect(refused.message).toContain("100000");
  });

  test("an empty repository has an empty tree; unknown refs are 404", async () => {
    const created = await expectStatus(await req("POST", "", { repo: `${slug}/empty` }), 201);
    const res = await expectStatus(await req("GET", `/${created.id}/tree`), 200);
    expect(res).toEqual({ default_branch: "main", entries: [], ref: "main", refs: [{ name: "main", pull_number: null, save_id: null }], sha: "", truncated: false });
    await expectStatus(await req("GET", `/${created.id}/tree?ref=nope`), 404);
    await expectStatus(await req("GET", `/${created.id}/file?path=a.txt&ref=nope`), 404);
  });
});
