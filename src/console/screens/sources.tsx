/**
 * A project's Sources page (`/projects/<slug>/sources`): the connected repositories with their
 * last push, what their ops.toml declares and the clone URL (with a copy button), a Scan button
 * that reads the default branch's ops.toml and reconciles the project's services, domains and
 * release steps (what a push does not do), and a form to connect one. `/projects/<slug>/sources/<id>` is a repository's studio (studio.tsx). A link from
 * the code host's web pages (`?repo=owner/name&ref=…&path=…`) opens the matching studio.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link, ago, navigate, ActionsHeader } from "../ui";
import type { SectionProps } from "../frame";
import { CopyField } from "../widgets/copy-field";
import { Action, Denied } from "../widgets/guard";
import type { SourceInfo } from "../widgets/sources";


interface ScanQueued {
  scan_id: number;
  status: string;
}

interface DetectedService {
  name: string;
  kind: string;
  port?: number | null;
}

interface ReconciledRow {
  kind: string;
  name: string;
  environment?: string | null;
  reason?: string | null;
}

interface ScanResult {
  id: number;
  status: string;
  git_ref: string;
  error?: string | null;
  reconciled?: { created: ReconciledRow[]; updated: ReconciledRow[]; refused: ReconciledRow[]; undeclared: ReconciledRow[] } | null;
}

/** `service web (production, staging)` per kind and name. */
function rowsText(rows: readonly ReconciledRow[]): string {
  const byName = new Map<string, string[]>();
  for (const r of rows) {
    const k = `${r.kind} ${r.name}`;
    const envs = byName.get(k) ?? [];
    if (r.environment) envs.push(r.environment);
    byName.set(k, envs);
  }
  return [...byName].map(([k, envs]) => (envs.length > 0 ? `${k} (${envs.join(", ")})` : k)).join("; ");
}

/** One paragraph for a finished scan. */
function describeScan(r: ScanResult, s: SourceInfo): { text: string; kind: "ok" | "info" | "error"; services: string[] } {
  if (r.status === "failed") return { kind: "error", services: [], text: `Scan ${r.id} of ${s.repo} failed: ${r.error ?? "see the scan's log"}.` };
  const rec = r.reconciled;
  const parts: string[] = [];
  if (rec?.created.length) parts.push(`created ${rowsText(rec.created)}`);
  if (rec?.updated.length) parts.push(`updated ${rowsText(rec.updated)}`);
  if (rec?.refused.length) parts.push(`refused ${rec.refused.map((x) => `${x.kind} ${x.name}${x.environment ? ` (${x.environment})` : ""}: ${x.reason ?? "refused"}`).join("; ")}`);
  if (rec?.undeclared.length) parts.push(`no longer declared (left in place): ${rowsText(rec.undeclared)}`);
  const services = [...new Set([...(rec?.created ?? []), ...(rec?.updated ?? [])].filter((x) => x.kind === "service").map((x) => x.name))];
  return { kind: rec?.refused.length ? "info" : "ok", services, text: `Scan ${r.id} of ${s.repo} at ${r.git_ref}: ${parts.length > 0 ? parts.join("; ") : "everything was already as declared"}.` };
}

export function SourceList(props: SectionProps) {
  const slug = props.project.slug;
  const [sources, setSources] = useState<SourceInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [repo, setRepo] = useState(`${slug}/`);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [scanning, setScanning] = useState<string | null>(null);
  const [scanResult, setScanResult] = useState<{ text: string; kind: "ok" | "info" | "error"; services: string[] } | null>(null);

  const load = () =>
    api<SourceInfo[]>("GET", `/api/v1/projects/${slug}/sources`)
      .then((list) => {
        setSources(list);
        const wanted = props.query.get("repo");
        const match = wanted ? list.find((s) => s.repo === wanted) : undefined;
        if (match) {
          const q = new URLSearchParams();
          for (const k of ["ref", "path", "pull"]) {
            const v = props.query.get(k);
            if (v) q.set(k, v);
          }
          navigate(`/projects/${slug}/sources/${match.id}${q.size ? `?${q}` : ""}`);
        }
      })
      .catch((e) => setError(e instanceof ApiError ? e.message : "Could not load the sources."));
  useEffect(() => {
    void load();
  }, [slug]);

  async function connect(ev: Event) {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await api<SourceInfo>("POST", `/api/v1/projects/${slug}/sources`, { repo: repo.trim() });
      // HEAD:<branch>: a new repository's branch is master unless git is told otherwise.
      setNotice(`Connected ${s.repo}. Push to it with: git push ${s.clone_url} HEAD:${s.default_branch}`);
      setRepo(`${slug}/`);
      await load();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "Could not connect the repository.");
    } finally {
      setBusy(false);
    }
  }

  /** Scan the default branch; a repository with an ops.toml is reconciled (a queued scan, followed here). */
  async function scan(s: SourceInfo) {
    setScanning(s.id);
    setError(null);
    setNotice(null);
    setScanResult(null);
    try {
      const first = await api<ScanQueued | DetectedService[]>("POST", `/api/v1/projects/${slug}/sources/scan`, { repo: s.repo });
      if (Array.isArray(first)) {
        const found = first.map((d) => `${d.name} (${d.kind}${d.port ? `, port ${d.port}` : ""})`).join(", ");
        setScanResult({ kind: "info", services: [], text: `${s.repo} has no ops.toml on ${s.default_branch}: nothing was reconciled. Its Dockerfiles describe ${found || "no service"}.` });
        return;
      }
      const deadline = Date.now() + 120_000;
      for (;;) {
        const r = await api<ScanResult>("GET", `/api/v1/projects/${slug}/sources/scans/${first.scan_id}`);
        if (r.status === "succeeded" || r.status === "failed") {
          setScanResult(describeScan(r, s));
          break;
        }
        if (Date.now() > deadline) {
          setScanResult({ kind: "info", services: [], text: `Scan ${first.scan_id} is still ${r.status}; its result will show on this page when it ends.` });
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      await load();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : `Could not scan ${s.repo}.`);
    } finally {
      setScanning(null);
    }
  }

  return (
    <section aria-labelledby="sources-title">
      <h2 id="sources-title">Sources</h2>
      <p class="hint">
        Repositories this project builds from. Push with an ops token as the password (any user name; mint one on your <Link href="/account">Account</Link> page); edit files in a repository's studio.
      </p>
      {error && <Alert>{error}</Alert>}
      {notice && <Alert kind="ok">{notice}</Alert>}
      {scanResult && (
        <Alert kind={scanResult.kind}>
            {scanResult.text}
            {scanResult.services.length > 0 && (
              <>
                {" "}
                A push to the default branch now builds {scanResult.services.join(", ")}; or start a build on the <Link href={`/projects/${slug}/builds`}>Builds</Link> page.
              </>
            )}
        </Alert>
      )}
      {!sources && !error && <p aria-busy="true">Loading sources…</p>}
      {sources && sources.length === 0 && <p class="muted">No repository is connected yet.</p>}
      {sources && sources.length > 0 && (
        <table class="sources">
          <thead>
            <tr>
              <th scope="col">Repository</th>
              <th scope="col">Last push</th>
              <th scope="col">Declared services</th>
              <th scope="col">Clone URL</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {sources.map((s) => (
              <tr key={s.id}>
                <td>
                  <Link href={`/projects/${slug}/sources/${s.id}`}>
                    <strong>{s.repo}</strong>
                  </Link>
                  <div class="muted">{s.default_branch}</div>
                </td>
                <td>{s.last_event_at ? <time dateTime={s.last_event_at} title={s.last_event_at}>{ago(s.last_event_at)}</time> : <span class="muted">never</span>}</td>
                <td>
                  {s.declared && s.declared.services.length > 0 ? (
                    s.declared.services.map((n) => (
                      <span key={n} class="tag">
                        {n}
                      </span>
                    ))
                  ) : (
                    <span class="muted">{s.services.length > 0 ? s.services.join(", ") : "none"}</span>
                  )}
                </td>
                <td>
                  <CopyField label={`Clone URL of ${s.repo}`} value={s.clone_url} />
                </td>
                <td>
                  <Action access={props.access} perm="sources.write" env={null} class="small" off={scanning !== null} label={`Scan ${s.repo}: read ${s.default_branch}'s ops.toml and reconcile the project's services`} onClick={() => void scan(s)}>
                    {scanning === s.id ? "Scanning…" : "Scan"}
                  </Action>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {!props.access.can("sources.write", null) ? (
        <Denied access={props.access} perm="sources.write" env={null} what="Connecting a repository" />
      ) : (
      <form class="card connect" onSubmit={(e) => void connect(e)}>
        <h3>Connect a repository</h3>
        <label for="connect-repo">Repository (owner/name)</label>
        <input id="connect-repo" value={repo} onInput={(e) => setRepo((e.target as HTMLInputElement).value)} required pattern="[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+" />
        <p class="hint">On the built-in git host the owner is this project ({slug}); a missing repository is created empty, with the default branch main.</p>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? "Connecting…" : "Connect"}
          </button>
        </div>
      </form>
      )}
    </section>
  );
}
