/**
 * Where backups go: a local directory or an S3 bucket prefix (`s3://bucket/prefix`, through Bun's
 * S3 client, endpoint and credentials from OPS_BACKUP_S3_*). Both hold the same layout under their
 * root: `objects/<ab>/<name>` (content-addressed, written once), `manifests/<id>.json` (one per
 * backup) and, for encrypted backups, `keyring.json`.
 */
import { S3Client } from "bun";
import { closeSync, copyFileSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { OpsError } from "../../core/errors";
import { uuidv7 } from "../../core/ids";

export interface S3Settings {
  endpoint: string | null;
  region: string;
  accessKeyId: string | null;
  secretAccessKey: string | null;
}

export interface BackupTarget {
  /** `dir /abs/path` or `s3://bucket/prefix`, for messages. */
  readonly label: string;
  /** Store the file at `key`. `link` may hard-link instead of copying (same file system, immutable source). */
  putFile(key: string, file: string, opts?: { link?: boolean }): Promise<void>;
  putBytes(key: string, bytes: Uint8Array): Promise<void>;
  /** Bytes at `key`, or null when there is none. */
  getBytes(key: string): Promise<Uint8Array | null>;
  /** Download `key` into `file`; `not_found` when there is none. */
  getFile(key: string, file: string): Promise<void>;
  /** Every key under `prefix`. */
  list(prefix: string): Promise<string[]>;
  /** Every key under `prefix` with when it was written. */
  listAged(prefix: string): Promise<Array<{ key: string; modifiedMs: number }>>;
  delete(key: string): Promise<void>;
}

export function objectKey(name: string): string {
  return `objects/${name.slice(0, 2)}/${name}`;
}

/** fsync a file or a directory by name. */
function fsyncPath(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function safeKey(key: string): string {
  if (key.split("/").some((p) => p === "" || p === "." || p === "..")) throw new OpsError("validation_failed", `Not a backup key: ${key}`);
  return key;
}

/** A backup place on the local file system. Writes land whole: temp file, fsync, rename, fsync dir. */
export class DirTarget implements BackupTarget {
  readonly label: string;
  constructor(readonly root: string) {
    this.label = root;
  }
  private at(key: string): string {
    return path.join(this.root, safeKey(key));
  }
  private landing(key: string): { dest: string; tmp: string } {
    const dest = this.at(key);
    mkdirSync(path.dirname(dest), { recursive: true });
    return { dest, tmp: path.join(path.dirname(dest), `.tmp-${uuidv7()}`) };
  }
  private land(tmp: string, dest: string): void {
    fsyncPath(tmp);
    renameSync(tmp, dest);
    fsyncPath(path.dirname(dest));
  }
  async putFile(key: string, file: string, opts: { link?: boolean } = {}): Promise<void> {
    const { dest, tmp } = this.landing(key);
    if (opts.link) {
      try {
        linkSync(file, tmp);
        renameSync(tmp, dest);
        return;
      } catch {
        rmSync(tmp, { force: true });
      }
    }
    try {
      copyFileSync(file, tmp);
      this.land(tmp, dest);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
  }
  async putBytes(key: string, bytes: Uint8Array): Promise<void> {
    const { dest, tmp } = this.landing(key);
    try {
      await Bun.write(tmp, bytes);
      this.land(tmp, dest);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
  }
  async getBytes(key: string): Promise<Uint8Array | null> {
    const f = this.at(key);
    return existsSync(f) ? new Uint8Array(await Bun.file(f).arrayBuffer()) : null;
  }
  async getFile(key: string, file: string): Promise<void> {
    const f = this.at(key);
    if (!existsSync(f)) throw new OpsError("not_found", `The backup has no ${key} at ${this.label}.`);
    copyFileSync(f, file);
  }
  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const base = path.join(this.root, prefix);
    const walk = (dir: string, rel: string) => {
      if (!existsSync(dir)) return;
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name.startsWith(".tmp-")) continue;
        const r = rel === "" ? e.name : `${rel}/${e.name}`;
        if (e.isDirectory()) walk(path.join(dir, e.name), r);
        else if (e.isFile()) out.push(`${prefix}${r}`);
      }
    };
    if (existsSync(base) && statSync(base).isDirectory()) walk(base, "");
    return out.sort();
  }
  async listAged(prefix: string): Promise<Array<{ key: string; modifiedMs: number }>> {
    return (await this.list(prefix)).map((key) => ({ key, modifiedMs: statSync(this.at(key)).mtimeMs }));
  }
  async delete(key: string): Promise<void> {
    rmSync(this.at(key), { force: true });
  }
}

/** A backup place in an S3 bucket, under a prefix. */
export class S3Target implements BackupTarget {
  readonly label: string;
  private readonly client: S3Client;
  private readonly prefix: string;
  constructor(bucket: string, prefix: string, s3: S3Settings) {
    if (s3.endpoint === null) throw new OpsError("validation_failed", "An s3:// backup place needs OPS_BACKUP_S3_ENDPOINT.");
    this.prefix = prefix === "" ? "" : `${prefix.replace(/\/+$/, "")}/`;
    this.label = `s3://${bucket}/${this.prefix}`;
    this.client = new S3Client({ endpoint: s3.endpoint, bucket, region: s3.region, accessKeyId: s3.accessKeyId ?? undefined, secretAccessKey: s3.secretAccessKey ?? undefined });
  }
  async putFile(key: string, file: string): Promise<void> {
    await this.client.write(this.prefix + safeKey(key), Bun.file(file));
  }
  async putBytes(key: string, bytes: Uint8Array): Promise<void> {
    await this.client.write(this.prefix + safeKey(key), bytes);
  }
  async getBytes(key: string): Promise<Uint8Array | null> {
    const f = this.client.file(this.prefix + safeKey(key));
    if (!(await f.exists())) return null;
    return new Uint8Array(await f.arrayBuffer());
  }
  async getFile(key: string, file: string): Promise<void> {
    const f = this.client.file(this.prefix + safeKey(key));
    if (!(await f.exists())) throw new OpsError("not_found", `The backup has no ${key} at ${this.label}.`);
    await Bun.write(file, f);
  }
  async list(prefix: string): Promise<string[]> {
    return (await this.listAged(prefix)).map((o) => o.key);
  }
  async listAged(prefix: string): Promise<Array<{ key: string; modifiedMs: number }>> {
    const out: Array<{ key: string; modifiedMs: number }> = [];
    let token: string | undefined;
    for (;;) {
      const res = await this.client.list({ prefix: this.prefix + prefix, maxKeys: 1000, continuationToken: token });
      for (const o of res.contents ?? []) out.push({ key: o.key.slice(this.prefix.length), modifiedMs: o.lastModified ? new Date(o.lastModified).getTime() : 0 });
      if (!res.isTruncated || !res.nextContinuationToken) break;
      token = res.nextContinuationToken;
    }
    return out.sort((a, b) => a.key.localeCompare(b.key));
  }
  async delete(key: string): Promise<void> {
    await this.client.delete(this.prefix + safeKey(key));
  }
}

/** `s3://bucket/prefix` or a directory (relative to `cwd`). */
export function openTarget(spec: string, s3: S3Settings, cwd: string): BackupTarget {
  if (spec.startsWith("s3://")) {
    const rest = spec.slice(5);
    const slash = rest.indexOf("/");
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    if (!/^[a-z0-9][a-z0-9.-]{1,62}$/.test(bucket)) throw new OpsError("validation_failed", `Not an S3 bucket name: "${bucket}".`);
    return new S3Target(bucket, slash < 0 ? "" : rest.slice(slash + 1), s3);
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) throw new OpsError("validation_failed", `Backups go to a directory or s3://bucket/prefix, not "${spec}".`);
  return new DirTarget(path.resolve(cwd, spec));
}
