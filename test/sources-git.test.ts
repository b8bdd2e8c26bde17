/**
 * The built-in git host with the real `git` CLI, as a user drives it: connect a source, clone it
 * over `/git/` with a token, commit, push, and see `last_event_at` move and the push event fire;
 * pushes without `sources.save` and clones of another project's repository are refused; both
 * protocol versions; anonymous requests are challenged; oversized pushes are refused with a
 * message git prints.
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { makePerson, makeProject, makeRole, mintToken } from "./fixtures";
import { PUSH, type PushEvent } from "../src/domains/sources/service";
import { cloneUrl, git, runGit, workDir } from "./sources-git-helpers";

// Real git processes and servers on a shared machine: bun's preload timeout only reaches the first file.
setDefaultTimeout(120_000);

let t: TestApp;
let slug: string;
let other: string;
let dev: string;
let viewer: string;
let outsider: string;
let session: string;
const pushes: PushEvent[] = [];

beforeAll(async () => {
  t = await createTestApp();
  slug = makeProject(t).slug;
  other = makeProject(t).slug;
  const d = await makePerson(t, [{ role: "developer", project: slug }]);
  session = d.session;
  dev = mintToken(t, d.principal, { role: "developer", project: slug });
  const v = await makePerson(t, [{ role: "viewer", project: slug }]);
  viewer = mintToken(t, v.principal, { role: "viewer", project: slug });
  const o = await makePerson(t, [{ role: "developer", project: other }]);
  outsider = mintToken(t, o.principal, { role: "developer", project: other });
  t.core.events.on(PUSH, (e) => {
    pushes.push(e);
  });
});

afterAll(async () => {
  await t?.close();
});

describe("built-in git host over smart HTTP", () => {
  test("connect, clone with a token, commit, push: last_event_at moves and the push event fires", async () => {
    const created = await expectStatus(await t.request("POST", `/api/v1/projects/${slug}/sources`, { token: session, body: { repo: `${slug}/app` } }), 201);
    expect(created.repo).toBe(`${slug}/app`);
    expect(created.default_branch).toBe("main");
    expect(created.installation_id).toBeGreaterThan(0);
    expect(created.last_event_at).toBeNull();

    const dir = workDir();
    await git(dir, "clone", cloneUrl(t.url, `${slug}/app`, dev), "app");
    const repo = path.join(dir, "app");
    writeFileSync(path.join(repo, "README.md"), "# app\n");
    await git(repo, "add", "README.md");
    await git(repo, "commit", "-m", "First commit");
    t.clock.advance(60_000);
    await git(repo, "push", "origin", "HEAD:main");
    const head = (await git(repo, "rev-parse", "HEAD")).trim();

    const list = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/sources`, { token: session }), 200);
    expect(list[0].last_event_at).toBe(new Date(t.clock.now()).toISOString());
    const event = pushes.find((p) => p.after === head);
    expect(event).toMatchObject({ project: slug, sourceId: created.id, repo: `${slug}/app`, ref: "refs/heads/main", before: "0".repeat(40), after: head });
    expect(event!.pusher).toBe(t.core.access.authenticate({ bearer: dev, basicPassword: null, basicUser: null, cookie: null, meta: { requestId: "x", ip: "", userAgent: "" } })!.actor);

    // The push is audited in the pusher's name, one row per ref.
    const audited = t.core.sqlite.query("SELECT actor, context FROM audit_log WHERE action = 'sources.save' AND outcome = 'allowed' AND context LIKE '%\"op\":\"push\"%'").all() as Array<{ actor: string; context: string }>;
    expect(audited.map((a) => JSON.parse(a.context))).toContainEqual(expect.objectContaining({ op: "push", ref: "refs/heads/main", after: head }));
    expect(audited[0]!.actor).toBe(event!.pusher);

    // A tag push is one more event, with the full ref.
    await git(repo, "tag", "v1.0.0");
    await git(repo, "push", "origin", "v1.0.0");
    expect(pushes.some((p) => p.ref === "refs/tags/v1.0.0" && p.after === head)).toBe(true);

    // A second clone over each protocol version sees the commit.
    for (const version of ["0", "2"]) {
      const d2 = workDir();
      await git(d2, "-c", `protocol.version=${version}`, "clone", cloneUrl(t.url, `${slug}/app`, viewer), "copy");
      expect((await git(path.join(d2, "copy"), "rev-parse", "HEAD")).trim()).toBe(head);
    }
  });

  test("a push of several MiB (sent chunked) streams through and lands", async () => {
    const dir = workDir();
    await git(dir, "clone", cloneUrl(t.url, `${slug}/app`, dev), "app");
    const repo = path.join(dir, "app");
    writeFileSync(path.join(repo, "blob.bin"), crypto.getRandomValues(new Uint8Array(3 * 1024 * 1024)).map((b, i) => (i % 7 === 0 ? b : b ^ i)));
    await git(repo, "add", "blob.bin");
    await git(repo, "commit", "-m", "A large file");
    await git(repo, "push", "origin", "HEAD:main");
    const head = (await git(repo, "rev-parse", "HEAD")).trim();
    const ls = await git(dir, "ls-remote", cloneUrl(t.url, `${slug}/app`, viewer), "refs/heads/main");
    expect(ls.split("\t")[0]).toBe(head);
  });

  test("a push without sources.save is refused with a message git prints, and audited", async () => {
    const dir = workDir();
    await git(dir, "clone", cloneUrl(t.url, `${slug}/app`, viewer), "app");
    const repo = path.join(dir, "app");
    writeFileSync(path.join(repo, "x.txt"), "x\n");
    await git(repo, "add", "x.txt");
    await git(repo, "commit", "-m", "Not allowed");
    const r = await runGit(repo, ["push", "origin", "HEAD:main"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("sources.save");
    const denied = t.core.sqlite.query("SELECT count(*) AS n FROM audit_log WHERE action = 'sources.save' AND outcome = 'denied'").get() as { n: number };
    expect(denied.n).toBeGreaterThan(0);
  });

  test("a release tag on a modules/ tree needs packages.publish: refused with git's message and audited; other refs pass", async () => {
    const role = makeRole(t, slug, "coder", ["project.read", "sources.read", "sources.write", "sources.save"]);
    const c = await makePerson(t, [{ role, project: slug }]);
    const coder = mintToken(t, c.principal, { role, project: slug });
    const dir = workDir();
    await git(dir, "clone", cloneUrl(t.url, `${slug}/app`, coder), "app");
    const repo = path.join(dir, "app");
    mkdirSync(path.join(repo, "modules", "alpha"), { recursive: true });
    writeFileSync(path.join(repo, "modules", "alpha", "package.json"), '{ "name": "alpha", "version": "0.0.0" }\n');
    await git(repo, "add", "-A");
    await git(repo, "commit", "-m", "A module");
    await git(repo, "push", "origin", "HEAD:main");
    const head = (await git(repo, "rev-parse", "HEAD")).trim();
    await git(repo, "tag", "v2.0.0");
    await git(repo, "tag", "-a", "v2.0.1", "-m", "annotated");
    await git(repo, "tag", "docs-2");
    const r = await runGit(repo, ["push", "origin", "v2.0.0", "v2.0.1", "docs-2"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("packages.publish");
    expect(r.stderr).toMatch(/\[remote rejected\]\s+v2\.0\.0/);
    expect(r.stderr).toMatch(/\[remote rejected\]\s+v2\.0\.1/);
    const ls = await git(dir, "ls-remote", cloneUrl(t.url, `${slug}/app`, viewer), "refs/tags/*");
    expect(ls).toContain("refs/tags/docs-2");
    expect(ls).not.toContain("refs/tags/v2.0.0");
    expect(pushes.some((p) => p.ref === "refs/tags/v2.0.0")).toBe(false);
    const denied = t.core.sqlite.query("SELECT context FROM audit_log WHERE action = 'packages.publish' AND outcome = 'denied'").all() as Array<{ context: string }>;
    expect(denied.map((d) => JSON.parse(d.context).ref).sort()).toEqual(["refs/tags/v2.0.0", "refs/tags/v2.0.1"]);
    // A developer (packages.publish included) pushes the same tag.
    await git(repo, "push", cloneUrl(t.url, `${slug}/app`, dev), "v2.0.0");
    expect(pushes.some((p) => p.ref === "refs/tags/v2.0.0" && p.after === head)).toBe(true);
  });

  test("a clone of another project's repository is refused", async () => {
    const dir = workDir();
    const r = await runGit(dir, ["clone", cloneUrl(t.url, `${slug}/app`, outsider), "app"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("403");
  });

  test("anonymous requests are challenged with Basic; a bearer works too", async () => {
    const anon = await fetch(`${t.url}/git/${slug}/app.git/info/refs?service=git-upload-pack`);
    expect(anon.status).toBe(401);
    expect(anon.headers.get("www-authenticate")).toBe('Basic realm="ops"');
    expect(await anon.text()).toContain("Sign in");
    const bearer = await fetch(`${t.url}/git/${slug}/app.git/info/refs?service=git-upload-pack`, { headers: { authorization: `Bearer ${viewer}` } });
    expect(bearer.status).toBe(200);
    expect(bearer.headers.get("content-type")).toBe("application/x-git-upload-pack-advertisement");
    await bearer.arrayBuffer();
    const missing = await fetch(`${t.url}/git/${slug}/nope.git/info/refs?service=git-upload-pack`, { headers: { authorization: `Bearer ${viewer}` } });
    expect(missing.status).toBe(404);
    const escape = await fetch(`${t.url}/git/${slug}/..%2F..%2Fkeys/info/refs?service=git-upload-pack`, { headers: { authorization: `Bearer ${viewer}` } });
    expect(escape.status).toBe(404);
  });
});

describe("push size limit", () => {
  test("a pack over OPS_GIT_MAX_PUSH_BYTES is refused with git's message and writes no ref", async () => {
    const small = await createTestApp({ env: { OPS_GIT_MAX_PUSH_BYTES: "4096" } });
    try {
      const p = makeProject(small).slug;
      const d = await makePerson(small, [{ role: "developer", project: p }]);
      const token = mintToken(small, d.principal, { role: "developer", project: p });
      await expectStatus(await small.request("POST", `/api/v1/projects/${p}/sources`, { token: d.session, body: { repo: `${p}/big` } }), 201);
      const dir = workDir();
      await git(dir, "init", "-q", "-b", "main", "big");
      const repo = path.join(dir, "big");
      writeFileSync(path.join(repo, "noise.bin"), crypto.getRandomValues(new Uint8Array(64 * 1024)));
      await git(repo, "add", ".");
      await git(repo, "commit", "-m", "big");
      const r = await runGit(repo, ["push", cloneUrl(small.url, `${p}/big`, token), "HEAD:main"]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("pack exceeds maximum allowed size");
      expect(r.stderr).toContain("[remote rejected]");
      const ls = await runGit(dir, ["ls-remote", cloneUrl(small.url, `${p}/big`, token)]);
      expect(ls.code).toBe(0);
      expect(ls.stdout.trim()).toBe("");
    } finally {
      await small.close();
    }
  });
});
