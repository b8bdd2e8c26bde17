/**
 * A native build's image pushed into the embedded registry in-process (registries' pushImage),
 * then read with real skopeo over HTTP with a registry token: entrypoint, command, exposed port,
 * working dir, labels, the layer's bytes. The push is validated and audited like an HTTP push.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { desc, eq } from "drizzle-orm";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../../../test/harness";
import { makePerson } from "../../../test/fixtures";
import { auditLog } from "../../core/tables";
import { SYSTEM_ACTOR } from "../../core/audit";
import { registryCast, type RegistryCast } from "../../../test/support/registries";
import { pushImage, storedManifest, storedBlob } from "../registries/service";
import { packImage, packedBlobs, type PackedImage } from "./image";
import { skopeo } from "../../../test/support/builds";

let t: TestApp;
let cast: RegistryCast;
let host: string;
let work: string;
let img: PackedImage;
let digest: string;
const COMMIT = "89abcdef0123456789abcdef0123456789abcdef";


function pushOf(image: PackedImage, repository: string, tag: string | null) {
  return {
    repository,
    blobs: packedBlobs(image),
    manifest: image.manifest.bytes,
    mediaType: image.manifest.mediaType,
    tag,
    pusher: { subject: "ops", audit: SYSTEM_ACTOR, context: { build: 7 } },
  };
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  host = new URL(t.url).host;
  work = tempDir("ops-push-");
  const out = path.join(work, "out");
  mkdirSync(out);
  writeFileSync(path.join(out, "server.js"), "require('http').createServer((q, s) => s.end('ok')).listen(process.env.PORT)\n");
  img = await packImage({ outputDir: out, layerFile: path.join(work, "layer.tar.gz"), start: "node server.js", port: 8080, commit: COMMIT, commitTime: Date.UTC(2026, 1, 3), source: `${cast.project.slug}/web` });
});
afterAll(async () => {
  await t.close();
  rmSync(work, { recursive: true, force: true });
});

describe("pushImage", () => {
  test("pushes blobs, manifest and tag; audited as packages.publish by the system with the build id", async () => {
    const pushed = await pushImage(t.core, pushOf(img, `${cast.project.slug}/web`, COMMIT));
    digest = pushed.digest;
    expect(digest).toBe(img.manifest.digest);
    expect(pushed.sizeBytes).toBe(img.layer.size + img.config.size);
    const row = t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get();
    expect(row).toMatchObject({ actor: "system", via: "system", action: "packages.publish", outcome: "allowed", target: `image:${cast.project.slug}/web@${digest}`, project: cast.project.slug });
    expect(JSON.parse(row!.context!)).toEqual({ build: 7, op: "image.push", tag: COMMIT });
    expect((await storedManifest(t.core, `${cast.project.slug}/web`, COMMIT))?.digest).toBe(digest);
    expect(storedBlob(t.core, `${cast.project.slug}/web`, img.layer.digest)?.size).toBe(img.layer.size);
    expect(storedBlob(t.core, `${cast.project.slug}/other`, img.layer.digest)).toBeNull();
  });

  test("skopeo inspect over HTTP with a registry token: entrypoint, command, port, working dir, labels", async () => {
    const ref = `docker://${host}/${cast.project.slug}/web:${COMMIT}`;
    const info = await skopeo(["inspect", "--tls-verify=false", "--creds", `ci:${cast.readerToken}`, ref]);
    expect(info.stderr).toBe("");
    expect(info.code).toBe(0);
    const parsed = JSON.parse(info.stdout);
    expect(parsed.Digest).toBe(digest);
    expect(parsed.Layers).toEqual([img.layer.digest]);
    expect(parsed.Labels).toEqual({ "org.opencontainers.image.revision": COMMIT, "org.opencontainers.image.source": `${cast.project.slug}/web`, "dev.ops.runtime": "process" });
    expect(parsed.Env).toEqual(["PORT=8080"]);
    const config = await skopeo(["inspect", "--config", "--tls-verify=false", "--creds", `ci:${cast.readerToken}`, ref]);
    expect(config.code).toBe(0);
    const cfg = JSON.parse(config.stdout).config;
    expect(cfg.Entrypoint).toEqual(["/bin/sh", "-c"]);
    expect(cfg.Cmd).toEqual(["node server.js"]);
    expect(cfg.WorkingDir).toBe("/app");
    expect(cfg.ExposedPorts).toEqual({ "8080/tcp": {} });
    const out = tempDir("ops-push-out-");
    const copy = await skopeo(["copy", "--src-tls-verify=false", "--src-creds", `ci:${cast.readerToken}`, ref, `oci:${out}:x`]);
    expect(copy.code).toBe(0);
    expect(new Uint8Array(readFileSync(path.join(out, "blobs/sha256", img.layer.digest.slice(7))))).toEqual(new Uint8Array(readFileSync(img.layer.file)));
    rmSync(out, { recursive: true, force: true });
  });

  test("the project's packages list the image with its commit", async () => {
    const body = await expectStatus(await t.request("GET", `/api/v1/projects/${cast.project.slug}/packages`, { token: cast.reader.session }), 200);
    expect(body.images).toEqual([expect.objectContaining({ repository: `${cast.project.slug}/web`, digest, commit: COMMIT })]);
  });

  test("pushing the same image again changes nothing but another audit row", async () => {
    const before = t.core.db.select().from(auditLog).all().length;
    expect((await pushImage(t.core, pushOf(img, `${cast.project.slug}/web`, COMMIT))).digest).toBe(digest);
    expect(t.core.db.select().from(auditLog).all().length).toBe(before + 1);
  });

  test("every blob and the manifest's bytes are durable in the store before the version that names them is visible", async () => {
    const repo = `${cast.project.slug}/ordered`;
    const store = t.core.blobs;
    const put = store.put.bind(store);
    const seen: Array<{ digest: string; versionVisible: boolean }> = [];
    store.put = async (source, opts) => {
      const res = await put(source, opts);
      // When a put resolves its file is at its final name; the version must not be committed yet.
      expect(store.open(res.digest)).not.toBeNull();
      seen.push({ digest: res.digest, versionVisible: (await storedManifest(t.core, repo, "ordered")) !== null });
      return res;
    };
    try {
      const pushed = await pushImage(t.core, pushOf(img, repo, "ordered"));
      expect(pushed.digest).toBe(img.manifest.digest);
    } finally {
      store.put = put;
    }
    expect(seen.map((s) => `sha256:${s.digest}`).sort()).toEqual([img.manifest.digest, img.layer.digest, img.config.digest].sort());
    expect(seen.every((s) => !s.versionVisible)).toBe(true);
    const manifest = await storedManifest(t.core, repo, "ordered");
    expect(manifest?.bytes).toEqual(img.manifest.bytes);
    expect(new Uint8Array(await storedBlob(t.core, repo, img.layer.digest)!.arrayBuffer())).toEqual(new Uint8Array(readFileSync(img.layer.file)));
  });

  test("a push whose blob is refused leaves no version, no link and no manifest bytes behind", async () => {
    const repo = `${cast.project.slug}/refused`;
    const lie = pushOf(img, repo, "r1");
    const other = new TextEncoder().encode(`{"other":${Date.now()}}`);
    lie.manifest = new TextEncoder().encode(new TextDecoder().decode(img.manifest.bytes).replace("{", `{"annotations":{"n":"${Date.now()}"},`));
    lie.blobs[1] = { ...lie.blobs[1], source: { bytes: other } };
    const manifestHex = new Bun.CryptoHasher("sha256").update(lie.manifest).digest("hex");
    await expect(pushImage(t.core, lie)).rejects.toThrow("does not match its declared digest");
    expect(await storedManifest(t.core, repo, "r1")).toBeNull();
    expect(storedBlob(t.core, repo, img.layer.digest)).toBeNull();
    expect(t.core.blobs.open(manifestHex)).toBeNull();
  });

  test("refused like an HTTP push: a blob that is not what it claims, a manifest naming a missing blob, a bad name, an unknown or archived project", async () => {
    const repo = `${cast.project.slug}/bad`;
    const lie = pushOf(img, repo, "x1");
    lie.blobs[1] = { ...lie.blobs[1], source: { bytes: new TextEncoder().encode("{}") } };
    await expect(pushImage(t.core, lie)).rejects.toThrow("does not match its declared digest");
    const fresh = `${cast.project.slug}/fresh`;
    const missing = { ...pushOf(img, fresh, "x2"), blobs: [pushOf(img, fresh, "x2").blobs[1]] };
    await expect(pushImage(t.core, missing)).rejects.toMatchObject({ details: { oci: "MANIFEST_BLOB_UNKNOWN" } });
    expect(await storedManifest(t.core, fresh, "x2")).toBeNull();
    await expect(pushImage(t.core, pushOf(img, "Not A Name", null))).rejects.toMatchObject({ code: "validation_failed" });
    await expect(pushImage(t.core, pushOf(img, "no-such-project/web", null))).rejects.toMatchObject({ code: "not_found" });
    await expect(pushImage(t.core, pushOf(img, `${cast.project.slug}/web`, "not a tag"))).rejects.toMatchObject({ details: { oci: "TAG_INVALID" } });
    const owner = await makePerson(t, [{ role: "owner", project: cast.project.slug }]);
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${cast.project.slug}`, { token: owner.session, body: { archived: true } }), 200);
    await expect(pushImage(t.core, pushOf(img, `${cast.project.slug}/web`, "later"))).rejects.toMatchObject({ code: "archived" });
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${cast.project.slug}`, { token: owner.session, body: { archived: false } }), 200);
    for (const r of [repo, fresh]) expect(t.core.db.select().from(auditLog).where(eq(auditLog.target, `image:${r}@${img.manifest.digest}`)).all()).toEqual([]);
  });
});
