/**
 * The resolver of repository-controlled paths: links that stay inside the tree are followed (one
 * hop or several, relative, through "..") and everything that leads out is refused naming the
 * link: absolute targets (/etc, /proc, the data dir), ".." above the root, a link in the middle
 * of a path, loops. Reads open the last component without following it. Runs as root, as CI does.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync, renameSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { tempDir } from "../../test/harness";
import { PathRefused, readInside, resolveInside, resolveInsideOrNull } from "./inside";

let base: string;
let repo: string;
let secret: string;

beforeAll(() => {
  base = tempDir("ops-inside-");
  repo = path.join(base, "repo");
  secret = path.join(base, "root-only");
  mkdirSync(secret, { mode: 0o700 });
  writeFileSync(path.join(secret, "key"), "the data dir's key\n", { mode: 0o600 });
  chmodSync(secret, 0o700);
  for (const d of ["app/dist", "sub/deep", "modules/a/locales"]) mkdirSync(path.join(repo, d), { recursive: true });
  writeFileSync(path.join(repo, "app/Dockerfile"), "FROM scratch\n");
  writeFileSync(path.join(repo, "modules/a/locales/en.json"), '{"hi":"hello"}\n');
  // Links that stay inside the checkout.
  symlinkSync("app", path.join(repo, "inner"));
  symlinkSync("../app/dist", path.join(repo, "sub/out"));
  symlinkSync("inner", path.join(repo, "twice"));
  symlinkSync("sub/deep/..", path.join(repo, "updown"));
  // Links that lead out.
  symlinkSync(secret, path.join(repo, "data"));
  symlinkSync("/etc", path.join(repo, "etc"));
  symlinkSync("/proc", path.join(repo, "proc"));
  symlinkSync("../root-only", path.join(repo, "up"));
  symlinkSync("sub/../../root-only", path.join(repo, "sneaky"));
  symlinkSync("escape", path.join(repo, "via"));
  symlinkSync("..", path.join(repo, "escape"));
  symlinkSync("loop-b", path.join(repo, "loop-a"));
  symlinkSync("loop-a", path.join(repo, "loop-b"));
  symlinkSync("../../../../etc/passwd", path.join(repo, "modules/a/locales/de.json"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(PathRefused);
    return (e as Error).message;
  }
  throw new Error("not refused");
};

describe("resolveInside", () => {
  test("plain paths and links that stay inside resolve to the real path inside the tree", () => {
    expect(resolveInside(repo, ".", { what: "the build context", want: "directory" }).rel).toBe(".");
    expect(resolveInside(repo, "app/dist/", { what: "the output" }).rel).toBe("app/dist");
    expect(resolveInside(repo, "inner", { what: "the build context" })).toMatchObject({ rel: "app", abs: path.join(repo, "app") });
    expect(resolveInside(repo, "sub/out", { what: "the output" }).rel).toBe("app/dist");
    expect(resolveInside(repo, "twice/Dockerfile", { what: "the Dockerfile", want: "file" }).rel).toBe("app/Dockerfile");
    expect(resolveInside(repo, "updown/deep", { what: "the build context" }).rel).toBe("sub/deep");
    expect(resolveInside(repo, "sub/deep/../../app", { what: "the build context" }).rel).toBe("app");
  });

  test("a link to the data dir, /etc or /proc, at the end or in the middle of a path, is refused naming the link", () => {
    expect(refusal(() => resolveInside(repo, "data", { what: "the build context" }))).toBe(`the build context "data" leads outside the repository: the symbolic link "data" points to the absolute path ${JSON.stringify(secret)}`);
    expect(refusal(() => resolveInside(repo, "data/key", { what: "the build context" }))).toContain('the symbolic link "data" points to the absolute path');
    expect(refusal(() => resolveInside(repo, "etc/ssl", { what: "the output" }))).toBe('the output "etc/ssl" leads outside the repository: the symbolic link "etc" points to the absolute path "/etc"');
    expect(refusal(() => resolveInside(repo, "proc/self", { what: "the build context" }))).toContain('"proc" points to the absolute path "/proc"');
  });

  test("relative links and '..' that climb above the root are refused, however many hops it takes", () => {
    expect(refusal(() => resolveInside(repo, "up", { what: "the build context" }))).toBe('the build context "up" leads outside the repository: the symbolic link "up" points to "../root-only"');
    expect(refusal(() => resolveInside(repo, "sneaky/key", { what: "the build context" }))).toContain('the symbolic link "sneaky" points to "sub/../../root-only"');
    expect(refusal(() => resolveInside(repo, "via/root-only", { what: "the build context" }))).toContain('the symbolic link "escape" points to ".."');
    expect(refusal(() => resolveInside(repo, "../root-only", { what: "the build context" }))).toBe('the build context "../root-only" leads outside the repository: through ".."');
    expect(refusal(() => resolveInside(repo, "/etc", { what: "the build context" }))).toBe('the build context "/etc" must be a relative path inside the repository');
    expect(refusal(() => resolveInside(repo, "loop-a", { what: "the build context" }))).toContain("more than 40 symbolic links");
  });

  test("what the path must be: missing, not a directory, not a regular file", () => {
    expect(resolveInsideOrNull(repo, "nope/deeper", { what: "the output" })).toBeNull();
    expect(refusal(() => resolveInside(repo, "nope", { what: "the output", tree: "the build context" }))).toBe('the output "nope" does not exist in the build context');
    expect(refusal(() => resolveInside(repo, "app/Dockerfile", { what: "the output", want: "directory" }))).toBe('the output "app/Dockerfile" is not a directory');
    expect(refusal(() => resolveInside(repo, "app", { what: "the Dockerfile", want: "file" }))).toBe('the Dockerfile "app" is not a regular file');
    expect(refusal(() => resolveInside(repo, "app/Dockerfile/x", { what: "the output" }))).toContain('"app/Dockerfile" is not a directory');
  });
});

describe("readInside", () => {
  test("reads a regular file inside; a link out is refused before anything is opened", () => {
    expect(readInside(repo, "modules/a/locales/en.json", { what: "the locale file", maxBytes: 1024 })!.toString()).toBe('{"hi":"hello"}\n');
    expect(readInside(repo, "modules/a/locales/fr.json", { what: "the locale file", maxBytes: 1024 })).toBeNull();
    expect(refusal(() => readInside(repo, "modules/a/locales/de.json", { what: "the locale file", maxBytes: 1024 }))).toContain('the symbolic link "modules/a/locales/de.json" points to "../../../../etc/passwd"');
    expect(refusal(() => readInside(repo, "modules/a/locales/en.json", { what: "the locale file", maxBytes: 4 }))).toBe('the locale file "modules/a/locales/en.json" is larger than 4 bytes');
  });

  test("a FIFO is refused, never opened (ops would wait on it forever)", () => {
    const fifo = path.join(repo, "fifo");
    execFileSync("mkfifo", [fifo]);
    expect(refusal(() => readInside(repo, "fifo", { what: "the lockfile", maxBytes: 1024 }))).toBe('the lockfile "fifo" is not a regular file');
  });

  test("a file swapped for a link after it was resolved is not followed", () => {
    const dir = tempDir("ops-inside-swap-");
    try {
      writeFileSync(path.join(dir, "out.tgz"), "packed");
      symlinkSync(path.join(secret, "key"), path.join(dir, "link"));
      // What a sandboxed `postpack` could do between ops's check and its read: the same name, now a link.
      const found = resolveInside(dir, "out.tgz", { what: "npm pack's tarball", want: "file" });
      renameSync(path.join(dir, "link"), path.join(dir, "out.tgz"));
      expect(found.abs).toBe(path.join(dir, "out.tgz"));
      expect(refusal(() => readInside(dir, "out.tgz", { what: "npm pack's tarball", maxBytes: 1024 }))).toContain("points to the absolute path");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
