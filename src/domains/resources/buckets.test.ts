import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { S3Client } from "bun";
import { createTestApp, expectStatus, freePort, tempDir, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";
import { projectWithOwner, type ProjectCtx } from "../../../test/resources-helpers";
import { bucketDir } from "./buckets";

let t: TestApp;
let p: ProjectCtx;
beforeAll(async () => {
  t = await createTestApp();
  p = await projectWithOwner(t);
});
afterAll(() => t.close());

describe("POST /api/v1/projects/{slug}/resources/bucket/{name}/check", () => {
  test("200: a local bucket is a directory in the data dir; check counts objects and bytes now", async () => {
    const b = await expectStatus(await p.req("POST", "/resources/bucket", { name: "uploads", spec: {} }), 201);
    expect(b.environment).toBeNull();
    const dir = bucketDir(t.core, p.slug, "uploads");
    expect(dir.startsWith(t.dataDir)).toBe(true);
    expect(existsSync(dir)).toBe(true);
    const empty = await expectStatus(await p.req("POST", "/resources/bucket/uploads/check"), 200);
    expect(empty.status).toMatchObject({ state: "ready", summary: "0 objects, 0 bytes", detail: { backend: "local", objects: 0, bytes: 0 } });
    mkdirSync(path.join(dir, "a/b"), { recursive: true });
    writeFileSync(path.join(dir, "a/b/one.txt"), "12345");
    writeFileSync(path.join(dir, "two.bin"), new Uint8Array(1000));
    const full = await expectStatus(await p.req("POST", "/resources/bucket/uploads/check"), 200);
    expect(full.status).toMatchObject({ state: "ready", summary: "2 objects, 1005 bytes", detail: { objects: 2, bytes: 1005 } });
  });
  test("200: a bucket that does not answer shows pending, not an error", async () => {
    await expectStatus(await p.req("POST", "/resources/bucket", { name: "gone", spec: { backend: "local" } }), 201);
    rmSync(bucketDir(t.core, p.slug, "gone"), { recursive: true });
    const r = await expectStatus(await p.req("POST", "/resources/bucket/gone/check"), 200);
    expect(r.status.state).toBe("pending");
    await expectStatus(await p.req("POST", "/resources/bucket", { name: "remote", spec: { backend: "s3", endpoint: `http://127.0.0.1:${freePort()}`, bucket: "media", region: "eu-west-1" } }), 201);
    await expectStatus(await p.req("PUT", "/secrets/remote/S3_ACCESS_KEY_ID", { value: "AKIAEXAMPLE" }), 204);
    await expectStatus(await p.req("PUT", "/secrets/remote/S3_SECRET_ACCESS_KEY", { value: "s3-secret-example" }), 204);
    const s3 = await expectStatus(await p.req("POST", "/resources/bucket/remote/check"), 200);
    expect(s3.status).toMatchObject({ state: "pending", detail: { backend: "s3" } });
    expect(JSON.stringify(s3)).not.toContain("s3-secret-example");
  });
  test("200: an S3 bucket on a real S3-compatible server (s3rver) counts the objects under its prefix", async () => {
    const { default: S3rver } = await import("s3rver");
    const dir = tempDir("ops-s3-");
    const port = freePort();
    const server = new S3rver({ port, address: "127.0.0.1", silent: true, directory: dir, configureBuckets: [{ name: "media", configs: [] }] });
    await server.run();
    try {
      const client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, bucket: "media", region: "us-east-1", accessKeyId: "S3RVER", secretAccessKey: "S3RVER" });
      await client.write("assets/logo.svg", "<svg/>");
      await client.write("assets/css/site.css", "body{margin:0}");
      await client.write("other/ignored.txt", "not under the prefix");
      await expectStatus(await p.req("POST", "/resources/bucket", { name: "cdn", spec: { backend: "s3", endpoint: `http://127.0.0.1:${port}`, bucket: "media", region: "us-east-1", prefix: "assets/" } }), 201);
      await expectStatus(await p.req("PUT", "/secrets/cdn/S3_ACCESS_KEY_ID", { value: "S3RVER" }), 204);
      await expectStatus(await p.req("PUT", "/secrets/cdn/S3_SECRET_ACCESS_KEY", { value: "S3RVER" }), 204);
      const r = await expectStatus(await p.req("POST", "/resources/bucket/cdn/check"), 200);
      expect(r.status).toMatchObject({ state: "ready", summary: "2 objects, 20 bytes", detail: { backend: "s3", objects: 2, bytes: 20 } });
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("404 unknown bucket or project; 401; 403 for a non-member", async () => {
    await expectStatus(await p.req("POST", "/resources/bucket/nope/check"), 404);
    await expectStatus(await t.request("POST", "/api/v1/projects/nope/resources/bucket/uploads/check", { token: p.owner.session }), 404);
    await expectStatus(await t.request("POST", `${p.base}/resources/bucket/uploads/check`), 401);
    const stranger = await makePerson(t, []);
    await expectStatus(await p.req("POST", "/resources/bucket/uploads/check", undefined, stranger.session), 403);
  });
  test("422: an s3 bucket without endpoint; local-only settings on s3 and back", async () => {
    await expectStatus(await p.req("POST", "/resources/bucket", { name: "bad", spec: { backend: "s3" } }), 422);
    await expectStatus(await p.req("POST", "/resources/bucket", { name: "bad", spec: { endpoint: "http://x" } }), 422);
    await expectStatus(await p.req("PUT", "/resources/bucket/uploads", { spec: { backend: "s3", endpoint: "http://x", bucket: "b1" } }), 422);
  });
});

describe("deleting a bucket", () => {
  test("409 while a local bucket holds objects unless confirmed; the directory goes with it", async () => {
    const body = await expectStatus(await p.req("DELETE", "/resources/bucket/uploads"), 409);
    expect(body.message).toContain("confirm=uploads");
    await expectStatus(await p.req("DELETE", "/resources/bucket/uploads?confirm=uploads"), 204);
    expect(existsSync(bucketDir(t.core, p.slug, "uploads"))).toBe(false);
    await expectStatus(await p.req("POST", "/resources/bucket", { name: "scratch", spec: {} }), 201);
    await expectStatus(await p.req("DELETE", "/resources/bucket/scratch"), 204);
  });
});
