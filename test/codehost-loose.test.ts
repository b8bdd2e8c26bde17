/**
 * The built-in host's loose-object reader (src/adapters/codehost/builtin/loose.ts) against git:
 * the same repository once with its objects loose (as a small push leaves them) and once packed
 * (where the reader declines and reads.ts asks git) must give the same commit metadata and the
 * same files — names with spaces and non-ASCII text, executables, symlinks, directories, a
 * submodule, a file over the size limit, a merge, a signed-style multi-line header — and the
 * reader must decline what it cannot answer exactly (packed objects, abbreviations, tags,
 * another message encoding).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, rmSync, symlinkSync, writeFileSync, chmodSync } from "node:fs";
import path from "node:path";
import { tempDir } from "./harness";
import { commitInfo, readFile } from "../src/adapters/codehost/builtin/reads";
import { looseCommitInfo, looseFileAt } from "../src/adapters/codehost/builtin/loose";
import { gitEnv } from "../src/adapters/codehost/builtin/git";

let root: string;
let loose: string;
let packed: string;
const shas: Record<string, string> = {};
const env = () => gitEnv({ root, maxPushBytes: 1 << 30 });

async function run(cwd: string, args: string[], input?: string | Buffer, extra: Record<string, string> = {}): Promise<string> {
  const proc = Bun.spawn(["git", ...args], { cwd, env: { ...env(), GIT_AUTHOR_NAME: "Zoë Q. Author  ", GIT_AUTHOR_EMAIL: "zoe@example.test", GIT_COMMITTER_NAME: "Com Mitter", GIT_COMMITTER_EMAIL: "c@example.test", GIT_AUTHOR_DATE: "1700000000 +0130", GIT_COMMITTER_DATE: "1700000123 -0700", ...extra }, stdin: input === undefined ? "ignore" : typeof input === "string" ? Buffer.from(input) : input, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`git ${args.join(" ")}: ${err}`);
  return out.trim();
}

beforeAll(async () => {
  root = tempDir("ops-loose-");
  const work = path.join(root, "work");
  mkdirSync(path.join(work, "dir/sub dir"), { recursive: true });
  await run(root, ["init", "-q", "-b", "main", work]);
  writeFileSync(path.join(work, "ops.toml"), '[services.web]\nbuild = ["npm ci"]\nstart = "node server.js"\n');
  writeFileSync(path.join(work, "dir/sub dir/naïve file.txt"), "ünïcödé\n");
  writeFileSync(path.join(work, "run.sh"), "#!/bin/sh\necho hi\n");
  chmodSync(path.join(work, "run.sh"), 0o755);
  writeFileSync(path.join(work, "big.bin"), Buffer.alloc(5000, 7));
  symlinkSync("ops.toml", path.join(work, "link"));
  await run(work, ["add", "-A"]);
  await run(work, ["update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,vendor/lib"]);
  await run(work, ["commit", "-q", "-m", "First: ünïcödé subject  \n\nBody line.\n"]);
  shas.first = await run(work, ["rev-parse", "HEAD"]);
  await run(work, ["checkout", "-q", "-b", "side"]);
  writeFileSync(path.join(work, "side.txt"), "side\n");
  await run(work, ["add", "-A"]);
  await run(work, ["commit", "-q", "-m", "Side"]);
  await run(work, ["checkout", "-q", "main"]);
  writeFileSync(path.join(work, "main.txt"), "main\n");
  await run(work, ["add", "-A"]);
  await run(work, ["commit", "-q", "-m", "Main"]);
  await run(work, ["merge", "-q", "--no-ff", "-m", "Merge side", "side"]);
  shas.merge = await run(work, ["rev-parse", "HEAD"]);
  // A commit with a multi-line header between the committer and the message, as signed commits have.
  const tree = await run(work, ["rev-parse", "HEAD^{tree}"]);
  const raw = `tree ${tree}\nparent ${shas.merge}\nauthor Sig Ner <s@example.test> 1700000200 +0000\ncommitter Sig Ner <s@example.test> 1700000300 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nSigned-style\n\nwith body\n`;
  shas.signed = await run(work, ["hash-object", "-t", "commit", "-w", "--stdin"], raw);
  const latin1 = `tree ${tree}\nparent ${shas.merge}\nauthor L Atin <l@example.test> 1700000400 +0000\ncommitter L Atin <l@example.test> 1700000400 +0000\nencoding ISO-8859-1\n\nCaf\xe9\n`;
  shas.latin1 = await run(work, ["hash-object", "-t", "commit", "-w", "--stdin", "--literally"], Buffer.from(latin1, "latin1"));
  await run(work, ["tag", "-a", "-m", "tag", "v1", shas.first]);
  shas.tag = await run(work, ["rev-parse", "v1"]);
  loose = path.join(work, ".git");
  packed = path.join(root, "packed.git");
  await run(root, ["clone", "-q", "--bare", "--no-local", work, packed]);
  await run(packed, ["--git-dir", packed, "fetch", "-q", loose, `${shas.signed}:refs/heads/signed`]);
  await run(packed, ["--git-dir", packed, "repack", "-a", "-d", "-q"]);
  await run(packed, ["--git-dir", packed, "prune-packed"]);
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("loose objects", () => {
  test("commit metadata read from loose objects is git's, for plain, merge and signed-style commits", async () => {
    for (const name of ["first", "merge", "signed"]) {
      const fast = looseCommitInfo(loose, shas[name]!);
      expect(fast).not.toBeNull();
      expect(looseCommitInfo(packed, shas[name]!)).toBeNull(); // packed: git answers
      expect(fast).toEqual((await commitInfo(env(), packed, shas[name]!))!);
    }
    expect(looseCommitInfo(loose, shas.first!)).toMatchObject({ author: "Zoë Q. Author", message: "First: ünïcödé subject", committedAt: 1700000123000, parents: [] });
    expect(looseCommitInfo(loose, shas.merge!)!.parents).toHaveLength(2);
  });

  test("files read from loose objects are git's: files, executables, symlinks, directories, submodules, missing and oversized", async () => {
    const paths = ["ops.toml", "run.sh", "link", "dir", "dir/sub dir", "dir/sub dir/naïve file.txt", "vendor/lib", "vendor", "vendor/lib/x", "nope.txt", "ops.toml/x", "big.bin", "main.txt", "side.txt"];
    for (const p of paths) {
      const fast = looseFileAt(loose, shas.merge!, p, 4096);
      expect(fast).not.toBeNull();
      expect(looseFileAt(packed, shas.merge!, p, 4096)).toBeNull();
      expect({ p, ...fast }).toEqual({ p, ...(await readFile(env(), packed, shas.merge!, p, 4096)) });
    }
    expect(looseFileAt(loose, shas.merge!, "big.bin", 4096)).toMatchObject({ kind: "file", size: 5000 });
    expect(looseFileAt(loose, shas.merge!, "run.sh", 4096)).toMatchObject({ kind: "file", mode: "100755" });
    expect(looseFileAt(loose, shas.merge!, "link", 4096)).toMatchObject({ kind: "file", mode: "120000" });
  });

  test("what the reader cannot answer exactly is left to git", async () => {
    expect(looseCommitInfo(loose, shas.first!.slice(0, 12))).toBeNull(); // abbreviated
    expect(looseCommitInfo(loose, shas.tag!)).toBeNull(); // a tag to peel
    expect(looseCommitInfo(loose, shas.latin1!)).toBeNull(); // another encoding: git re-encodes
    expect((await commitInfo(env(), loose, shas.latin1!))!.message).toBe("Café");
    expect(looseFileAt(loose, shas.merge!, "dir/", 4096)).toBeNull();
    expect(looseFileAt(loose, shas.merge!, "./ops.toml", 4096)).toBeNull();
    expect(looseFileAt(loose, shas.tag!, "ops.toml", 4096)).toBeNull();
  });
});
