/**
 * The cargo routes status by status (document 3, Cargo registry), with cargo's error body: the
 * discovery document, the sparse index at every path layout with ETag/Last-Modified and 304,
 * publish framing, download, yank and unyank.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createHash } from "node:crypto";
import { desc } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "../../../../test/harness";
import { registryCast, claim, cargoPublishBody, cargoMetadata, crateArchive, type RegistryCast } from "../../../../test/support/registries";
import { auditLog } from "../../../core/tables";

let t: TestApp;
let cast: RegistryCast;

/** cargo sends the token bare, without a scheme. */
const bare = (token: string) => ({ authorization: token });

async function publishCrate(token: string, name: string, vers: string, deps: unknown[] = []) {
  return t.request("PUT", "/cargo/api/v1/crates/new", { headers: bare(token), raw: cargoPublishBody(cargoMetadata(name, vers, deps), await crateArchive(name, vers)) });
}

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
  for (const name of ["a", "ab", "abc", "serde-lite", "Mixed_Case"]) await claim(t, cast, "cargo", name);
});
afterAll(() => t.close());

describe("GET /cargo/config.json", () => {
  test("200 without credentials: where to download and publish, auth required", async () => {
    expect(await expectStatus(await t.request("GET", "/cargo/config.json"), 200)).toEqual({ dl: `${t.url}/cargo/api/v1/crates`, api: `${t.url}/cargo`, "auth-required": true });
  });
});

describe("PUT /cargo/api/v1/crates/new", () => {
  test("200 published, for every name length; the audit row commits with it", async () => {
    for (const name of ["a", "ab", "abc", "serde-lite", "Mixed_Case"]) {
      const body = await expectStatus(await publishCrate(cast.publisherToken, name, "0.1.0"), 200);
      expect(body).toEqual({ warnings: { invalid_categories: [], invalid_badges: [], other: [] } });
    }
    const row = t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()!;
    expect(row).toMatchObject({ action: "packages.publish", outcome: "allowed", target: "package:cargo:Mixed_Case@0.1.0", project: cast.project.slug });
  });

  test("400 when the framing or the metadata is malformed, with cargo's error body", async () => {
    const crate = await crateArchive("serde-lite", "0.2.0");
    const good = cargoPublishBody(cargoMetadata("serde-lite", "0.2.0"), crate);
    const cases: Uint8Array<ArrayBuffer>[] = [
      new Uint8Array([1, 2]),
      good.slice(0, good.byteLength - 10),
      (() => {
        const b = good.slice();
        new DataView(b.buffer).setUint32(0, 1_000_000, true);
        return b;
      })(),
      cargoPublishBody({ name: "serde-lite" }, crate),
      cargoPublishBody(cargoMetadata("serde-lite", "not-semver"), crate),
      cargoPublishBody(cargoMetadata("serde-lite", "0.2.0", [{ name: "x" }]), crate),
      cargoPublishBody(cargoMetadata("serde-lite", "0.2.0"), new TextEncoder().encode("not a gzip")),
      cargoPublishBody(cargoMetadata("serde-lite", "0.2.0"), await crateArchive("serde-lite", "0.3.0")),
    ];
    for (const raw of cases) {
      const body = await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { headers: bare(cast.publisherToken), raw }), 400);
      expect(body.errors[0].detail).toBeString();
    }
  });

  test("401 without a live token", async () => {
    const raw = cargoPublishBody(cargoMetadata("serde-lite", "0.2.0"), await crateArchive("serde-lite", "0.2.0"));
    const body = await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { raw }), 401);
    expect(body.errors).toHaveLength(1);
    await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/new", { raw, headers: bare("opst_" + "1".repeat(49)) }), 401);
  });

  test("403 for an unclaimed name or a caller not allowed to publish", async () => {
    expect((await expectStatus(await publishCrate(cast.publisherToken, "unclaimed-crate", "0.1.0"), 403)).errors[0].detail).toContain("not claimed");
    // The same name modulo case and `-`/`_` is the claimed crate, but it must be spelled as claimed.
    await expectStatus(await publishCrate(cast.publisherToken, "serde_lite", "0.1.0"), 403);
    expect((await expectStatus(await publishCrate(cast.readerToken, "serde-lite", "0.2.0"), 403)).errors[0].detail).toContain("packages.publish");
    await expectStatus(await publishCrate(cast.outsiderToken, "serde-lite", "0.2.0"), 403);
  });

  test("409 when the version is already published (build metadata does not make it new)", async () => {
    expect((await expectStatus(await publishCrate(cast.publisherToken, "serde-lite", "0.1.0"), 409)).errors[0].detail).toContain("already uploaded");
    await expectStatus(await publishCrate(cast.publisherToken, "serde-lite", "0.1.0+build.7"), 409);
  });

  test("413 over the body limit", async () => {
    const small = await createTestApp({ env: { OPS_MAX_PUBLISH_BYTES: "2048" } });
    try {
      const c = await registryCast(small);
      await claim(small, c, "cargo", "big");
      const raw = cargoPublishBody(cargoMetadata("big", "0.1.0"), new Uint8Array(4096));
      const body = await expectStatus(await small.request("PUT", "/cargo/api/v1/crates/new", { headers: bare(c.publisherToken), raw }), 413);
      expect(body.errors[0].detail).toContain("2048 bytes");
      // Without a Content-Length (chunked) the limit holds as the body streams in.
      const stream = new ReadableStream({
        start(ctl) {
          ctl.enqueue(raw);
          ctl.close();
        },
      });
      const res = await fetch(`${small.url}/cargo/api/v1/crates/new`, { method: "PUT", headers: bare(c.publisherToken), body: stream, duplex: "half" } as RequestInit);
      await expectStatus(res, 413);
    } finally {
      await small.close();
    }
  });
});

describe("sparse index", () => {
  test("200 at every path layout, one JSON line per version", async () => {
    await expectStatus(await publishCrate(cast.publisherToken, "serde-lite", "0.2.0", [{ name: "abc", version_req: "^0.1", features: [], optional: false, default_features: true, target: null, kind: "normal", explicit_name_in_toml: "renamed" }]), 200);
    const paths: Record<string, string> = { a: "/cargo/1/a", ab: "/cargo/2/ab", abc: "/cargo/3/a/abc", "serde-lite": "/cargo/se/rd/serde-lite", Mixed_Case: "/cargo/mi/xe/mixed_case" };
    for (const [name, path] of Object.entries(paths)) {
      const res = await t.request("GET", path, { headers: bare(cast.readerToken) });
      const text = await expectStatus<string>(res, 200);
      const lines = text.trimEnd().split("\n").map((l) => JSON.parse(l));
      expect(lines[0]).toMatchObject({ name, vers: "0.1.0", yanked: false, v: 1, features: {}, deps: [] });
      expect(lines[0].cksum).toMatch(/^[0-9a-f]{64}$/);
      expect(lines[0].pubtime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(res.headers.get("etag")).toBeString();
      expect(res.headers.get("last-modified")).toBeString();
    }
    const serde = (await (await t.request("GET", "/cargo/se/rd/serde-lite", { headers: bare(cast.readerToken) })).text()).trimEnd().split("\n");
    expect(serde).toHaveLength(2);
    expect(JSON.parse(serde[1]).deps).toEqual([{ name: "renamed", req: "^0.1", features: [], optional: false, default_features: true, target: null, kind: "normal", registry: null, package: "abc" }]);
  });

  test("the checksum in the index is the SHA-256 of the downloaded .crate", async () => {
    const line = JSON.parse((await (await t.request("GET", "/cargo/3/a/abc", { headers: bare(cast.readerToken) })).text()).trim());
    const res = await t.request("GET", "/cargo/api/v1/crates/abc/0.1.0/download", { headers: bare(cast.readerToken) });
    expect(res.status).toBe(200);
    expect(createHash("sha256").update(new Uint8Array(await res.arrayBuffer())).digest("hex")).toBe(line.cksum);
  });

  test("304 for a held ETag or Last-Modified; the ETag changes when a version is yanked", async () => {
    const first = await t.request("GET", "/cargo/2/ab", { headers: bare(cast.readerToken) });
    const etag = first.headers.get("etag")!;
    const modified = first.headers.get("last-modified")!;
    await first.text();
    expect((await t.request("GET", "/cargo/2/ab", { headers: { ...bare(cast.readerToken), "if-none-match": etag } })).status).toBe(304);
    expect((await t.request("GET", "/cargo/2/ab", { headers: { ...bare(cast.readerToken), "if-modified-since": modified } })).status).toBe(304);
    await expectStatus(await t.request("DELETE", "/cargo/api/v1/crates/ab/0.1.0/yank", { headers: bare(cast.publisherToken) }), 200);
    const after = await t.request("GET", "/cargo/2/ab", { headers: { ...bare(cast.readerToken), "if-none-match": etag } });
    expect(after.status).toBe(200);
    expect(after.headers.get("etag")).not.toBe(etag);
    expect(JSON.parse((await after.text()).trim()).yanked).toBe(true);
  });

  test("401 without a live token (bare, or with a Bearer word)", async () => {
    await expectStatus(await t.request("GET", "/cargo/1/a"), 401);
    await expectStatus(await t.request("GET", "/cargo/1/a", { headers: bare("opst_" + "2".repeat(49)) }), 401);
    await expectStatus(await t.request("GET", "/cargo/1/a", { token: cast.readerToken }), 200);
  });

  test("403 for a caller not allowed to read the project's packages", async () => {
    expect((await expectStatus(await t.request("GET", "/cargo/se/rd/serde-lite", { headers: bare(cast.outsiderToken) }), 403)).errors[0].detail).toContain("packages.read");
  });

  test("404 for an unknown crate, a claimed crate with no version, or the wrong layout", async () => {
    await expectStatus(await t.request("GET", "/cargo/no/pe/nope-crate", { headers: bare(cast.readerToken) }), 404);
    await claim(t, cast, "cargo", "empty-crate");
    await expectStatus(await t.request("GET", "/cargo/em/pt/empty-crate", { headers: bare(cast.readerToken) }), 404);
    await expectStatus(await t.request("GET", "/cargo/xx/yy/serde-lite", { headers: bare(cast.readerToken) }), 404);
    await expectStatus(await t.request("GET", "/cargo/3/b/abc", { headers: bare(cast.readerToken) }), 404);
  });
});

describe("GET /cargo/api/v1/crates/{name}/{version}/download", () => {
  test("200, 401, 403 and 404", async () => {
    const ok = await t.request("GET", "/cargo/api/v1/crates/serde-lite/0.1.0/download", { headers: bare(cast.readerToken) });
    expect(ok.status).toBe(200);
    expect(new Uint8Array(await ok.arrayBuffer()).slice(0, 2)).toEqual(new Uint8Array([0x1f, 0x8b]));
    await expectStatus(await t.request("GET", "/cargo/api/v1/crates/serde-lite/0.1.0/download"), 401);
    await expectStatus(await t.request("GET", "/cargo/api/v1/crates/serde-lite/0.1.0/download", { headers: bare(cast.outsiderToken) }), 403);
    await expectStatus(await t.request("GET", "/cargo/api/v1/crates/serde-lite/9.9.9/download", { headers: bare(cast.readerToken) }), 404);
    await expectStatus(await t.request("GET", "/cargo/api/v1/crates/nope-crate/0.1.0/download", { headers: bare(cast.readerToken) }), 404);
  });
});

describe("yank and unyank", () => {
  test("200 (audited), 401, 403 and 404", async () => {
    expect(await expectStatus(await t.request("DELETE", "/cargo/api/v1/crates/abc/0.1.0/yank", { headers: bare(cast.publisherToken) }), 200)).toEqual({ ok: true });
    expect(t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()).toMatchObject({ action: "packages.publish", target: "package:cargo:abc@0.1.0", context: expect.stringContaining("package.yank") });
    expect(await expectStatus(await t.request("PUT", "/cargo/api/v1/crates/abc/0.1.0/unyank", { headers: bare(cast.publisherToken) }), 200)).toEqual({ ok: true });
    expect(t.core.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(1).get()).toMatchObject({ action: "packages.publish", target: "package:cargo:abc@0.1.0", context: expect.stringContaining("package.unyank") });
    expect(JSON.parse((await (await t.request("GET", "/cargo/3/a/abc", { headers: bare(cast.readerToken) })).text()).trim()).yanked).toBe(false);

    for (const [method, path] of [["DELETE", "/cargo/api/v1/crates/abc/0.1.0/yank"], ["PUT", "/cargo/api/v1/crates/abc/0.1.0/unyank"]] as const) {
      await expectStatus(await t.request(method, path), 401);
      expect((await expectStatus(await t.request(method, path, { headers: bare(cast.readerToken) }), 403)).errors[0].detail).toContain("packages.publish");
      await expectStatus(await t.request(method, path.replace("0.1.0", "4.0.0"), { headers: bare(cast.publisherToken) }), 404);
      await expectStatus(await t.request(method, path.replace("abc", "nope-crate"), { headers: bare(cast.publisherToken) }), 404);
    }
  });
});
