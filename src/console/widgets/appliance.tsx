/**
 * The estate's own upkeep, shown on the status administration page to people who manage the
 * estate: the scheduled backups (where, when, the newest good one, failing or not).
 */
import { api } from "../api";
import { Alert, when } from "../ui";
import { Pending, useLoad } from "./load";

interface BackupSummary {
  id: string;
  created_at: string;
  files: number;
  bytes: number;
  new_objects: number;
  new_bytes: number;
}

interface BackupStatus {
  target: string | null;
  schedule: string;
  keep: number;
  encrypted: boolean;
  last_good: BackupSummary | null;
  last_attempt_at: string | null;
  last_error: string | null;
  failing: boolean;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function BackupsCard() {
  const loaded = useLoad(() => api<BackupStatus>("GET", "/api/v1/backups"), []);
  const b = loaded.data;
  return (
    <section class="card" aria-labelledby="backups-title">
      <h2 id="backups-title">Backups</h2>
      {!b ? (
        <Pending what="the backup status" error={loaded.error} />
      ) : b.target === null ? (
        <p class="muted">No scheduled backups: set OPS_BACKUP_TO (a directory or s3://bucket/prefix), or run ops backup create on the server's host.</p>
      ) : (
        <>
          {b.failing && <Alert>Backups are failing: the newest good backup is older than two periods of the schedule.{b.last_error ? ` Last error: ${b.last_error}` : ""}</Alert>}
          <dl class="facts">
            <dt>Place</dt>
            <dd>
              <code>{b.target}</code>
              {b.encrypted ? " (encrypted)" : ""}
            </dd>
            <dt>Schedule</dt>
            <dd>
              <code>{b.schedule}</code> (UTC), keeping {b.keep}
            </dd>
            <dt>Last backup</dt>
            <dd data-testid="last-backup">
              {b.last_good ? `${when(b.last_good.created_at)}: ${b.last_good.files} files, ${mib(b.last_good.bytes)} (${mib(b.last_good.new_bytes)} new)` : "none yet"}
            </dd>
            {b.last_error && !b.failing && (
              <>
                <dt>Last error</dt>
                <dd>{b.last_error}</dd>
              </>
            )}
          </dl>
        </>
      )}
    </section>
  );
}
