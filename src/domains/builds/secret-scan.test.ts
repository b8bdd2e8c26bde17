/**
 * The secret scan of an image's files: real ops secrets (checksum verified) but not look-alikes,
 * PEM private keys (also JSON-escaped) but not a parser's mention of the marker or a public key,
 * the issuer-prefixed tokens of the shared rule set but not the shapes that are only masked,
 * .env files with values but not templates, secrets across chunk boundaries and in binaries,
 * bounded reads of huge files, and reports that never carry the secret. Links are never followed,
 * also when a file or directory is swapped for one while the scan runs (ops scans as root).
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { generateKeyPairSync } from "node:crypto";
import path from "node:path";
import { tempDir } from "../../../test/harness";
import { newSecret } from "../../core/ids";
import { scanImageFiles, describeHits, isEnvFile } from "./secret-scan";

let root: string;
const token = newSecret("opst_");
const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
const keyPem = privateKey.export({ type: "pkcs8", format: "pem" }) as string;
const pubPem = publicKey.export({ type: "spki", format: "pem" }) as string;

function tree(name: string, files: Record<string, string | Uint8Array>): string {
  const dir = path.join(root, name);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), content);
  }
  return dir;
}

beforeAll(() => {
  root = tempDir("ops-scan-");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("scanImageFiles", () => {
  test("an ops token is found with its file and line; the report never holds the token", async () => {
    const dir = tree("token", { "src/config.js": `// settings\nconst url = "https://ops.example";\nconst key = "${token}";\n`, "README.md": "nothing here\n" });
    const res = await scanImageFiles(dir);
    expect(res.hits).toEqual([{ path: "src/config.js", line: 3, kind: "ops-token", what: "an ops API token (opst_)" }]);
    expect(res.files).toBe(2);
    expect(JSON.stringify(res)).not.toContain(token);
    expect(describeHits(res.hits)).toBe("src/config.js:3 contains an ops API token (opst_); secrets must not ship in an image");
    expect(describeHits(res.hits)).not.toContain(token.slice(5));
  });

  test("every ops prefix counts, glued to other text too; a look-alike without a valid checksum does not", async () => {
    const lookAlike = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");
    const dir = tree("prefixes", {
      "a.txt": newSecret("opss_"),
      "b.txt": newSecret("opsi_"),
      "c.txt": newSecret("opsd_"),
      "d.txt": `fake ${lookAlike}\nopst_${"x".repeat(49)}\n`,
      "e.txt": `glued${token}glued`,
    });
    const res = await scanImageFiles(dir);
    expect(res.hits.map((h) => [h.path, h.what])).toEqual([
      ["a.txt", "an ops session token (opss_)"],
      ["b.txt", "an ops install code (opsi_)"],
      ["c.txt", "an ops device code (opsd_)"],
      ["e.txt", "an ops API token (opst_)"],
    ]);
  });

  test("a token inside a binary and one across a chunk boundary are found", async () => {
    const bin = new Uint8Array(4096);
    bin.set(new TextEncoder().encode(token), 1000);
    const filler = "a".repeat(1024 * 1024 - 20) + "\n";
    const dir = tree("binary", { "app.bin": bin, "big.js": `${filler}line2 ${token}\n` });
    const res = await scanImageFiles(dir);
    expect(res.hits.map((h) => [h.path, h.line])).toEqual([
      ["app.bin", 1],
      ["big.js", 2],
    ]);
  });

  test("private keys: a PEM file and a JSON-escaped key are hits; a public key and a parser's mention are not", async () => {
    const dir = tree("keys", {
      "deploy/key.pem": `# key\n${keyPem}`,
      "sa.json": JSON.stringify({ type: "service_account", private_key: keyPem }),
      "public.pem": pubPem,
      "node_modules/pem-parser/index.js": 'if (text.startsWith("-----BEGIN PRIVATE KEY-----")) parse(text);\nconst END = "-----END PRIVATE KEY-----";\n',
    });
    const res = await scanImageFiles(dir);
    expect(res.hits).toEqual([
      { path: "deploy/key.pem", line: 2, kind: "private-key", what: "a private key (PRIVATE KEY)" },
      { path: "sa.json", line: 1, kind: "private-key", what: "a private key (PRIVATE KEY)" },
    ]);
  });

  test(".env files with values are hits; templates and empty ones are not", async () => {
    const dir = tree("env", {
      ".env": "# local settings\n\nDATABASE_URL=postgres://u:p@db/app\n",
      "config/.env.production": "export API_KEY='abc'\n",
      ".env.example": "DATABASE_URL=postgres://localhost/app\n",
      "empty/.env": "# nothing\nUNSET=\nQUOTED=\"\"\n",
    });
    const res = await scanImageFiles(dir);
    expect(res.hits.map((h) => [h.path, h.line, h.kind])).toEqual([
      [".env", 3, "env-file"],
      ["config/.env.production", 1, "env-file"],
    ]);
    expect(JSON.stringify(res)).not.toContain("postgres://u:p");
    expect([".env", ".env.local", ".env.example", ".env.sample", "env", ".envrc"].map(isEnvFile)).toEqual([true, true, false, false, false, false]);
  });

  test("huge files are read only up to the bound and listed as partial; symlinks are not followed", async () => {
    const outside = tree("outside", { "secret.txt": token });
    const dir = tree("huge", { "blob.bin": new Uint8Array(3 * 1024 * 1024), "tail.txt": "x".repeat(2000) + token });
    symlinkSync(path.join(outside, "secret.txt"), path.join(dir, "link.txt"));
    const res = await scanImageFiles(dir, { maxFileBytes: 1024 * 1024 });
    expect(res.partial).toEqual(["blob.bin"]);
    expect(res.bytes).toBe(1024 * 1024 + 2000 + token.length);
    expect(res.hits.map((h) => h.path)).toEqual(["tail.txt"]);
  });
});

describe("the shared rule set", () => {
  const ghp = `ghp_${"aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"}`;
  const akia = `AKIA${"QX7RZ2MB5KWT3NYC"}`;
  test("issuer-prefixed tokens fail the scan; JWTs, Google API keys and URL passwords are only masked elsewhere", async () => {
    const dir = tree("shapes", {
      "app/config.js": `module.exports = {\n  github: "${ghp}",\n};\n`,
      "deploy/aws.ini": `[default]\naws_access_key_id = ${akia}\n`,
      "docs/example.md": "AKIAIOSFODNN7EXAMPLE and postgres://user:password@localhost/db\n",
      "web/firebase.js": `apiKey: "AIza${"SyD3x4mPl3K3y_f0r-a-br0ws3r-b4s3d"}",\n`,
      "test/fixtures/jwt.txt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ\n",
    });
    const res = await scanImageFiles(dir);
    expect(res.hits).toEqual([
      { path: "app/config.js", line: 2, kind: "github-token", what: "a GitHub token" },
      { path: "deploy/aws.ini", line: 2, kind: "aws-access-key-id", what: "an AWS access key id" },
    ]);
    expect(JSON.stringify(res)).not.toContain(ghp);
    expect(JSON.stringify(res)).not.toContain(akia);
  });
});

describe("links are never followed, even when swapped in during the scan", () => {
  test("a symlinked root is refused, a symlinked directory is not entered", async () => {
    const outside = tree("outside-dir", { "secret.txt": token });
    const dir = tree("dirlink", { "ok.txt": "fine\n" });
    symlinkSync(outside, path.join(dir, "elsewhere"));
    expect((await scanImageFiles(dir)).hits).toEqual([]);
    const linkRoot = path.join(root, "root-link");
    symlinkSync(outside, linkRoot);
    await expect(scanImageFiles(linkRoot)).rejects.toThrow("symbolic link");
  });

  test("a file and a directory replaced by links to secrets after they were listed are skipped", async () => {
    // Long names: the old scan read as many bytes as the link's own size (its target's path length).
    const far = path.join(root, "far-away-outside-the-image-with-a-long-enough-path-name");
    const outside = tree("far-away-outside-the-image-with-a-long-enough-path-name", { "secret.txt": token, "dir/secret.txt": token });
    expect(outside).toBe(far);
    const dir = tree("swapped", { "a.bin": new Uint8Array(8 * 1024 * 1024), "sub/ok.txt": "fine\n", "z.txt": "fine\n" });
    let swapped = false;
    const scan = scanImageFiles(dir);
    // The scan yields to the event loop while it reads a.bin (8 MiB), after it listed sub/ and z.txt.
    setImmediate(() => {
      rmSync(path.join(dir, "z.txt"));
      symlinkSync(path.join(outside, "secret.txt"), path.join(dir, "z.txt"));
      rmSync(path.join(dir, "sub"), { recursive: true });
      symlinkSync(path.join(outside, "dir"), path.join(dir, "sub"));
      swapped = true;
    });
    const res = await scan;
    expect(swapped).toBe(true);
    expect(res.hits).toEqual([]);
    expect(res.files).toBe(1);
  });
});
