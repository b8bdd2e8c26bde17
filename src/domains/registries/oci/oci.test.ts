/**
 * The image registry token route (document 3, Image registry token) status by status, and the
 * OCI distribution protocol behind `/v2/`: challenges, monolithic, streamed and chunked uploads
 * (resumable), digest checks that keep nothing on failure, manifests, tags, ranges and mounts.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, statSync, readdirSync } from "node:fs";
import path from "node:path";
import { count, desc } from "drizzle-orm";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { createTestApp, expectStatus, type TestApp } from "../../../../test/harness";
import { registryCast, type RegistryCast } from "../../../../test/support/registries";
import { auditLog } from "../../../core/tables";
import { ociUploads } from "./tables";
import { keyPath } from "./keys";

let t: TestApp;
let cast: RegistryCast;
let service: string;
let repo: string;

const sha = (b: Uint8Array | string) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const basic = (secret: string) => ({ authorization: `Basic ${btoa(`anyone:${secret}`)}` });

async function registryToken(secret: string, scope: string): Promise<string> {
  const res = await t.request("GET", `/v2/token?service=${encodeURIComponent(service)}&scope=${encodeURIComponent(scope)}`, { headers: basic(secret) });
  return (await expectStatus(res, 200)).token;
}

async function pushBlob(token: string, bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = sha(bytes);
  const res = await t.request("POST", `/v2/${repo}/blobs/uploads/?digest=${encodeURIComponent(digest)}`, { token, raw: bytes, headers: { "content-type": "application/octet-stream" } });
  await expectStatus(res, 201);
  return digest;
}

function imageManifest(config: { digest: string; size: number }, layers: Array<{ digest: string; size: number }>): string {
  return JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
    layers: layers.map((l) => ({ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", ...l })),
  });
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  service = new URL(t.url).host;
  repo = `${cast.project.slug}/api`;
});
afterAll(() => t.close());

describe("GET /v2/token", () => {
  test("200: an ES256 JWT granting what the caller's permissions allow, in both fields", async () => {
    const res = await t.request("GET", `/v2/token?service=${service}&scope=repository:${repo}:pull,push&account=x&client_id=docker`, { headers: basic(cast.publisherToken) });
    const body = await expectStatus(res, 200);
    expect(body.token).toBe(body.access_token);
    expect(body.expires_in).toBe(300);
    expect(body.issued_at).toBe("2026-11-21T12:00:00.000Z");
    expect(decodeProtectedHeader(body.token)).toMatchObject({ alg: "ES256", typ: "JWT" });
    const claims = decodeJwt(body.token);
    expect(claims).toMatchObject({ aud: service, sub: cast.publisher.email, iss: t.url, access: [{ type: "repository", name: repo, actions: ["pull", "push"] }] });
    expect((claims.exp as number) - (claims.iat as number)).toBe(300);
  });

  test("200 grants only the allowed actions; a refused action is audited as a denial", async () => {
    const reader = decodeJwt(await registryToken(cast.readerToken, `repository:${repo}:pull,push`));
    expect(reader.access).toEqual([{ type: "repository", name: repo, actions: ["pull"] }]);
    expect(t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()).toMatchObject({ action: "packages.publish", outcome: "denied", target: `image:${repo}`, project: cast.project.slug });
    const outsider = decodeJwt(await registryToken(cast.outsiderToken, `repository:${repo}:pull`));
    expect(outsider.access).toEqual([]);
    // No scope (docker login) is a valid token with empty access; several scopes in one value work.
    const none = decodeJwt(await registryToken(cast.readerToken, ""));
    expect(none.access).toEqual([]);
    const multi = decodeJwt(await registryToken(cast.publisherToken, `repository:${repo}:pull repository:nosuch/thing:pull registry:catalog:*`));
    expect(multi.access).toEqual([{ type: "repository", name: repo, actions: ["pull"] }]);
  });

  test("400 for an unknown registry service (or none)", async () => {
    const body = await expectStatus(await t.request("GET", `/v2/token?service=elsewhere.example&scope=repository:${repo}:pull`, { headers: basic(cast.readerToken) }), 400);
    expect(body.errors[0].message).toContain("Unknown registry service");
    await expectStatus(await t.request("GET", `/v2/token`, { headers: basic(cast.readerToken) }), 400);
  });

  test("401 when the basic credential is not a live ops token", async () => {
    const res = await t.request("GET", `/v2/token?service=${service}`, { headers: basic("opst_" + "3".repeat(49)) });
    expect(res.headers.get("www-authenticate")).toStartWith("Basic ");
    await expectStatus(res, 401);
    await expectStatus(await t.request("GET", `/v2/token?service=${service}`), 401);
  });

  test("503 when no issuer key is configured (external registry without a key)", async () => {
    const ext = await createTestApp({ env: { OPS_REGISTRY: "registry.example.com:5000" } });
    try {
      const c = await registryCast(ext);
      expect(existsSync(keyPath(ext.core))).toBe(false);
      const body = await expectStatus(await ext.request("GET", "/v2/token?service=registry.example.com:5000", { headers: basic(c.readerToken) }), 503);
      expect(body.errors[0].message).toContain("issuer key");
      const pkgs = await expectStatus(await ext.request("GET", `/api/v1/projects/${c.project.slug}/packages`, { token: c.reader.session }), 200);
      expect(pkgs.registry_host).toBe("registry.example.com:5000");
    } finally {
      await ext.close();
    }
  });

  test("the embedded registry's key is generated on first start with mode 0600", () => {
    expect(statSync(keyPath(t.core)).mode & 0o777).toBe(0o600);
    expect(existsSync(path.join(t.dataDir, "keys", "registry-token.jwks.json"))).toBe(true);
  });
});

describe("/v2/ challenges", () => {
  test("GET /v2/: 401 with a Bearer challenge, 200 with any valid registry token", async () => {
    const res = await t.request("GET", "/v2/");
    expect(res.headers.get("www-authenticate")).toBe(`Bearer realm="${t.url}/v2/token",service="${service}"`);
    expect(res.headers.get("docker-distribution-api-version")).toBe("registry/2.0");
    expect((await expectStatus(res, 401)).errors[0].code).toBe("UNAUTHORIZED");
    await expectStatus(await t.request("GET", "/v2/", { token: await registryToken(cast.readerToken, "") }), 200);
  });

  test("a repository route challenges with the scope it needs; a bad token says invalid_token", async () => {
    const res = await t.request("GET", `/v2/${repo}/tags/list`);
    expect(res.headers.get("www-authenticate")).toBe(`Bearer realm="${t.url}/v2/token",service="${service}",scope="repository:${repo}:pull"`);
    await expectStatus(res, 401);
    const bad = await t.request("GET", `/v2/${repo}/tags/list`, { token: "not.a.jwt" });
    expect(bad.headers.get("www-authenticate")).toContain('error="invalid_token"');
    // An ops token is not a registry token.
    await expectStatus(await t.request("GET", `/v2/${repo}/tags/list`, { token: cast.readerToken }), 401);
  });

  test("a token for another scope gets 401 insufficient_scope; a refused action gets 403 DENIED", async () => {
    const other = await registryToken(cast.publisherToken, `repository:${cast.project.slug}/other:pull`);
    const res = await t.request("GET", `/v2/${repo}/tags/list`, { token: other });
    expect(res.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
    await expectStatus(res, 401);
    const reader = await registryToken(cast.readerToken, `repository:${repo}:pull,push`);
    const denied = await expectStatus(await t.request("POST", `/v2/${repo}/blobs/uploads/`, { token: reader }), 403);
    expect(denied.errors[0]).toMatchObject({ code: "DENIED", detail: [{ Type: "repository", Name: repo, Action: "push" }] });
  });

  test("an expired token is refused", async () => {
    const token = await registryToken(cast.readerToken, `repository:${repo}:pull`);
    t.clock.advance(10 * 60 * 1000);
    try {
      await expectStatus(await t.request("GET", "/v2/", { token }), 401);
    } finally {
      t.clock.advance(-10 * 60 * 1000);
    }
  });
});

describe("push and pull", () => {
  let push: string;
  let pull: string;
  const layer = new Uint8Array(300_000).map((_, i) => (i * 31 + 7) % 256);
  const config = new TextEncoder().encode(JSON.stringify({ architecture: "amd64", os: "linux", config: { Labels: { "org.opencontainers.image.revision": "feedbeef" } } }));
  let manifest: string;

  beforeAll(async () => {
    push = await registryToken(cast.publisherToken, `repository:${repo}:pull,push`);
    pull = await registryToken(cast.readerToken, `repository:${repo}:pull`);
  });

  test("monolithic POST with ?digest= (201) and the blob reads back, HEAD with its size and digest", async () => {
    const digest = await pushBlob(push, config);
    const head = await t.request("HEAD", `/v2/${repo}/blobs/${digest}`, { token: pull });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(config.byteLength));
    expect(head.headers.get("docker-content-digest")).toBe(digest);
    const get = await t.request("GET", `/v2/${repo}/blobs/${digest}`, { token: pull });
    expect(new Uint8Array(await get.arrayBuffer())).toEqual(config);
  });

  test("chunked PATCH uploads with Content-Range; 416 out of order; GET resumes; PUT with the last chunk", async () => {
    const start = await t.request("POST", `/v2/${repo}/blobs/uploads/`, { token: push });
    expect(start.status).toBe(202);
    const location = start.headers.get("location")!;
    expect(location).toStartWith(`/v2/${repo}/blobs/uploads/`);
    expect(start.headers.get("docker-upload-uuid")).toBeString();
    const a = layer.subarray(0, 100_000);
    const b = layer.subarray(100_000, 250_000);
    const c = layer.subarray(250_000);
    let res = await t.request("PATCH", location, { token: push, raw: a, headers: { "content-type": "application/octet-stream", "content-range": "0-99999" } });
    expect(res.status).toBe(202);
    expect(res.headers.get("range")).toBe("0-99999");
    // Out of order: 416 with where the session stands.
    res = await t.request("PATCH", location, { token: push, raw: b, headers: { "content-range": "150000-299999" } });
    expect(res.status).toBe(416);
    expect(res.headers.get("range")).toBe("0-99999");
    expect((await res.json()).errors[0].code).toBe("RANGE_INVALID");
    // Resume: ask where we are, continue from there.
    const status = await t.request("GET", location, { token: push });
    expect(status.status).toBe(204);
    expect(status.headers.get("range")).toBe("0-99999");
    res = await t.request("PATCH", location, { token: push, raw: b, headers: { "content-range": "100000-249999" } });
    expect(res.status).toBe(202);
    expect(res.headers.get("range")).toBe("0-249999");
    res = await t.request("PUT", `${location}?digest=${encodeURIComponent(sha(layer))}`, { token: push, raw: c });
    expect(res.status).toBe(201);
    expect(res.headers.get("docker-content-digest")).toBe(sha(layer));
    expect(res.headers.get("location")).toBe(`/v2/${repo}/blobs/${sha(layer)}`);
    const got = new Uint8Array(await (await t.request("GET", `/v2/${repo}/blobs/${sha(layer)}`, { token: pull })).arrayBuffer());
    expect(sha(got)).toBe(sha(layer));
    expect(t.core.db.select({ n: count() }).from(ociUploads).get()!.n).toBe(0);
    expect(existsSync(path.join(t.dataDir, "blobs", "uploads", location.split("/").pop()!))).toBe(false);
  });

  test("streamed PATCH without Content-Range then an empty PUT (Docker, skopeo), and a monolithic PUT", async () => {
    const blob = new TextEncoder().encode("streamed layer bytes");
    const start = await t.request("POST", `/v2/${repo}/blobs/uploads/`, { token: push });
    const location = start.headers.get("location")!;
    expect((await t.request("PATCH", location, { token: push, raw: blob })).status).toBe(202);
    expect((await t.request("PUT", `${location}?digest=${encodeURIComponent(sha(blob))}`, { token: push })).status).toBe(201);
    const mono = new TextEncoder().encode("monolithic put bytes");
    const s2 = await t.request("POST", `/v2/${repo}/blobs/uploads/`, { token: push });
    expect((await t.request("PUT", `${s2.headers.get("location")}?digest=${encodeURIComponent(sha(mono))}`, { token: push, raw: mono })).status).toBe(201);
    expect((await t.request("HEAD", `/v2/${repo}/blobs/${sha(mono)}`, { token: pull })).status).toBe(200);
  });

  test("a digest mismatch is 400 DIGEST_INVALID and leaves no blob, no session and no file", async () => {
    const blobsBefore = [...(await Array.fromAsync(t.core.blobs.list()))].length;
    const wrong = sha("something else");
    const bytes = new TextEncoder().encode("these bytes are not what the digest says");
    // Streamed then closed with the wrong digest.
    const s1 = await t.request("POST", `/v2/${repo}/blobs/uploads/`, { token: push });
    const l1 = s1.headers.get("location")!;
    await t.request("PATCH", l1, { token: push, raw: bytes });
    const r1 = await t.request("PUT", `${l1}?digest=${encodeURIComponent(wrong)}`, { token: push });
    expect((await expectStatus(r1, 400)).errors[0].code).toBe("DIGEST_INVALID");
    // Chunked (append file) then closed with the wrong digest.
    const s2 = await t.request("POST", `/v2/${repo}/blobs/uploads/`, { token: push });
    const l2 = s2.headers.get("location")!;
    await t.request("PATCH", l2, { token: push, raw: bytes.subarray(0, 10), headers: { "content-range": "0-9" } });
    await t.request("PATCH", l2, { token: push, raw: bytes.subarray(10), headers: { "content-range": `10-${bytes.byteLength - 1}` } });
    await expectStatus(await t.request("PUT", `${l2}?digest=${encodeURIComponent(wrong)}`, { token: push }), 400);
    // Monolithic POST with the wrong digest.
    await expectStatus(await t.request("POST", `/v2/${repo}/blobs/uploads/?digest=${encodeURIComponent(wrong)}`, { token: push, raw: bytes }), 400);
    expect([...(await Array.fromAsync(t.core.blobs.list()))].length).toBe(blobsBefore);
    expect(t.core.db.select({ n: count() }).from(ociUploads).get()!.n).toBe(0);
    expect((await t.request("GET", l1, { token: push })).status).toBe(404);
    expect(existsSync(path.join(t.dataDir, "blobs", "uploads", l2.split("/").pop()!))).toBe(false);
  });

  test("DELETE cancels an upload; unknown sessions are 404 BLOB_UPLOAD_UNKNOWN", async () => {
    const s = await t.request("POST", `/v2/${repo}/blobs/uploads/`, { token: push });
    const location = s.headers.get("location")!;
    await t.request("PATCH", location, { token: push, raw: new TextEncoder().encode("to be cancelled") });
    expect((await t.request("DELETE", location, { token: push })).status).toBe(204);
    const gone = await expectStatus(await t.request("PATCH", location, { token: push, raw: new Uint8Array(1) }), 404);
    expect(gone.errors[0].code).toBe("BLOB_UPLOAD_UNKNOWN");
    await expectStatus(await t.request("GET", `/v2/${repo}/blobs/uploads/not-a-session`, { token: push }), 404);
  });

  test("PUT manifest by tag (201, audited), GET and HEAD by tag and by digest", async () => {
    manifest = imageManifest({ digest: sha(config), size: config.byteLength }, [{ digest: sha(layer), size: layer.byteLength }]);
    const res = await t.request("PUT", `/v2/${repo}/manifests/1.0`, { token: push, raw: manifest, headers: { "content-type": "application/vnd.oci.image.manifest.v1+json" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("docker-content-digest")).toBe(sha(manifest));
    expect(res.headers.get("location")).toBe(`/v2/${repo}/manifests/${sha(manifest)}`);
    expect(t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()).toMatchObject({
      action: "packages.publish",
      outcome: "allowed",
      actor: cast.publisher.email,
      target: `image:${repo}@${sha(manifest)}`,
      project: cast.project.slug,
    });
    for (const ref of ["1.0", sha(manifest)]) {
      const get = await t.request("GET", `/v2/${repo}/manifests/${ref}`, { token: pull, headers: { accept: "application/vnd.oci.image.manifest.v1+json" } });
      expect(get.headers.get("content-type")).toBe("application/vnd.oci.image.manifest.v1+json");
      expect(get.headers.get("docker-content-digest")).toBe(sha(manifest));
      expect(await get.text()).toBe(manifest);
      const head = await t.request("HEAD", `/v2/${repo}/manifests/${ref}`, { token: pull });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-length")).toBe(String(manifest.length));
      expect(head.headers.get("docker-content-digest")).toBe(sha(manifest));
    }
    // The same manifest again under another tag, and by digest: idempotent.
    expect((await t.request("PUT", `/v2/${repo}/manifests/latest`, { token: push, raw: manifest, headers: { "content-type": "application/vnd.oci.image.manifest.v1+json" } })).status).toBe(201);
    expect((await t.request("PUT", `/v2/${repo}/manifests/${sha(manifest)}`, { token: push, raw: manifest, headers: { "content-type": "application/vnd.oci.image.manifest.v1+json" } })).status).toBe(201);
  });

  test("manifest refusals: unknown blob, bad JSON, digest mismatch, unknown manifest", async () => {
    const ct = { "content-type": "application/vnd.oci.image.manifest.v1+json" };
    const missing = imageManifest({ digest: sha(config), size: config.byteLength }, [{ digest: sha("never pushed"), size: 12 }]);
    expect((await expectStatus(await t.request("PUT", `/v2/${repo}/manifests/bad`, { token: push, raw: missing, headers: ct }), 400)).errors[0].code).toBe("MANIFEST_BLOB_UNKNOWN");
    expect((await expectStatus(await t.request("PUT", `/v2/${repo}/manifests/bad`, { token: push, raw: "{not json", headers: ct }), 400)).errors[0].code).toBe("MANIFEST_INVALID");
    expect((await expectStatus(await t.request("PUT", `/v2/${repo}/manifests/${sha("x")}`, { token: push, raw: manifest, headers: ct }), 400)).errors[0].code).toBe("DIGEST_INVALID");
    expect((await expectStatus(await t.request("GET", `/v2/${repo}/manifests/nope`, { token: pull }), 404)).errors[0].code).toBe("MANIFEST_UNKNOWN");
    expect((await expectStatus(await t.request("GET", `/v2/${repo}/blobs/${sha("nope")}`, { token: pull }), 404)).errors[0].code).toBe("BLOB_UNKNOWN");
    expect((await expectStatus(await t.request("DELETE", `/v2/${repo}/manifests/1.0`, { token: push }), 405)).errors[0].code).toBe("UNSUPPORTED");
  });

  test("an image index over pushed manifests", async () => {
    const index = JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", digest: sha(manifest), size: manifest.length, platform: { architecture: "amd64", os: "linux" } }],
    });
    const res = await t.request("PUT", `/v2/${repo}/manifests/multi`, { token: push, raw: index, headers: { "content-type": "application/vnd.oci.image.index.v1+json" } });
    expect(res.status).toBe(201);
    const get = await t.request("GET", `/v2/${repo}/manifests/multi`, { token: pull });
    expect(get.headers.get("content-type")).toBe("application/vnd.oci.image.index.v1+json");
    expect(await get.text()).toBe(index);
  });

  test("tags list, sorted and paginated with n and last", async () => {
    expect(await expectStatus(await t.request("GET", `/v2/${repo}/tags/list`, { token: pull }), 200)).toEqual({ name: repo, tags: ["1.0", "latest", "multi"] });
    const page = await t.request("GET", `/v2/${repo}/tags/list?n=2`, { token: pull });
    expect(page.headers.get("link")).toBe(`</v2/${repo}/tags/list?n=2&last=latest>; rel="next"`);
    expect((await page.json()).tags).toEqual(["1.0", "latest"]);
    const next = await expectStatus(await t.request("GET", `/v2/${repo}/tags/list?n=2&last=latest`, { token: pull }), 200);
    expect(next.tags).toEqual(["multi"]);
    const unknown = await registryToken(cast.readerToken, `repository:${cast.project.slug}/never:pull`);
    expect((await expectStatus(await t.request("GET", `/v2/${cast.project.slug}/never/tags/list`, { token: unknown }), 404)).errors[0].code).toBe("NAME_UNKNOWN");
  });

  test("uploads stream into the blob store: the first chunk is on disk before the client sends the rest", async () => {
    const first = new Uint8Array(1024 * 1024).fill(1);
    const rest = new Uint8Array(3 * 1024 * 1024).fill(2);
    const whole = new Uint8Array([...first, ...rest]);
    const start = await t.request("POST", `/v2/${repo}/blobs/uploads/`, { token: push });
    const location = start.headers.get("location")!;
    let ctl!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) });
    ctl.enqueue(first);
    const sent = fetch(t.url + location, { method: "PATCH", headers: { authorization: `Bearer ${push}`, "content-type": "application/octet-stream" }, body, duplex: "half" } as RequestInit);
    // If the server buffered the body, nothing would reach the disk until the body ended.
    const tmp = path.join(t.dataDir, "blobs", "tmp");
    const deadline = Date.now() + 10_000;
    let onDisk = 0;
    while (Date.now() < deadline && onDisk < first.byteLength) {
      onDisk = Math.max(0, ...readdirSync(tmp).map((f) => statSync(path.join(tmp, f)).size));
      await Bun.sleep(10);
    }
    expect(onDisk).toBeGreaterThanOrEqual(first.byteLength);
    ctl.enqueue(rest);
    ctl.close();
    const res = await sent;
    expect(res.status).toBe(202);
    expect(res.headers.get("range")).toBe(`0-${whole.byteLength - 1}`);
    expect((await t.request("PUT", `${location}?digest=${encodeURIComponent(sha(whole))}`, { token: push })).status).toBe(201);
  });

  test("Range requests answer 206", async () => {
    const res = await t.request("GET", `/v2/${repo}/blobs/${sha(layer)}`, { token: pull, headers: { range: "bytes=10-19" } });
    expect(res.status).toBe(206);
    expect(res.headers.get("content-range")).toBe(`bytes 10-19/${layer.byteLength}`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(layer.subarray(10, 20));
  });

  test("cross-repository mount (201) when the caller may pull the source; otherwise a plain upload (202)", async () => {
    const target = `${cast.project.slug}/worker`;
    const token = await registryToken(cast.publisherToken, `repository:${target}:pull,push repository:${repo}:pull`);
    const res = await t.request("POST", `/v2/${target}/blobs/uploads/?mount=${encodeURIComponent(sha(layer))}&from=${encodeURIComponent(repo)}`, { token });
    expect(res.status).toBe(201);
    expect(res.headers.get("docker-content-digest")).toBe(sha(layer));
    expect((await t.request("HEAD", `/v2/${target}/blobs/${sha(layer)}`, { token })).status).toBe(200);
    const noPull = await registryToken(cast.publisherToken, `repository:${cast.project.slug}/third:pull,push`);
    expect((await t.request("POST", `/v2/${cast.project.slug}/third/blobs/uploads/?mount=${encodeURIComponent(sha(layer))}&from=${encodeURIComponent(repo)}`, { token: noPull })).status).toBe(202);
  });

  test("repository names outside <project>/<service> are refused", async () => {
    const token = await registryToken(cast.publisherToken, `repository:${cast.project.slug}/UPPER:pull,push`);
    expect((await expectStatus(await t.request("GET", `/v2/${cast.project.slug}/UPPER/tags/list`, { token }), 400)).errors[0].code).toBe("NAME_INVALID");
    const nested = await t.request("GET", `/v2/${cast.project.slug}/a/b/tags/list`, { token });
    expect(nested.status).toBe(404);
  });
});
