/**
 * Image signing: the estate key (generated once, 0600, P-256), GET /api/v1/signing/public-key
 * (404 before the key exists, 200 PEM after), a cosign-style signature verified independently of
 * ops's code — the signature manifest and payload copied out with real skopeo over HTTP with a
 * registry token, checked with `openssl dgst -sha256 -verify` against the PEM the route serves —
 * and the deploy gate's verifyImageSignature refusing what the estate key did not sign.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createHash, generateKeyPairSync, sign } from "node:crypto";
import path from "node:path";
import { desc } from "drizzle-orm";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { auditLog } from "../src/core/tables";
import { SYSTEM_ACTOR } from "../src/core/audit";
import { registryCast, run, type RegistryCast } from "./support/registries";
import { pushImage, storedBlob, storedManifest } from "../src/domains/registries/service";
import { packImage, type PackedImage } from "../src/domains/builds/image";
import { ensureSigningKey, signImage, signatureTag, signingKeyPath, verifyImageSignature, SIGNATURE_ANNOTATION, SIMPLE_SIGNING } from "../src/domains/builds/signing";
import { buildsModule } from "../src/domains/builds";
import { pushPacked, skopeo } from "./support/builds";

let t: TestApp;
let cast: RegistryCast;
let host: string;
let work: string;
let repo: string;
let digest: string;
let other: string;


async function buildAndPush(name: string, content: string): Promise<string> {
  const out = path.join(work, name);
  mkdirSync(out, { recursive: true });
  writeFileSync(path.join(out, "server.js"), content);
  const img: PackedImage = await packImage({ outputDir: out, layerFile: path.join(work, `${name}.tar.gz`), start: "node server.js", port: 8080, commit: "c0ffee", commitTime: Date.UTC(2026, 2, 4), source: repo });
  const pushed = await pushPacked(t.core, img, repo, name);
  return pushed.digest;
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  host = new URL(t.url).host;
  repo = `${cast.project.slug}/web`;
  work = tempDir("ops-signing-");
  digest = await buildAndPush("v1", "console.log(1)\n");
  other = await buildAndPush("v2", "console.log(2)\n");
});
afterAll(async () => {
  await t.close();
  rmSync(work, { recursive: true, force: true });
});

describe("GET /api/v1/signing/public-key", () => {
  test("404 while no signing key exists (public: no credential needed)", async () => {
    const body = await expectStatus(await t.request("GET", "/api/v1/signing/public-key"), 404);
    expect(body.error).toBe("not_found");
    expect(body.message).toContain("signing is not configured");
  });

  test("200 text/plain PEM once ops serve generated the key (0600, ECDSA P-256), with its fingerprint", async () => {
    await buildsModule.onServe!(t.core);
    expect(statSync(signingKeyPath(t.core)).mode & 0o777).toBe(0o600);
    const res = await t.request("GET", "/api/v1/signing/public-key");
    const pem = await expectStatus<string>(res, 200);
    expect(res.headers.get("content-type")).toStartWith("text/plain");
    expect(pem).toStartWith("-----BEGIN PUBLIC KEY-----\n");
    const file = path.join(work, "pub.pem");
    writeFileSync(file, pem);
    const text = await run(["openssl", "pkey", "-pubin", "-in", file, "-noout", "-text"], { cwd: work });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("prime256v1");
    const der = await run(["sh", "-c", `openssl pkey -pubin -in ${file} -outform DER | sha256sum`], { cwd: work });
    expect(res.headers.get("x-ops-key-fingerprint")).toBe(`sha256:${der.stdout.split(" ")[0]}`);
    const before = readFileSync(signingKeyPath(t.core), "utf8");
    ensureSigningKey(t.core);
    await buildsModule.onServe!(t.core);
    expect(readFileSync(signingKeyPath(t.core), "utf8")).toBe(before);
  });

  test("is in OpenAPI as a public route", async () => {
    const doc = await expectStatus(await t.request("GET", "/api/docs/json"), 200);
    const op = doc.paths["/api/v1/signing/public-key"].get;
    expect(Object.keys(op.responses).sort()).toEqual(["200", "404"]);
  });
});

describe("signImage", () => {
  test("pushes the sha256-<hex>.sig manifest; skopeo copies it out and openssl verifies the payload with the served PEM", async () => {
    const signed = await signImage(t.core, repo, digest);
    expect(signed).toMatchObject({ tag: signatureTag(digest), added: true });
    const audit = t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()!;
    expect(audit).toMatchObject({ action: "packages.publish", actor: "system", target: `image:${repo}@${signed.signatureDigest}` });
    expect(JSON.parse(audit.context!)).toMatchObject({ op: "image.push", tag: signed.tag, signed: digest });

    const pem = await (await t.request("GET", "/api/v1/signing/public-key")).text();
    const dir = tempDir("ops-sig-out-");
    writeFileSync(path.join(dir, "pub.pem"), pem);
    const ref = `docker://${host}/${repo}:sha256-${digest.slice(7)}.sig`;
    const raw = await skopeo(["inspect", "--raw", "--tls-verify=false", "--creds", `ci:${cast.readerToken}`, ref]);
    expect(raw.code).toBe(0);
    const manifest = JSON.parse(raw.stdout);
    expect(manifest.mediaType).toBe("application/vnd.oci.image.manifest.v1+json");
    expect(manifest.layers).toHaveLength(1);
    const layer = manifest.layers[0];
    expect(layer.mediaType).toBe(SIMPLE_SIGNING);
    const copy = await skopeo(["copy", "--src-tls-verify=false", "--src-creds", `ci:${cast.readerToken}`, ref, `oci:${path.join(dir, "layout")}:sig`]);
    expect(copy.code).toBe(0);
    const payloadFile = path.join(dir, "layout", "blobs", "sha256", layer.digest.slice(7));
    const payload = JSON.parse(readFileSync(payloadFile, "utf8"));
    expect(payload).toEqual({
      critical: { identity: { "docker-reference": `${host}/${repo}` }, image: { "docker-manifest-digest": digest }, type: "cosign container image signature" },
      optional: null,
    });
    writeFileSync(path.join(dir, "sig.der"), Buffer.from(layer.annotations[SIGNATURE_ANNOTATION], "base64"));
    const ok = await run(["openssl", "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", payloadFile], { cwd: dir });
    expect(ok.stdout.trim()).toBe("Verified OK");
    expect(ok.code).toBe(0);
    writeFileSync(path.join(dir, "tampered"), readFileSync(payloadFile, "utf8").replace(digest, other));
    const bad = await run(["openssl", "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "tampered"], { cwd: dir });
    expect(bad.code).not.toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });

  test("signing again adds nothing; the repository's newest image is still the image", async () => {
    const before = await storedManifest(t.core, repo, signatureTag(digest));
    const again = await signImage(t.core, repo, digest);
    expect(again.added).toBe(false);
    expect((await storedManifest(t.core, repo, signatureTag(digest)))!.digest).toBe(before!.digest);
    const body = await expectStatus(await t.request("GET", `/api/v1/projects/${cast.project.slug}/packages`, { token: cast.reader.session }), 200);
    expect(body.images[0].digest).toBe(other);
  });

  test("a digest that is not in the repository cannot be signed", async () => {
    await expect(signImage(t.core, repo, `sha256:${"0".repeat(64)}`)).rejects.toMatchObject({ code: "not_found" });
  });
});

describe("verifyImageSignature", () => {
  test("accepts the estate's signature", async () => {
    expect(await verifyImageSignature(t.core, repo, digest)).toEqual({ ok: true, fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  test("refuses an unsigned digest, an unknown digest, a malformed one, another repository", async () => {
    expect(await verifyImageSignature(t.core, repo, other)).toEqual({ ok: false, reason: `${repo}@${other} is not signed` });
    expect((await verifyImageSignature(t.core, repo, `sha256:${"1".repeat(64)}`)).ok).toBe(false);
    expect((await verifyImageSignature(t.core, repo, "latest")).ok).toBe(false);
    expect((await verifyImageSignature(t.core, `${cast.project.slug}/api`, digest)).ok).toBe(false);
  });

  test("refuses a cosign-shaped signature by another key, and a valid signature of another digest copied under this tag", async () => {
    const foreign = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const payload = new TextEncoder().encode(
      JSON.stringify({ critical: { identity: { "docker-reference": `${host}/${repo}` }, image: { "docker-manifest-digest": other }, type: "cosign container image signature" }, optional: null }),
    );
    const pushSig = async (layers: Array<{ bytes: Uint8Array; signature: string }>) => {
      const config = new TextEncoder().encode(JSON.stringify({ rootfs: { type: "layers", diff_ids: [] }, config: {} }));
      const sha = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
      const manifest = new TextEncoder().encode(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: "application/vnd.oci.image.manifest.v1+json",
          config: { mediaType: "application/vnd.oci.image.config.v1+json", size: config.byteLength, digest: sha(config) },
          layers: layers.map((l) => ({ mediaType: SIMPLE_SIGNING, size: l.bytes.byteLength, digest: sha(l.bytes), annotations: { [SIGNATURE_ANNOTATION]: l.signature } })),
        }),
      );
      await pushImage(t.core, {
        repository: repo,
        blobs: [{ digest: sha(config), size: config.byteLength, source: { bytes: config } }, ...layers.map((l) => ({ digest: sha(l.bytes), size: l.bytes.byteLength, source: { bytes: l.bytes } }))],
        manifest,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        tag: signatureTag(other),
        pusher: { subject: "intruder", audit: SYSTEM_ACTOR },
      });
    };
    await pushSig([{ bytes: payload, signature: sign("sha256", payload, foreign).toString("base64") }]);
    const byOther = await verifyImageSignature(t.core, repo, other);
    expect(byOther.ok).toBe(false);
    expect(!byOther.ok && byOther.reason).toContain("signature not made by the estate key");

    const sigOfFirst = await storedManifest(t.core, repo, signatureTag(digest));
    const firstLayer = JSON.parse(new TextDecoder().decode(sigOfFirst!.bytes)).layers[0];
    const firstPayload = new Uint8Array(await storedBlob(t.core, repo, firstLayer.digest)!.arrayBuffer());
    await pushSig([{ bytes: firstPayload, signature: firstLayer.annotations[SIGNATURE_ANNOTATION] }]);
    const copied = await verifyImageSignature(t.core, repo, other);
    expect(copied.ok).toBe(false);
    expect(!copied.ok && copied.reason).toContain("payload signs another digest");

    // Signing it for real appends the estate's layer beside the intruder's and then verifies.
    expect((await signImage(t.core, repo, other)).added).toBe(true);
    expect(await verifyImageSignature(t.core, repo, other)).toMatchObject({ ok: true });
    const layers = JSON.parse(new TextDecoder().decode((await storedManifest(t.core, repo, signatureTag(other)))!.bytes)).layers;
    expect(layers).toHaveLength(2);
  });
});
