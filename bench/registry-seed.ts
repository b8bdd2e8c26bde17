/**
 * Shared set-up of the registry benchmarks: a data dir seeded offline (a project, a machine
 * operator with the developer role and a minted token, claimed names) before the compiled binary
 * serves it, and publish bodies built the way the clients build them. Not a benchmark itself.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createHash } from "node:crypto";
import { loadConfig } from "../src/core/config";
import { createCore, closeCore } from "../src/app";
import { tx } from "../src/core/db/client";
import { SYSTEM_ACTOR } from "../src/core/audit";
import { createProject, insertOperator, upsertMembership, fixedRole, insertToken } from "../src/domains/access/service";
import { claimPackage } from "../src/domains/registries/service";

export interface Seeded {
  dataDir: string;
  token: string;
}

/** Seed a fresh data dir: project `bench`, a machine developer with a token, and `claims`. */
export async function seedDataDir(claims: Array<{ registry: "npm" | "cargo"; name: string }>): Promise<Seeded> {
  const dataDir = path.join(mkdtempSync(path.join(tmpdir(), "ops-bench-registry-")), "data");
  const core = createCore(loadConfig({ OPS_DATA_DIR: dataDir, OPS_LOG_LEVEL: "error" }), { logSink: () => {} });
  try {
    const project = createProject(core, { slug: "bench", name: "bench" }, SYSTEM_ACTOR);
    const token = tx(core.db, (t) => {
      const op = insertOperator(core, t, { kind: "machine", handle: "bench-ci", displayName: "bench" }, null);
      const role = fixedRole(core, "developer");
      upsertMembership(core, t, op.id, project.id, role.id);
      return insertToken(core, t, { operatorId: op.id, name: "bench", kind: "api", role, projectId: project.id, expiresAt: null }).secret;
    });
    const ref = core.access.findProject("bench")!;
    for (const c of claims) claimPackage(core, ref, c.registry, c.name, SYSTEM_ACTOR);
    return { dataDir, token };
  } finally {
    await closeCore(core);
  }
}

/** A publish body as libnpmpublish sends it. */
export function npmPublishBody(name: string, version: string, tarball: Uint8Array, manifest: Record<string, unknown>): string {
  const shasum = createHash("sha1").update(tarball).digest("hex");
  const integrity = `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
  return JSON.stringify({
    _id: name,
    name,
    "dist-tags": { latest: version },
    // npm sends its own idea of the tarball URL; registries must compute theirs (Verdaccio needs the field).
    versions: { [version]: { ...manifest, name, version, _id: `${name}@${version}`, dist: { shasum, integrity, tarball: `http://registry.invalid/${name}/-/${name}-${version}.tgz` } } },
    access: null,
    _attachments: { [`${name}-${version}.tgz`]: { content_type: "application/octet-stream", data: Buffer.from(tarball).toString("base64"), length: tarball.byteLength } },
  });
}

/** A gzip'd tar of `files` (path → text), as `npm pack` lays a package out. */
export function tarGz(files: Record<string, string>): Uint8Array<ArrayBuffer> {
  const blocks: Buffer[] = [];
  for (const [name, text] of Object.entries(files)) {
    const data = Buffer.from(text);
    const h = Buffer.alloc(512);
    h.write(name, 0, 100);
    h.write("0000644\0", 100);
    h.write("0000000\0", 108);
    h.write("0000000\0", 116);
    h.write(data.length.toString(8).padStart(11, "0") + "\0", 124);
    h.write("00000000000\0", 136);
    h.write("        ", 148);
    h.write("0", 156);
    h.write("ustar\0", 257);
    h.write("00", 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148);
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return new Uint8Array(Bun.gzipSync(Buffer.concat(blocks)));
}

/** PUT every body, failing loudly on anything but 2xx. */
export async function putAll(urls: Array<{ url: string; body: BodyInit; headers: Record<string, string> }>): Promise<void> {
  for (const u of urls) {
    const res = await fetch(u.url, { method: "PUT", body: u.body, headers: u.headers });
    if (res.status >= 300) throw new Error(`PUT ${u.url}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
}
