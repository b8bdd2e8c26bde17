/**
 * Real skopeo (Debian's containers/image client) against the embedded registry with Docker
 * token auth: copy a hand-written OCI image layout in, inspect it, list its tags, copy it back
 * out byte for byte, and get 401 / 403 for callers without access. Only loopback is used.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { createHash } from "node:crypto";
import { createTestApp, tempDir, expectStatus, type TestApp } from "../../../../test/harness";
import { registryCast, tarGz, writeOciLayout, type RegistryCast } from "../../../../test/support/registries";
import { skopeo } from "../../../../test/support/builds";
import { create as tarCreate } from "tar";
import { writeTree } from "../../../../test/support/registries";

let t: TestApp;
let cast: RegistryCast;
let host: string;
let layout: string;
let manifestDigest: string;
let layerDigest: string;

const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/** Write an OCI image layout with one layer, tagged `v1`, whose config carries a revision label. */
async function writeLayout(dir: string): Promise<void> {
  const src = tempDir("ops-layer-");
  writeTree(src, { "hello.txt": "hello from ops\n", "etc/motd": "built by a test\n" });
  const chunks: Buffer[] = [];
  for await (const c of tarCreate({ cwd: src, portable: true }, ["hello.txt", "etc"]) as unknown as AsyncIterable<Buffer>) chunks.push(c);
  const tar = new Uint8Array(Buffer.concat(chunks));
  ({ manifestDigest, layerDigest } = writeOciLayout(dir, tar, { architecture: "amd64", os: "linux", config: { Labels: { "org.opencontainers.image.revision": "0123abc" }, Cmd: ["/bin/true"] } }, "v1"));
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  host = new URL(t.url).host;
  layout = tempDir("ops-oci-layout-");
  await writeLayout(layout);
  void tarGz;
});
afterAll(() => t.close());

describe("skopeo", () => {
  test("copy an OCI image layout to the registry with token auth", async () => {
    const res = await skopeo(["copy", "--dest-tls-verify=false", "--dest-creds", `ci:${cast.publisherToken}`, `oci:${layout}:v1`, `docker://${host}/${cast.project.slug}/web:v1`]);
    expect(res.stderr).not.toContain("rror");
    expect(res.code).toBe(0);
  });

  test("inspect it and list its tags", async () => {
    const raw = await skopeo(["inspect", "--raw", "--tls-verify=false", "--creds", `ci:${cast.readerToken}`, `docker://${host}/${cast.project.slug}/web:v1`]);
    expect(raw.code).toBe(0);
    expect(`sha256:${sha(raw.stdout)}`).toBe(manifestDigest);
    const info = await skopeo(["inspect", "--tls-verify=false", "--creds", `ci:${cast.readerToken}`, `docker://${host}/${cast.project.slug}/web:v1`]);
    expect(info.code).toBe(0);
    const parsed = JSON.parse(info.stdout);
    expect(parsed.Digest).toBe(manifestDigest);
    expect(parsed.Layers).toEqual([layerDigest]);
    expect(parsed.Labels["org.opencontainers.image.revision"]).toBe("0123abc");
    const tags = await skopeo(["list-tags", "--tls-verify=false", "--creds", `ci:${cast.readerToken}`, `docker://${host}/${cast.project.slug}/web`]);
    expect(tags.code).toBe(0);
    expect(JSON.parse(tags.stdout).Tags).toEqual(["v1"]);
  });

  test("copy it back out: the same bytes", async () => {
    const out = tempDir("ops-oci-out-");
    const res = await skopeo(["copy", "--src-tls-verify=false", "--src-creds", `ci:${cast.readerToken}`, `docker://${host}/${cast.project.slug}/web:v1`, `oci:${out}:v1`]);
    expect(res.code).toBe(0);
    const index = JSON.parse(readFileSync(path.join(out, "index.json"), "utf8"));
    expect(index.manifests[0].digest).toBe(manifestDigest);
    const layer = readFileSync(path.join(out, "blobs", "sha256", layerDigest.slice(7)));
    expect(`sha256:${sha(layer)}`).toBe(layerDigest);
  });

  test("the project's packages list the image with its digest and revision", async () => {
    const body = await expectStatus(await t.request("GET", `/api/v1/projects/${cast.project.slug}/packages`, { token: cast.reader.session }), 200);
    expect(body.images).toEqual([
      expect.objectContaining({ repository: `${cast.project.slug}/web`, service: "web", digest: manifestDigest, commit: "0123abc", environments: [] }),
    ]);
    expect(body.images[0].size_bytes).toBeGreaterThan(0);
  });

  test("401 without credentials", async () => {
    const res = await skopeo(["inspect", "--raw", "--tls-verify=false", `docker://${host}/${cast.project.slug}/web:v1`]);
    expect(res.code).not.toBe(0);
    expect(res.stderr.toLowerCase()).toMatch(/401|unauthorized|authentication required/);
  });

  test("401 with a token that is not a live ops token", async () => {
    const res = await skopeo(["inspect", "--raw", "--tls-verify=false", "--creds", "ci:opst_not-a-real-token", `docker://${host}/${cast.project.slug}/web:v1`]);
    expect(res.code).not.toBe(0);
    expect(res.stderr.toLowerCase()).toMatch(/401|unauthorized/);
  });

  test("403 for a caller from another project, for pull and for push", async () => {
    const pull = await skopeo(["inspect", "--raw", "--tls-verify=false", "--creds", `ci:${cast.outsiderToken}`, `docker://${host}/${cast.project.slug}/web:v1`]);
    expect(pull.code).not.toBe(0);
    expect(pull.stderr.toLowerCase()).toMatch(/denied|403/);
    const push = await skopeo(["copy", "--dest-tls-verify=false", "--dest-creds", `ci:${cast.readerToken}`, `oci:${layout}:v1`, `docker://${host}/${cast.project.slug}/web:v2`]);
    expect(push.code).not.toBe(0);
    expect(push.stderr.toLowerCase()).toMatch(/denied|403/);
  });
});
