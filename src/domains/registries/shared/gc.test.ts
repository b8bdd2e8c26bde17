/**
 * The orphan GC `registries.gc`: blobs no row refers to go once they are past the grace period;
 * referenced blobs, other domains' blobs and young blobs stay; idle upload sessions and stray
 * append files are removed. Deduplication: the same bytes published twice are one blob.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { writeFileSync, existsSync, utimesSync } from "node:fs";
import path from "node:path";
import { count } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "../../../../test/harness";
import { registryCast, claim, npmPublishBody, type RegistryCast } from "../../../../test/support/registries";
import { putBlob } from "./blobs";
import { GC_TASK, collectGarbage } from "./gc";
import { registryBlobs, packageFiles } from "./tables";
import { ociUploads } from "../oci/tables";
import { tarGz } from "../../../../test/support/registries";

let t: TestApp;
let cast: RegistryCast;

beforeAll(async () => {
  t = await createTestApp();
  cast = await registryCast(t);
});
afterAll(() => t.close());

describe("registries.gc", () => {
  test("is a scheduled task that sweeps orphans once they are an hour old", async () => {
    const orphan = await putBlob(t.core, "bytes no row will ever refer to");
    const foreign = await t.core.blobs.put("another domain's blob, not in the registries ledger");
    t.clock.advance(30 * 60 * 1000);
    await t.core.scheduler.runNow(GC_TASK);
    expect(await t.core.blobs.has(orphan.digest)).toBe(true);
    t.clock.advance(31 * 60 * 1000);
    await t.core.scheduler.runNow(GC_TASK);
    expect(await t.core.blobs.has(orphan.digest)).toBe(false);
    expect(t.core.db.select({ n: count() }).from(registryBlobs).get()!.n).toBe(0);
    expect(await t.core.blobs.has(foreign.digest)).toBe(true);
  });

  test("keeps published archives; identical bytes are stored once", async () => {
    await claim(t, cast, "npm", "@ops/one");
    const tarball = await tarGz({ "package/package.json": JSON.stringify({ name: "@ops/one", version: "1.0.0" }) });
    await expectStatus(await t.request("PUT", "/npm/@ops%2fone", { token: cast.publisherToken, body: npmPublishBody("@ops/one", "1.0.0", tarball) }), 201);
    t.clock.advance(2 * 60 * 60 * 1000);
    const report = await collectGarbage(t.core);
    expect(report.blobsDeleted).toBe(0);
    const file = t.core.db.select().from(packageFiles).get()!;
    expect(await t.core.blobs.has(file.digest)).toBe(true);
    const again = await putBlob(t.core, tarball);
    expect(again.created).toBe(false);
    expect(again.digest).toBe(file.digest);
  });

  test("ends idle upload sessions and removes stray append files", async () => {
    const service = new URL(t.url).host;
    const tokenRes = await t.request("GET", `/v2/token?service=${service}&scope=repository:${cast.project.slug}/svc:pull,push`, { headers: { authorization: `Basic ${btoa(`x:${cast.publisherToken}`)}` } });
    const token = (await tokenRes.json()).token;
    const start = await t.request("POST", `/v2/${cast.project.slug}/svc/blobs/uploads/`, { token });
    const location = start.headers.get("location")!;
    await t.request("PATCH", location, { token, raw: new TextEncoder().encode("first chunk"), headers: { "content-range": "0-10" } });
    await t.request("PATCH", location, { token, raw: new TextEncoder().encode("second"), headers: { "content-range": "11-16" } });
    const id = location.split("/").pop()!;
    const appendFile = path.join(t.dataDir, "blobs", "uploads", id);
    expect(existsSync(appendFile)).toBe(true);
    const stray = path.join(t.dataDir, "blobs", "uploads", "left-by-a-crash");
    writeFileSync(stray, "x");
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    utimesSync(stray, old, old);

    t.clock.advance(25 * 60 * 60 * 1000);
    const report = await collectGarbage(t.core);
    expect(report.uploadsExpired).toBe(1);
    expect(report.strayFiles).toBe(1);
    expect(t.core.db.select({ n: count() }).from(ociUploads).get()!.n).toBe(0);
    expect(existsSync(appendFile)).toBe(false);
    expect(existsSync(stray)).toBe(false);
  });
});
