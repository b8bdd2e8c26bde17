/**
 * The kernel's durability promise under SIGKILL: a child process writes ops.db transactions and
 * blobs in a tight loop and is killed mid-way (several times, on the same data dir). Afterwards
 * the database passes integrity_check with no half-applied transaction, and every file under
 * blobs/sha256/ hashes to its own name; leftovers may only be temp files, which sweepTemp clears.
 */
import { describe, test, expect, afterAll } from "bun:test";
import { readdirSync, rmSync, readFileSync } from "node:fs";
import path from "node:path";
import { Database } from "bun:sqlite";
import { FsBlobStore, sha256Hex } from "./blobs/store";
import { tempDir } from "../../test/harness";

const ROWS_PER_TX = 20; // as in test/fixtures/crash-writer.ts
const WRITER = path.resolve(import.meta.dir, "../../test/fixtures/crash-writer.ts");
const dataDir = tempDir("ops-crash-");
// Removing thousands of small blob files can take a while on a busy disk.
afterAll(() => rmSync(dataDir, { recursive: true, force: true }), 60_000);

/** Start the writer, wait until it has committed a few rounds, let it run a little more, SIGKILL it. */
async function writeAndKill(runMs: number): Promise<void> {
  const child = Bun.spawn([process.execPath, WRITER, dataDir], { stdout: "pipe", stderr: "pipe" });
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  if (!value || !new TextDecoder().decode(value).includes("writing")) {
    child.kill(9);
    throw new Error(`writer did not start: ${await new Response(child.stderr).text()}`);
  }
  await Bun.sleep(runMs);
  child.kill("SIGKILL");
  expect(await child.exited).not.toBe(0);
  expect(child.signalCode).toBe("SIGKILL");
}

describe("crash safety", () => {
  test("SIGKILL mid-write leaves a sound database and no partial blob", async () => {
    for (const ms of [150, 420, 777]) await writeAndKill(ms);

    const sqlite = new Database(path.join(dataDir, "ops.db"));
    expect(sqlite.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
    const batches = sqlite.query("SELECT target, count(*) AS n FROM audit_log WHERE action = 'crash.write' GROUP BY target").all() as Array<{ target: string; n: number }>;
    expect(batches.length).toBeGreaterThanOrEqual(3 * 3);
    for (const b of batches) expect(b.n).toBe(ROWS_PER_TX);
    sqlite.close();

    const shards = path.join(dataDir, "blobs", "sha256");
    let blobs = 0;
    for (const shard of readdirSync(shards)) {
      for (const name of readdirSync(path.join(shards, shard))) {
        expect(name.slice(0, 2)).toBe(shard);
        expect(sha256Hex(readFileSync(path.join(shards, shard, name)))).toBe(name);
        blobs++;
      }
    }
    expect(blobs).toBeGreaterThanOrEqual(3 * 3);

    // Temp files may remain (a write that was cut short); the sweep clears them.
    const store = new FsBlobStore(path.join(dataDir, "blobs"));
    const left = readdirSync(path.join(dataDir, "blobs", "tmp")).length;
    expect(store.sweepTemp(0, Date.now() + 1000)).toBe(left);
    expect(readdirSync(path.join(dataDir, "blobs", "tmp"))).toEqual([]);
  });
});
