/**
 * The estate's own upkeep, shown on the status administration page to people who manage the
 * estate: the scheduled backups (where, when, the newest good one, failing or not), the button
 * that updates the server's binary from OPS_UPDATE_URL and restarts it in place, and the processes
 * that serve the estate with their pids and uptimes.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert, when } from "../ui";
import { Confirm } from "./confirm";
import { Pending, errorText, useLoad } from "./load";

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

interface SelfUpdateResult {
  updated: boolean;
  version: string;
  from?: string;
  reason?: string;
  restarting: boolean;
}

export function UpdateCard() {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  async function run() {
    setAsking(false);
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      const r = await api<SelfUpdateResult>("POST", "/api/v1/estate/self-update", {});
      setDone(r.updated ? `Updated from ops ${r.from} to ops ${r.version}${r.restarting ? "; the server restarts in place now." : "."}` : (r.reason ?? `ops ${r.version} is current.`));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card" aria-labelledby="update-title">
      <h2 id="update-title">Server version</h2>
      <p class="muted">Checks the release at OPS_UPDATE_URL, verifies its signature and SHA-256, replaces the binary and restarts ops in place (a second or two without the API).</p>
      {error && <Alert>{error}</Alert>}
      {done && <Alert kind="ok">{done}</Alert>}
      {asking && (
        <Confirm title="Update ops now?" yes="Yes, update" onConfirm={() => void run()} onCancel={() => setAsking(false)}>
          <p>When a newer signed release is there, ops replaces its binary and restarts; requests in flight finish first.</p>
        </Confirm>
      )}
      <button type="button" class="primary" disabled={busy} onClick={() => setAsking(true)}>
        {busy ? "Updating…" : "Update ops"}
      </button>
    </section>
  );
}

interface ProcessesReport {
  mode: "process" | "inline";
  processes: Array<{ part: string; pid: number | null; started_at: string | null; uptime_s: number | null; detail: string }>;
}

function uptime(s: number | null): string {
  if (s === null) return "–";
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** The processes that serve the estate: the control plane, the data plane and its ingress (decision 0600). */
export function ProcessesCard() {
  const loaded = useLoad(() => api<ProcessesReport>("GET", "/api/v1/admin/processes"), []);
  const r = loaded.data;
  return (
    <section class="card" aria-labelledby="processes-title">
      <h2 id="processes-title">Processes</h2>
      {!r ? (
        <Pending what="the processes" error={loaded.error} />
      ) : (
        <>
          <p class="muted">
            {r.mode === "process"
              ? "Apps and their ingress run in a data plane of their own: they keep serving while ops serve restarts or crashes."
              : "Apps and their ingress run inside ops serve (OPS_DATA_PLANE=inline): they stop when it stops."}
          </p>
          <table class="processes">
            <caption class="visually-hidden">Processes that serve the estate</caption>
            <thead>
              <tr>
                <th scope="col">Part</th>
                <th scope="col">PID</th>
                <th scope="col">Up</th>
                <th scope="col">What it does</th>
              </tr>
            </thead>
            <tbody>
              {r.processes.map((p) => (
                <tr key={p.part} data-part={p.part}>
                  <th scope="row">{p.part}</th>
                  <td>{p.pid ?? "–"}</td>
                  <td title={p.started_at ? `since ${when(p.started_at)}` : undefined}>{uptime(p.uptime_s)}</td>
                  <td>{p.detail}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
