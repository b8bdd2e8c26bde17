/**
 * Test helpers of the registries domain: a project with a publisher, a reader and an outsider
 * (each with a minted token, as clients use), archives built with `tar`, and a way to run the
 * real clients (npm, cargo, skopeo) without blocking the in-process server.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createHash } from "node:crypto";
import { create as tarCreate } from "tar";
import type { TestApp } from "../harness";
import { tempDir } from "../harness";
import { makePerson, makeProject, mintToken, type Person } from "../fixtures";
import type { ProjectRow } from "../../src/domains/access/service";

export interface RegistryCast {
  project: ProjectRow;
  /** developer in the project: packages.read and packages.publish. */
  publisher: Person;
  publisherToken: string;
  /** viewer in the project: packages.read only. */
  reader: Person;
  readerToken: string;
  /** developer in another project only. */
  outsider: Person;
  outsiderToken: string;
}

/** A project and the three callers every registry test needs. */
export async function registryCast(t: TestApp): Promise<RegistryCast> {
  const project = makeProject(t);
  const other = makeProject(t);
  const publisher = await makePerson(t, [{ role: "developer", project: project.slug }]);
  const reader = await makePerson(t, [{ role: "viewer", project: project.slug }]);
  const outsider = await makePerson(t, [{ role: "developer", project: other.slug }]);
  return {
    project,
    publisher,
    publisherToken: mintToken(t, publisher.principal, { role: "developer", project: project.slug }),
    reader,
    readerToken: mintToken(t, reader.principal, { role: "viewer", project: project.slug }),
    outsider,
    outsiderToken: mintToken(t, outsider.principal, { role: "developer", project: other.slug }),
  };
}

/** Claim `name` in `registry` for the cast's project (201). */
export async function claim(t: TestApp, cast: RegistryCast, registry: "npm" | "cargo", name: string): Promise<void> {
  const res = await t.request("PUT", `/api/v1/projects/${cast.project.slug}/packages/${registry}/${encodeURIComponent(name)}`, { token: cast.publisher.session });
  if (res.status !== 201 && res.status !== 200) throw new Error(`claim ${name}: ${res.status} ${await res.text()}`);
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run a client asynchronously (the server lives in this process), with a timeout. */
export async function run(cmd: string[], opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number }): Promise<RunResult> {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...opts.env }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => proc.kill(), opts.timeoutMs ?? 120_000);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  const code = await proc.exited;
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** Write files (path → text) under `dir`. */
export function writeTree(dir: string, files: Record<string, string | Uint8Array>): void {
  for (const [rel, content] of Object.entries(files)) {
    const p = path.join(dir, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, content);
  }
}

/** A gzip'd tar of `files` (relative paths, as given) built with `tar`. */
export async function tarGz(files: Record<string, string | Uint8Array>): Promise<Uint8Array<ArrayBuffer>> {
  const dir = tempDir("ops-tar-");
  writeTree(dir, files);
  const chunks: Buffer[] = [];
  const stream = tarCreate({ gzip: true, cwd: dir, portable: true }, Object.keys(files));
  for await (const c of stream as unknown as AsyncIterable<Buffer>) chunks.push(c);
  return new Uint8Array(Buffer.concat(chunks));
}

/** An npm publish body as libnpmpublish builds it, for a tarball and manifest. */
export function npmPublishBody(name: string, version: string, tarball: Uint8Array, manifest: Record<string, unknown> = {}, tag = "latest"): Record<string, unknown> {
  const shasum = createHash("sha1").update(tarball).digest("hex");
  const integrity = `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
  return {
    _id: name,
    name,
    "dist-tags": { [tag]: version },
    versions: { [version]: { name, version, ...manifest, _id: `${name}@${version}`, dist: { shasum, integrity, tarball: `http://x/${name}/-/${name}-${version}.tgz` } } },
    access: null,
    _attachments: { [`${name}-${version}.tgz`]: { content_type: "application/octet-stream", data: Buffer.from(tarball).toString("base64"), length: tarball.byteLength } },
  };
}

/** A valid npm tarball for `name@version` with `extra` package.json fields. */
export function npmTarball(name: string, version: string, extra: Record<string, unknown> = {}): Promise<Uint8Array<ArrayBuffer>> {
  return tarGz({ "package/package.json": JSON.stringify({ name, version, ...extra }), "package/index.js": "module.exports = 1;\n" });
}

export { cargoPublishBody } from "../../src/domains/registries/cargo/service";

/** Minimal cargo publish metadata. */
export function cargoMetadata(name: string, vers: string, deps: unknown[] = []): Record<string, unknown> {
  return { name, vers, deps, features: {}, authors: [], description: "test crate", license: "MIT", links: null, rust_version: null, readme: null, keywords: [], categories: [], badges: {} };
}

/** A valid .crate for `name@vers`. */
export function crateArchive(name: string, vers: string): Promise<Uint8Array<ArrayBuffer>> {
  const root = `${name}-${vers}`;
  return tarGz({ [`${root}/Cargo.toml`]: `[package]\nname = "${name}"\nversion = "${vers}"\nedition = "2021"\n`, [`${root}/src/lib.rs`]: "pub fn f() -> u32 { 1 }\n" });
}

export interface RawEntry {
  name: string;
  /** ustar type flag: "0" file, "1" hard link, "2" symlink, "5" directory, "6" FIFO. */
  type?: "0" | "1" | "2" | "5" | "6";
  data?: Uint8Array | string;
  link?: string;
}

/**
 * A gzip'd tar written header by header, for archives `tar` itself refuses to create (absolute
 * paths, `..`, links): the hostile input tests need them byte for byte.
 */
export function rawTarGz(entries: RawEntry[]): Uint8Array<ArrayBuffer> {
  const blocks: Uint8Array[] = [];
  const enc = new TextEncoder();
  const field = (buf: Uint8Array, off: number, len: number, value: string) => buf.set(enc.encode(value).subarray(0, len), off);
  const octal = (n: number, len: number) => n.toString(8).padStart(len - 1, "0") + "\0";
  for (const e of entries) {
    const data = typeof e.data === "string" ? enc.encode(e.data) : (e.data ?? new Uint8Array(0));
    const type = e.type ?? "0";
    const size = type === "0" ? data.byteLength : 0;
    const h = new Uint8Array(512);
    field(h, 0, 100, e.name);
    field(h, 100, 8, octal(type === "5" ? 0o755 : 0o644, 8));
    field(h, 108, 8, octal(0, 8));
    field(h, 116, 8, octal(0, 8));
    field(h, 124, 12, octal(size, 12));
    field(h, 136, 12, octal(0, 12));
    field(h, 148, 8, "        ");
    field(h, 156, 1, type);
    field(h, 157, 100, e.link ?? "");
    field(h, 257, 6, "ustar\0");
    field(h, 263, 2, "00");
    let sum = 0;
    for (const b of h) sum += b;
    field(h, 148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
    blocks.push(h);
    if (size > 0) {
      const padded = new Uint8Array(Math.ceil(size / 512) * 512);
      padded.set(data);
      blocks.push(padded);
    }
  }
  blocks.push(new Uint8Array(1024));
  return new Uint8Array(Bun.gzipSync(Buffer.concat(blocks)));
}

/**
 * Write a one-layer OCI image layout in `dir`: the layer is `tar` gzipped, the image config is
 * `image` with its rootfs filled in, and the manifest is tagged `tag` in index.json.
 */
export function writeOciLayout(dir: string, tar: Uint8Array<ArrayBuffer>, image: Record<string, unknown>, tag: string): { manifestDigest: string; layerDigest: string } {
  const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
  const layer = Bun.gzipSync(tar);
  const config = new TextEncoder().encode(JSON.stringify({ ...image, rootfs: { type: "layers", diff_ids: [`sha256:${sha(tar)}`] } }));
  const manifest = new TextEncoder().encode(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: `sha256:${sha(config)}`, size: config.byteLength },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: `sha256:${sha(layer)}`, size: layer.byteLength }],
    }),
  );
  const manifestDigest = `sha256:${sha(manifest)}`;
  mkdirSync(path.join(dir, "blobs", "sha256"), { recursive: true });
  for (const b of [layer, config, manifest]) writeFileSync(path.join(dir, "blobs", "sha256", sha(b)), b);
  writeFileSync(path.join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(
    path.join(dir, "index.json"),
    JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", digest: manifestDigest, size: manifest.byteLength, annotations: { "org.opencontainers.image.ref.name": tag } }] }),
  );
  return { manifestDigest, layerDigest: `sha256:${sha(layer)}` };
}
