/**
 * Base images for the builds suites, made the way a user makes one for ops: a tiny root file
 * system (Debian's static busybox as /bin/busybox, /bin/sh a link to it) written as a one-layer OCI
 * layout on disk, then copied into ops's embedded registry with real skopeo and a project token.
 * Layers are written entry by entry with the `tar` package's headers, so a suite can also make a
 * hostile one (a `..` path, a file through a symlink that leaves the root).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import path from "node:path";
import { Header } from "tar";
import { tempDir } from "../harness";
import { skopeo } from "./builds";

export interface LayerEntry {
  path: string;
  type: "File" | "Directory" | "SymbolicLink";
  mode?: number;
  body?: Uint8Array | string;
  linkpath?: string;
}

/** Debian's static busybox (package busybox-static). */
export const BUSYBOX = "/bin/busybox";

/** The entries of a busybox root: /bin/busybox, /bin/sh and /bin/cat links to it, /etc, /tmp. */
export function busyboxRoot(extra: LayerEntry[] = []): LayerEntry[] {
  return [
    { path: "bin/", type: "Directory", mode: 0o755 },
    { path: "bin/busybox", type: "File", mode: 0o755, body: readFileSync(BUSYBOX) },
    { path: "bin/sh", type: "SymbolicLink", linkpath: "busybox" },
    { path: "bin/cat", type: "SymbolicLink", linkpath: "busybox" },
    { path: "etc/", type: "Directory", mode: 0o755 },
    { path: "tmp/", type: "Directory", mode: 0o1777 },
    ...extra,
  ];
}

/** An uncompressed tar of `entries`, in the order given, owned by root. */
export function tarOf(entries: LayerEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = e.body === undefined ? Buffer.alloc(0) : Buffer.from(e.body);
    const h = new Header({ path: e.path, mode: e.mode ?? (e.type === "Directory" ? 0o755 : 0o644), uid: 0, gid: 0, size: e.type === "File" ? body.length : 0, mtime: new Date(Date.UTC(2026, 0, 1)), type: e.type, linkpath: e.linkpath ?? "", uname: "", gname: "" });
    h.encode();
    blocks.push(h.block!);
    if (e.type === "File" && body.length > 0) {
      blocks.push(body);
      const pad = (512 - (body.length % 512)) % 512;
      if (pad > 0) blocks.push(Buffer.alloc(pad));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

const sha = (b: Uint8Array | string) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

export interface BaseLayout {
  dir: string;
  tag: string;
  layerDigest: string;
  diffId: string;
  configDigest: string;
}

/** A one-layer OCI layout of `entries` with `config` (Env, User, Labels …) at `<dir>:<tag>`. */
export function writeLayout(entries: LayerEntry[], config: Record<string, unknown>, tag = "1"): BaseLayout {
  const dir = tempDir("ops-base-layout-");
  const blobs = path.join(dir, "blobs", "sha256");
  mkdirSync(blobs, { recursive: true });
  const put = (bytes: Uint8Array | string) => {
    const digest = sha(bytes);
    writeFileSync(path.join(blobs, digest.slice(7)), bytes);
    return { digest, size: Buffer.byteLength(bytes) };
  };
  const tar = tarOf(entries);
  const layer = put(gzipSync(tar));
  const cfg = put(JSON.stringify({ architecture: "amd64", os: "linux", config, rootfs: { type: "layers", diff_ids: [sha(tar)] }, history: [{ created: "2026-01-01T00:00:00Z", created_by: "test base" }] }));
  const manifest = put(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", ...cfg },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", ...layer }],
    }),
  );
  writeFileSync(path.join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  writeFileSync(
    path.join(dir, "index.json"),
    JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", ...manifest, annotations: { "org.opencontainers.image.ref.name": tag } }] }),
  );
  return { dir, tag, layerDigest: layer.digest, diffId: sha(tar), configDigest: cfg.digest };
}

/** `skopeo copy oci:<layout> docker://<host>/<repository>:<tag>` with `token` as the password; throws with skopeo's output on failure. */
export async function pushLayout(layout: BaseLayout, host: string, repository: string, tag: string, token: string): Promise<void> {
  const res = await skopeo(["copy", "--dest-tls-verify=false", "--dest-creds", `ci:${token}`, `oci:${layout.dir}:${layout.tag}`, `docker://${host}/${repository}:${tag}`]);
  if (res.code !== 0) throw new Error(`skopeo copy to ${repository}:${tag} failed (${res.code}): ${res.stderr}`);
}

/** The base config a busybox base carries: a PATH, a user of its own, a label. */
export const BUSYBOX_CONFIG = { Env: ["PATH=/bin:/usr/bin", "BASE_FLAVOUR=busybox"], User: "65534:65534", Labels: { "org.example.base": "busybox" }, Healthcheck: { Test: ["CMD", "false"] } };
