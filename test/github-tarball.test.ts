/**
 * Writing GitHub's commit archives into a build directory (codehost/github/tarball.ts): a good
 * archive lands with its modes and links; hostile ones — a `..` path, an absolute path, a write
 * through a symbolic link, a hard link, a second top directory, a `.git` directory — are refused
 * before anything is written outside the directory.
 */
import { describe, expect, test, setDefaultTimeout } from "bun:test";
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Header } from "tar";
import { OpsError } from "../src/core/errors";
import { createLogger } from "../src/core/log";
import { extractTarball } from "../src/adapters/codehost/github/tarball";

// Real git processes and servers on a shared machine: bun's preload timeout only reaches the first file.
setDefaultTimeout(120_000);

type Entry = { path: string; type?: "File" | "Directory" | "SymbolicLink" | "Link"; mode?: number; body?: string; linkpath?: string };

/** A gzip'd tar built block by block, so it can hold what no well-behaved tool writes. */
function tarGz(entries: Entry[]): Uint8Array {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? "");
    const h = new Header({ path: e.path, type: e.type ?? "File", mode: e.mode ?? 0o644, size: e.type === undefined || e.type === "File" ? body.length : 0, linkpath: e.linkpath, mtime: new Date(0), uid: 0, gid: 0 });
    const block = Buffer.alloc(512);
    h.encode(block, 0);
    blocks.push(block);
    if (body.length > 0 && (e.type ?? "File") === "File") {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return Bun.gzipSync(Buffer.concat(blocks));
}

const log = createLogger("error", () => {});
const streamOf = (bytes: Uint8Array) => new Response(bytes as Uint8Array<ArrayBuffer>).body!;

async function extract(entries: Entry[]): Promise<{ dir: string; outside: string; error: OpsError | null }> {
  const parent = mkdtempSync(path.join(tmpdir(), "gh-tar-"));
  const dir = path.join(parent, "work");
  let error: OpsError | null = null;
  try {
    await extractTarball(streamOf(tarGz(entries)), dir, "acme/shop@abc", log);
  } catch (e) {
    if (!(e instanceof OpsError)) throw e;
    error = e;
  }
  return { dir, outside: parent, error };
}

describe("GitHub archive extraction", () => {
  test("files with their executable bit, directories and symbolic links under the top directory", async () => {
    const { dir, outside, error } = await extract([
      { path: "acme-shop-abc1234/", type: "Directory", mode: 0o775 },
      { path: "acme-shop-abc1234/README.md", body: "# hi\n", mode: 0o664 },
      { path: "acme-shop-abc1234/bin/run", body: "#!/bin/sh\n", mode: 0o775 },
      { path: "acme-shop-abc1234/docs/link", type: "SymbolicLink", linkpath: "../README.md" },
    ]);
    try {
      expect(error).toBeNull();
      expect(readFileSync(path.join(dir, "README.md"), "utf8")).toBe("# hi\n");
      expect(statSync(path.join(dir, "README.md")).mode & 0o777).toBe(0o644);
      expect(statSync(path.join(dir, "bin/run")).mode & 0o777).toBe(0o755);
      expect(readlinkSync(path.join(dir, "docs/link"))).toBe("../README.md");
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  const hostile: Array<[string, Entry[], RegExp]> = [
    ["a .. component", [{ path: "top/../../escaped.txt", body: "x" }], /"\.\."/],
    ["an absolute path", [{ path: "/tmp/escaped-abs.txt", body: "x" }], /absolute/],
    ["a write through a symbolic link", [{ path: "top/out", type: "SymbolicLink", linkpath: ".." }, { path: "top/out/escaped.txt", body: "x" }], /symbolic link/],
    ["a hard link", [{ path: "top/hard", type: "Link", linkpath: "top/other" }], /type Link/],
    ["a second top directory", [{ path: "top/a.txt", body: "a" }, { path: "other/escaped.txt", body: "x" }], /outside the archive's top directory/],
    ["a .git directory", [{ path: "top/.git/hooks/post-checkout", body: "x" }], /\.git/],
  ];
  for (const [what, entries, message] of hostile) {
    test(`refuses ${what}, writing nothing outside`, async () => {
      const { outside, error } = await extract(entries);
      try {
        expect(error?.status).toBe(502);
        expect(error?.message).toMatch(message);
        expect(existsSync(path.join(outside, "escaped.txt"))).toBe(false);
        expect(existsSync("/tmp/escaped-abs.txt")).toBe(false);
        expect(existsSync(path.join(outside, "work", "out", "escaped.txt")) && !lstatSync(path.join(outside, "work", "out")).isSymbolicLink()).toBe(false);
      } finally {
        rmSync(outside, { recursive: true, force: true });
      }
    });
  }

  test("a file that is not a gzip'd tar is refused", async () => {
    const parent = mkdtempSync(path.join(tmpdir(), "gh-tar-"));
    try {
      const e = await extractTarball(streamOf(new TextEncoder().encode("<html>not an archive</html>")), path.join(parent, "w"), "acme/shop@abc", log).catch((x) => x);
      expect(e).toBeInstanceOf(OpsError);
      expect((e as OpsError).status).toBe(502);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
