/**
 * The read path every install and index fetch takes (package by name, stored document, file by
 * name), as statements prepared once per Core on raw bun:sqlite: the query builder costs more
 * than the query on these (see bench/cargo-index.bench.ts).
 */
import type { Statement } from "bun:sqlite";
import type { Core } from "../../../core/core";

export interface PackageRaw {
  id: number;
  registry: "npm" | "cargo" | "oci";
  name: string;
  name_key: string;
  lookup: string;
  project_id: string;
  claimed_by: string;
  created_at: number;
  updated_at: number;
}

interface Statements {
  packageByLookup: Statement<PackageRaw, [string, string]>;
  document: Statement<{ body: string; etag: string; updated_at: number; base_url: string }, [number, string]>;
  anyVersion: Statement<{ id: number }, [number]>;
  fileByName: Statement<{ digest: string; size: number; version_id: number }, [number, string]>;
}

const byCore = new WeakMap<Core, Statements>();

export function statements(core: Core): Statements {
  let s = byCore.get(core);
  if (!s) {
    const db = core.sqlite;
    s = {
      packageByLookup: db.query("SELECT * FROM packages WHERE registry = ? AND lookup = ?"),
      document: db.query("SELECT body, etag, updated_at, base_url FROM package_documents WHERE package_id = ? AND kind = ?"),
      anyVersion: db.query("SELECT id FROM package_versions WHERE package_id = ? LIMIT 1"),
      fileByName: db.query(
        "SELECT f.digest, f.size, f.version_id FROM package_files f JOIN package_versions v ON v.id = f.version_id WHERE v.package_id = ? AND f.name = ?",
      ),
    };
    byCore.set(core, s);
  }
  return s;
}
