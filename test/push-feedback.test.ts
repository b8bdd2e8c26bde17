/**
 * `remote:` lines on every push (docs/decisions/0430): the real git client pushing over `/git/`
 * prints one line per build the push queued, with the build's console URL, or why nothing was
 * queued; with `-q`, with protocol v0, v1 and v2 clients; a subscriber that fails still leaves a
 * clean push report. Plus the packet follower itself: any split of receive-pack's answer gives the
 * same bytes, hostile lines come out as single printable packets, and a bare report (a client
 * without side-band: git 2.x always asks for it, so no real client here can), a cut answer or what
 * is not pkt-lines passes untouched.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { eq } from "drizzle-orm";
import { expectStatus, type TestApp } from "./harness";
import { buildsApp, buildWorld, SAMPLE_APP, type BuildWorld } from "./builds-fixtures";
import { cloneUrl, runGit, type GitRun } from "./sources-git-helpers";
import { makePerson, makeRole, mintToken } from "./fixtures";
import { codeHostFor } from "../src/adapters/codehost";
import { PUSH } from "../src/domains/sources/service";
import { builds } from "../src/domains/builds/tables";
import { runScan } from "../src/domains/sources/scans";
import { MAX_PUSH_LINES, ReceivePackAnswer, sidebandLines } from "../src/adapters/codehost/builtin/sideband";

setDefaultTimeout(120_000);

let t: TestApp;
beforeAll(async () => {
  t = await buildsApp();
});
afterAll(() => t.close());

/** `git push` from the world's working copy (stderr is where git prints `remote:` lines). */
async function push(w: BuildWorld, args: string[], config: string[] = []): Promise<GitRun> {
  const r = await runGit(w.local.dir, [...config.flatMap((c) => ["-c", c]), "push", ...args]);
  if (r.code !== 0) throw new Error(`git push ${args.join(" ")} exited ${r.code}\n${r.stderr}`);
  return r;
}

/** The `remote:` lines git printed, without git's padding. */
function remoteLines(r: GitRun): string[] {
  return r.stderr
    .split("\n")
    .filter((l) => l.startsWith("remote: "))
    .map((l) => l.slice("remote: ".length).trimEnd());
}

/** The project's build rows, every environment and kind. */
async function buildsOf(w: BuildWorld): Promise<Array<{ id: number; service: string; environment: string; kind: string }>> {
  return t.core.db.select().from(builds).where(eq(builds.project, w.ctx.slug)).all();
}

const url = (w: BuildWorld, id: number) => `${t.core.config.publicUrl}/projects/${w.ctx.slug}/builds/${id}`;

describe("git push tells what it built", () => {
  let w: BuildWorld;
  beforeAll(async () => {
    w = await buildWorld(t, { environments: ["production", "staging"] });
    await w.local.commit(SAMPLE_APP, "The sample app");
  });
  afterAll(() => w.local.remove());

  test("a push to main: one line per service and environment with the build's console URL, before git's own report", async () => {
    const r = await push(w, ["origin", "main"]);
    const builds = await buildsOf(w);
    expect(builds.length).toBe(2);
    const lines = remoteLines(r);
    for (const b of builds) expect(lines).toContain(`build #${b.id} for web (${b.environment}): ${url(w, b.id)}`);
    expect(lines.length).toBe(2);
    // The report is git's as ever: the ref line follows the remote lines.
    expect(r.stderr.indexOf("remote: build #")).toBeLessThan(r.stderr.indexOf(" main -> main"));
    expect(r.stderr).not.toContain("error");
  });

  test("with -q, and with protocol v0, v1 and v2 clients, the lines are the same", async () => {
    const runs: Array<[string[], string[]]> = [[["-q"], []], [[], ["protocol.version=0"]], [[], ["protocol.version=1"]], [["-q"], ["protocol.version=2"]]];
    for (const [args, config] of runs) {
      await w.local.commit({ "note.txt": `${args.join(" ")} ${config.join(" ")}\n` }, `Push with ${args.join(" ")} ${config.join(" ")}`);
      const before = new Set((await buildsOf(w)).map((b) => b.id));
      const r = await push(w, [...args, "origin", "main"], config);
      const fresh = (await buildsOf(w)).filter((b) => !before.has(b.id));
      expect(fresh.length).toBe(2);
      expect(remoteLines(r).sort()).toEqual(fresh.map((b) => `build #${b.id} for web (${b.environment}): ${url(w, b.id)}`).sort());
      if (args.includes("-q")) expect(r.stderr.split("\n").filter((l) => l && !l.startsWith("remote: "))).toEqual([]);
    }
  });

  test("a branch no service follows says which branches they follow; a deleted branch says so", async () => {
    await w.local.commit({ "feature.txt": "x\n" }, "A feature", "feature");
    const before = (await buildsOf(w)).length;
    const r = await push(w, ["origin", "feature"]);
    expect(remoteLines(r)).toEqual(["nothing builds from feature: no service follows it (web (production) follows main, web (staging) follows main)"]);
    expect((await buildsOf(w)).length).toBe(before);
    expect(remoteLines(await push(w, ["origin", ":feature"]))).toEqual(["feature was deleted: nothing to build"]);
  });

  test("a push of many branches nobody follows: a line each (up to the cap), the environments' branches asked once per push", async () => {
    const host = codeHostFor(t.core);
    const resolveRef = host.resolveRef.bind(host);
    const asked: string[] = [];
    host.resolveRef = (ref, name) => {
      asked.push(name);
      return resolveRef(ref, name);
    };
    try {
      await w.local.commit({ "many.txt": "x\n" }, "Many", "many");
      for (let i = 0; i < 60; i++) await runGit(w.local.dir, ["branch", "-f", `many-${i}`, "many"]);
      const r = await push(w, ["origin", "refs/heads/many-*:refs/heads/many-*"]);
      const lines = remoteLines(r);
      expect(lines.length).toBe(MAX_PUSH_LINES);
      expect(lines[0]).toStartWith("nothing builds from many-");
      expect(lines.at(-1)).toBe(`… and ${60 - MAX_PUSH_LINES + 1} more (the console's Builds page lists every build)`);
      expect(asked.sort()).toEqual(["refs/heads/production", "refs/heads/staging"]);
    } finally {
      host.resolveRef = resolveRef;
    }
  });

  test("a branch name that would repaint or reorder the terminal is printed inert", async () => {
    const name = "fix\u202egnp.exe";
    await w.local.commit({ "fix.txt": "x\n" }, "A fix", name);
    const r = await push(w, ["origin", name]);
    // git prints the name in its own ref line; what ops says does not carry the override.
    expect(remoteLines(r).join("\n")).not.toContain("\u202e");
    expect(remoteLines(r)[0]).toStartWith("nothing builds from fix?gnp.exe: no service follows it");
  });

  test("tags: a release tag on a commit with modules/ names its publish build; other tags say why not", async () => {
    await w.local.commit({ "modules/alpha/README.md": "alpha\n" }, "A module");
    await push(w, ["-q", "origin", "main"]);
    await runGit(w.local.dir, ["tag", "v1.0.0"]);
    await runGit(w.local.dir, ["tag", "nightly"]);
    const r = await push(w, ["origin", "v1.0.0", "nightly"]);
    const publish = (await buildsOf(w)).find((b) => b.kind === "publish");
    expect(publish).toBeDefined();
    expect(remoteLines(r).sort()).toEqual([`build #${publish!.id} publishes v1.0.0: ${url(w, publish!.id)}`, "tag nightly is not a release tag (v<semver>): nothing to publish"]);
  });

  test("a push partly refused (a release tag without packages.publish): git's report still names the refused ref, and the accepted branch's builds are told", async () => {
    const role = makeRole(t, w.ctx.slug, "coder", ["project.read", "sources.read", "sources.write", "sources.save"]);
    const coder = await makePerson(t, [{ role, project: w.ctx.slug }]);
    const token = mintToken(t, coder.principal, { role, project: w.ctx.slug });
    await w.local.commit({ "modules/beta/README.md": "beta\n" }, "Another module");
    await runGit(w.local.dir, ["tag", "v3.0.0"]);
    const before = new Set((await buildsOf(w)).map((b) => b.id));
    const r = await runGit(w.local.dir, ["push", cloneUrl(t.url, w.repo, token), "main", "v3.0.0"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/\[remote rejected\]\s+v3\.0\.0/);
    expect(r.stderr).toMatch(/\.\.[0-9a-f]+\s+main -> main/);
    expect(r.stderr).toContain("packages.publish");
    const fresh = (await buildsOf(w)).filter((b) => !before.has(b.id));
    expect(fresh.map((b) => b.kind)).toEqual(["image", "image"]);
    expect(remoteLines(r).filter((l) => l.startsWith("build #")).sort()).toEqual(fresh.map((b) => `build #${b.id} for web (${b.environment}): ${url(w, b.id)}`).sort());
  });

  test("a subscriber that fails: the push still lands with a clean report, the builds are still told, and the pusher hears of the failure", async () => {
    const offEvent = t.core.events.on(PUSH, () => {
      throw new Error("a subscriber broke");
    });
    const offHost = codeHostFor(t.core).onPush(() => {
      throw new Error("a host subscriber broke");
    });
    try {
      const sha = await w.local.commit({ "note.txt": "failing subscriber\n" }, "Push past a failing subscriber");
      const r = await push(w, ["origin", "main"]);
      const lines = remoteLines(r);
      expect(lines.filter((l) => l.startsWith("build #")).length).toBe(2);
      expect(lines).toContain("refs/heads/main: ops could not finish acting on this push (the server log says why); the ref is updated");
      expect(r.stderr).toContain(" main -> main");
      const remote = await runGit(w.local.dir, ["ls-remote", "origin", "refs/heads/main"]);
      expect(remote.stdout.split("\t")[0]).toBe(sha);
    } finally {
      offEvent();
      offHost();
    }
  });
});

describe("a repository with no service yet", () => {
  test("the first push says to run Scan, with the console's Sources page; no ops.toml says so; after a scan, a changed ops.toml says to scan again", async () => {
    const w = await buildWorld(t, { environments: [] });
    try {
      await w.local.commit(SAMPLE_APP, "The sample app");
      const scan = `${t.core.config.publicUrl}/projects/${w.ctx.slug}/sources`;
      expect(remoteLines(await push(w, ["origin", "main"]))).toEqual([`nothing builds from main: no service follows it yet (run Scan in the console: ${scan}; it creates web from the default branch's ops.toml)`]);
      await w.local.commit({ "ops.toml": null }, "No ops.toml");
      expect(remoteLines(await push(w, ["origin", "main"]))).toEqual([`nothing builds from main: no service follows it yet and this commit has no ops.toml (add one, then run Scan in the console: ${scan})`]);
      await w.local.commit({ "ops.toml": SAMPLE_APP["ops.toml"]! }, "ops.toml again");
      await push(w, ["-q", "origin", "main"]);
      const queued = await expectStatus<{ scan_id: number }>(await w.ctx.req("POST", "/sources/scan", { repo: w.repo }), 202);
      await runScan(t.core, queued.scan_id);
      // After the scan: the builds, and nothing about ops.toml while it is the one scanned.
      await w.local.commit({ "server.js": `${SAMPLE_APP["server.js"]}// v2\n` }, "Server v2");
      const built = remoteLines(await push(w, ["origin", "main"]));
      expect(built.length).toBeGreaterThan(0);
      expect(built.every((l) => /^build #\d+ for web \(\w+\): http/.test(l))).toBe(true);
      await w.local.commit({ "ops.toml": SAMPLE_APP["ops.toml"]!.replace("port = 3000", "port = 3001") }, "Another port");
      expect(remoteLines(await push(w, ["origin", "main"])).at(-1)).toBe(`ops.toml changed since the last scan: its services, steps and domains apply at the next Scan: ${scan}`);
    } finally {
      w.local.remove();
    }
  });
});

describe("a repository with no service yet, pushed many branches at once", () => {
  test("each branch gets its line; the commit's ops.toml is read once for the push", async () => {
    const w = await buildWorld(t, { environments: [] });
    const host = codeHostFor(t.core);
    const readFile = host.readFile.bind(host);
    const read: string[] = [];
    host.readFile = (repo, sha, file, opts) => {
      read.push(`${sha} ${file}`);
      return readFile(repo, sha, file, opts);
    };
    try {
      await w.local.commit(SAMPLE_APP, "The sample app");
      for (let i = 0; i < 20; i++) await runGit(w.local.dir, ["branch", "-f", `b-${i}`, "main"]);
      const sha = (await runGit(w.local.dir, ["rev-parse", "main"])).stdout.trim();
      const lines = remoteLines(await push(w, ["origin", "refs/heads/b-*:refs/heads/b-*"]));
      expect(lines.length).toBe(20);
      expect(lines.every((l) => /^nothing builds from b-\d+: no service follows it yet \(run Scan/.test(l))).toBe(true);
      expect(read.filter((r) => r === `${sha} ops.toml`).length).toBe(1);
    } finally {
      host.readFile = readFile;
      w.local.remove();
    }
  });
});

describe("the packet follower", () => {
  const enc = new TextEncoder();
  const pkt = (band: number, text: string) => {
    const body = enc.encode(text);
    const out = new Uint8Array(5 + body.length);
    out.set(enc.encode((5 + body.length).toString(16).padStart(4, "0")));
    out[4] = band;
    out.set(body, 5);
    return out;
  };
  const join = (...parts: Uint8Array[]) => new Uint8Array(parts.flatMap((p) => [...p]));
  const answer = join(pkt(2, "Resolving deltas: 100%\n"), pkt(1, "000eunpack ok\n0017ok refs/heads/main\n0000"), enc.encode("0000"));

  function run(chunks: Uint8Array[], lines: string[]): Uint8Array {
    const a = new ReceivePackAnswer();
    return join(...chunks.map((c) => a.feed(c)), a.end(lines));
  }

  test("split anywhere, the answer comes out whole, the lines go just before the final flush", () => {
    const expected = join(answer.subarray(0, answer.length - 4), sidebandLines(["build #1 for web (production): http://x/"]), enc.encode("0000"));
    for (let i = 0; i <= answer.length; i++) {
      for (const j of [i, Math.min(answer.length, i + 1), Math.min(answer.length, i + 3)]) {
        const out = run([answer.subarray(0, i), answer.subarray(i, j), answer.subarray(j)], ["build #1 for web (production): http://x/"]);
        expect(Buffer.from(out).toString("latin1")).toBe(Buffer.from(expected).toString("latin1"));
      }
    }
    expect(run([answer], [])).toEqual(answer);
  });

  test("no side-band, a cut answer or bytes that are not pkt-lines pass untouched and get no lines", () => {
    const bare = enc.encode("000eunpack ok\n0017ok refs/heads/main\n0000");
    expect(run([bare], ["x"])).toEqual(bare);
    const cut = answer.subarray(0, answer.length - 6);
    expect(run([cut], ["x"])).toEqual(cut);
    const junk = enc.encode("HTTP/1.1 oops\n0000");
    expect(run([junk], ["x"])).toEqual(junk);
  });

  test("hostile lines: control characters and bidi overrides made inert, long lines cut, many lines counted; every packet within side-band's 1000 bytes", () => {
    const lines = ["\u001b[2J\rwiped \u202eevil\u2066", "é".repeat(3000), ...Array.from({ length: 200 }, (_, i) => `line ${i}`)];
    const bytes = sidebandLines(lines);
    const texts: string[] = [];
    for (let p = 0; p < bytes.length; ) {
      const len = Number.parseInt(Buffer.from(bytes.subarray(p, p + 4)).toString("latin1"), 16);
      expect(len).toBeLessThanOrEqual(1000);
      expect(bytes[p + 4]).toBe(2);
      texts.push(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(p + 5, p + len)));
      p += len;
    }
    expect(texts.length).toBe(MAX_PUSH_LINES);
    expect(texts[0]).toBe("?[2J?wiped ?evil?\n");
    expect(texts[1]!.endsWith("…\n")).toBe(true);
    for (const text of texts) expect(/[\u0000-\u0009\u000b-\u001f\u202e]/.test(text)).toBe(false);
    expect(texts.at(-1)).toBe(`… and ${lines.length - MAX_PUSH_LINES + 1} more (the console's Builds page lists every build)\n`);
  });
});
