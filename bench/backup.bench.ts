/**
 * Backup time and size (issue 23): a data dir holding 1 GiB of blobs (1,024 random 1 MiB blobs,
 * which do not compress or dedupe) and a migrated ops.db, backed up to a directory: the first
 * backup, an incremental one after 8 MiB of new blobs, and a first encrypted backup. Runs the same
 * engine as `ops backup create` in this process; the place is on the same disk as the data dir.
 * `OPS_BENCH_BACKUP_MIB` changes the 1,024.
 */
import { mkdirSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import path from "node:path";
import { openDatabase, closeDatabase } from "../src/core/db/client";
import { runMigrations } from "../src/core/db/migrate";
import { FsBlobStore } from "../src/core/blobs/store";
import { createBackup } from "../src/domains/backups/create";
import { DirTarget } from "../src/domains/backups/target";
import type { BenchContext } from "./lib";

export const name = "backup";
export const description = "ops backup create of a data dir with 1 GiB of blobs: first, incremental, encrypted";

function du(dir: string): number {
  const r = Bun.spawnSync(["du", "-sb", dir], { stdout: "pipe" });
  return Number(r.stdout.toString().split("\t")[0]);
}

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;

export async function run(_ctx?: BenchContext): Promise<string> {
  const count = Number(process.env.OPS_BENCH_BACKUP_MIB ?? 1024);
  const root = path.join(tmpdir(), `ops-bench-backup-${process.pid}`);
  const data = path.join(root, "data");
  mkdirSync(data, { recursive: true });
  try {
    for (const [file, which, durability] of [["ops.db", "ops", "state"], ["telemetry.db", "telemetry", "telemetry"]] as const) {
      const db = openDatabase(path.join(data, file), durability);
      runMigrations(db.sqlite, which, Date.now());
      closeDatabase(db.sqlite);
    }
    const blobs = new FsBlobStore(path.join(data, "blobs"));
    for (let i = 0; i < count; i += 16) await Promise.all(Array.from({ length: Math.min(16, count - i) }, () => blobs.put(randomBytes(1024 * 1024))));
    const place = path.join(root, "place");
    const first = await createBackup(data, new DirTarget(place), { version: "bench" });
    const firstSize = du(place);
    for (let i = 0; i < 8; i++) await blobs.put(randomBytes(1024 * 1024));
    const second = await createBackup(data, new DirTarget(place), { version: "bench" });
    const secondSize = du(place) - firstSize;
    const enc = path.join(root, "encrypted");
    const third = await createBackup(data, new DirTarget(enc), { version: "bench", passphrase: "bench passphrase" });
    return (
      `backup: ${mib(first.stats.bytes)} in ${first.stats.files} files; first ${(first.stats.ms / 1000).toFixed(1)} s, ${mib(firstSize)} stored; ` +
      `incremental (+8 MiB) ${(second.stats.ms / 1000).toFixed(1)} s, ${second.stats.new_objects} new objects, ${mib(secondSize)} stored; ` +
      `first encrypted ${(third.stats.ms / 1000).toFixed(1)} s, ${mib(du(enc))} stored`
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.main) console.log(await run());
