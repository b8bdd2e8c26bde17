/**
 * Scheduled backups (docs/decisions/0383): `backups.scheduled` runs on OPS_BACKUP_SCHEDULE, backs
 * the data dir up to OPS_BACKUP_TO and keeps OPS_BACKUP_KEEP backups there; `backups.watch` (every
 * 15 minutes, and after each run) finds the newest good backup — this server's last success or the
 * newest manifest at the place, whoever wrote it — and when it is older than two periods of the
 * schedule (or there is none two periods after start), sends `backup.failing` to the people who
 * manage the estate, once per failing stretch.
 */
import { readFileSync } from "node:fs";
import { coreLocal, type Core } from "../../core/core";
import { tx } from "../../core/db/client";
import { iso } from "../../core/clock";
import { nextCronRun } from "../../core/scheduler";
import { lastEstateNoticeAt, notifyEstate } from "../notifications/service";
import { passphraseFrom } from "./crypt";
import { pruneBackups } from "./prune";
import { listManifests, readManifest } from "./restore";
import { openTarget } from "./target";
import { opsArgv } from "../../reexec";
import type { BackupStatusResponse, BackupSummary, Manifest } from "./model";

export const BACKUP_TASK = "backups.scheduled";
export const WATCH_TASK = "backups.watch";

interface BackupState {
  lastGood: BackupSummary | null;
  /** When this server last finished a good backup, by its clock. */
  lastGoodAt: number | null;
  lastAttemptAt: number | null;
  lastError: string | null;
}

function stateOf(core: Core): BackupState {
  return coreLocal<BackupState>(core, "backups.state", () => ({ lastGood: null, lastGoodAt: null, lastAttemptAt: null, lastError: null }));
}

function summaryOf(m: Manifest): BackupSummary {
  return { id: m.id, created_at: m.created_at, files: m.stats.files, bytes: m.stats.bytes, new_objects: m.stats.new_objects, new_bytes: m.stats.new_bytes };
}

function passphraseOf(core: Core): string | null {
  const f = core.config.backup.passphraseFile;
  return f === null ? null : passphraseFrom(readFileSync(f, "utf8"));
}

function targetOf(core: Core) {
  return openTarget(core.config.backup.to!, core.config.backup.s3, core.config.dataDir);
}

/**
 * `ops backup create` as a child process: the snapshot's `VACUUM INTO` and file reads are
 * synchronous, and a telemetry.db of gigabytes would hold the server's event loop for as long.
 */
async function backupInChild(core: Core): Promise<Manifest> {
  const cfg = core.config.backup;
  const args = ["backup", "create", "--to", cfg.to!, "--data-dir", core.config.dataDir];
  if (cfg.passphraseFile !== null) args.push("--passphrase-file", cfg.passphraseFile);
  const env: Record<string, string> = { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", OPS_LOG_LEVEL: "warn" };
  const s3 = cfg.s3;
  for (const [k, v] of [["OPS_BACKUP_S3_ENDPOINT", s3.endpoint], ["OPS_BACKUP_S3_REGION", s3.region], ["OPS_BACKUP_S3_ACCESS_KEY_ID", s3.accessKeyId], ["OPS_BACKUP_S3_SECRET_ACCESS_KEY", s3.secretAccessKey]] as const) if (v !== null) env[k] = v;
  const child = Bun.spawn(opsArgv(...args), { cwd: core.config.dataDir, env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(err.trim().replace(/^ops backup create: /, "").slice(0, 500) || `ops backup create exited ${code}`);
  const id = /^backup (\S+) at /.exec(out)?.[1];
  if (!id) throw new Error(`ops backup create said: ${out.slice(0, 200)}`);
  const { manifest } = await readManifest({ target: targetOf(core), key: `manifests/${id}.json` }, passphraseOf(core));
  return manifest;
}

/** One scheduled backup, then pruning, then the watch. Throws (so the task shows the error) on failure. */
export async function runScheduledBackup(core: Core): Promise<void> {
  const cfg = core.config.backup;
  if (cfg.to === null) return;
  const s = stateOf(core);
  s.lastAttemptAt = core.clock.now();
  let failure: Error | null = null;
  try {
    const passphrase = passphraseOf(core);
    const target = targetOf(core);
    const m = await backupInChild(core);
    s.lastGood = summaryOf(m);
    s.lastGoodAt = core.clock.now();
    s.lastError = null;
    const pruned = await pruneBackups(target, cfg.keep, passphrase, core.clock.now());
    core.log.info("backup stored", { id: m.id, place: target.label, files: m.stats.files, new_objects: m.stats.new_objects, new_bytes: m.stats.new_bytes, ms: m.stats.ms, pruned_manifests: pruned.manifests, pruned_objects: pruned.objects, prune_skipped: pruned.skipped ?? undefined });
  } catch (e) {
    failure = e as Error;
    s.lastError = failure.message.slice(0, 500);
    core.log.error("scheduled backup failed", { err: failure.message });
  }
  await watchBackups(core);
  if (failure) throw failure;
}

/** The time of a manifest id (`20261127T030000000Z-…`). */
function idTime(key: string): number | null {
  const m = /(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z-[0-9a-z]{6}\.json$/.exec(key);
  return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], +m[7]) : null;
}

/** How long one period of the schedule is, from now: the gap between its next two runs. */
export function periodMs(schedule: string, nowMs: number): number {
  const next = nextCronRun(schedule, nowMs);
  return nextCronRun(schedule, next) - next;
}

/** Work out the backup status and send `backup.failing` when it starts failing. */
export async function watchBackups(core: Core): Promise<BackupStatusResponse> {
  const cfg = core.config.backup;
  const s = stateOf(core);
  const now = core.clock.now();
  let newestAt = s.lastGoodAt;
  let label: string | null = null;
  if (cfg.to !== null) {
    try {
      const target = targetOf(core);
      label = target.label;
      const keys = await listManifests(target);
      const key = keys[keys.length - 1];
      const at = key ? idTime(key) : null;
      if (at !== null && (newestAt === null || at > newestAt)) {
        // Written by another process (`ops backup create`): read it for the summary.
        const { manifest } = await readManifest({ target, key }, passphraseOf(core));
        s.lastGood = summaryOf(manifest);
        newestAt = Date.parse(manifest.created_at);
      }
    } catch (e) {
      s.lastError ??= `the backup place cannot be read: ${(e as Error).message}`.slice(0, 500);
    }
  }
  const limit = 2 * periodMs(cfg.schedule, now);
  const failing = cfg.to !== null && now - (newestAt ?? core.state.startedAt) > limit;
  if (failing) {
    const since = newestAt ?? core.state.startedAt;
    const noticed = lastEstateNoticeAt(core, "backup.failing");
    if (noticed === null || noticed <= since) {
      tx(core.db, (t) =>
        notifyEstate(core, t, {
          kind: "backup.failing",
          params: { place: label ?? cfg.to ?? "", last_good: newestAt === null ? "never" : iso(newestAt), error: s.lastError ?? "no backup ran" },
          link: "/status/admin",
        }),
      );
      core.log.warn("backups are failing", { place: label, last_good: newestAt === null ? null : iso(newestAt) });
    }
  }
  return {
    target: label,
    schedule: cfg.schedule,
    keep: cfg.keep,
    encrypted: cfg.passphraseFile !== null,
    last_good: s.lastGood,
    last_attempt_at: s.lastAttemptAt === null ? null : iso(s.lastAttemptAt),
    last_error: s.lastError,
    failing,
  };
}
