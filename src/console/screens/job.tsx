/**
 * A job's page: its command and schedule, Run now, its runs newest first (status, trigger, who,
 * when, duration, exit code) read again every two seconds while one is queued or running, and
 * one run's output (`?run=<id>`), read a page at a time and followed while the run is live.
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link, Shown, when } from "../ui";
import type { Access } from "../access";
import type { SectionProps } from "../frame";
import { Action } from "../widgets/guard";
import { Empty, Scroll, errorText } from "../widgets/load";
import { ResourceFrame, type ResourceView } from "../widgets/resource-frame";
import { DeleteResource, ResourceFacts, SpecEditor, resourceApi } from "../widgets/resources";

interface JobRun {
  id: number;
  status: string;
  trigger: string;
  requested_by: string;
  queued_at: string;
  started_at?: string | null;
  finished_at?: string | null;
  duration_secs?: number | null;
  exit_code?: number | null;
  error?: string | null;
  lines: number;
}

interface JobLog {
  lines: Array<{ seq: number; at: string; level: string; line: string }>;
  live: boolean;
  next: number;
}

const LIVE = new Set(["queued", "running"]);
const RUN_CLASS: Record<string, string> = { succeeded: "operational", failed: "down" };
const PAGE = 200;

function seconds(s: number | null | undefined): string {
  if (s === null || s === undefined) return "—";
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  return `${Math.floor(s / 3600)} h${s % 3600 ? ` ${Math.round((s % 3600) / 60)} min` : ""}`;
}

function runLink(run: number): string {
  const q = new URLSearchParams(location.search);
  q.set("run", String(run));
  return `${location.pathname}?${q}`;
}

function Runs(props: { slug: string; access: Access; view: ResourceView; run: number | null }) {
  const name = props.view.resource.name;
  const env = props.view.env;
  const [runs, setRuns] = useState<JobRun[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const load = () =>
    api<JobRun[]>("GET", `${resourceApi(props.slug, "job", name, env, "/runs")}&limit=20`)
      .then(setRuns)
      .catch((e) => setError(errorText(e)));
  useEffect(() => void load(), [props.slug, name, env]);
  const live = (runs ?? []).some((r) => LIVE.has(r.status));
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => void load(), 2000);
    return () => clearInterval(timer);
  }, [live]);

  async function runNow() {
    setError(null);
    try {
      const run = await api<JobRun>("POST", resourceApi(props.slug, "job", name, env, "/run"));
      setNotice(`Run ${run.id} is queued.`);
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  }

  return (
    <section class="card" aria-labelledby="runs-title">
      <div class="card-head">
        <h3 id="runs-title">Runs</h3>
        <Action access={props.access} perm="jobs.run" env={env} class="primary" off={live ? "A run is already queued or running." : false} onClick={() => void runNow()}>
          Run now
        </Action>
      </div>
      {error && <Alert>{error}</Alert>}
      {notice && <Alert kind="ok">{notice}</Alert>}
      {runs === null ? (
        <p class="loading" aria-busy="true">
          Loading runs…
        </p>
      ) : runs.length === 0 ? (
        <Empty>No runs yet.</Empty>
      ) : (
        <Scroll>
          <table class="runs">
            <caption class="visually-hidden">Runs of {name}</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Trigger</th>
                <th scope="col">By</th>
                <th scope="col">Queued</th>
                <th scope="col">Duration</th>
                <th scope="col">Exit</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr key={r.id} class={r.id === props.run ? "selected" : undefined}>
                  <td>
                    <Link href={runLink(r.id)}>#{r.id}</Link>
                  </td>
                  <td>
                    <span class={`badge badge-${RUN_CLASS[r.status] ?? "degraded"}`}>{r.status}</span>
                    {r.error && <div class="hint">{r.error}</div>}
                  </td>
                  <td>{r.trigger}</td>
                  <td>{r.requested_by}</td>
                  <td>{when(r.queued_at)}</td>
                  <td>{seconds(r.duration_secs)}</td>
                  <td>{r.exit_code ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {props.run !== null && <RunLog slug={props.slug} name={name} env={env} run={props.run} />}
    </section>
  );
}

/** One run's output: the first page, then the next on request, followed while live. */
function RunLog(props: { slug: string; name: string; env: string; run: number }) {
  const [lines, setLines] = useState<JobLog["lines"]>([]);
  const [state, setState] = useState<{ next: number; live: boolean; more: boolean } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const url = (after: number) => `${resourceApi(props.slug, "job", props.name, props.env, `/runs/${props.run}/log`)}&after=${after}&limit=${PAGE}`;
  async function page(after: number, reset: boolean) {
    try {
      const log = await api<JobLog>("GET", url(after));
      setLines((old) => (reset ? log.lines : [...old, ...log.lines]));
      setState({ next: log.next, live: log.live, more: log.lines.length === PAGE });
    } catch (e) {
      setError(errorText(e));
    }
  }
  useEffect(() => {
    setLines([]);
    setState(null);
    setError(null);
    void page(0, true);
  }, [props.run]);
  useEffect(() => {
    if (!state?.live || state.more) return;
    const timer = setTimeout(() => void page(state.next, false), 1000);
    return () => clearTimeout(timer);
  }, [state]);
  return (
    <div class="run-log">
      <h4>Output of run #{props.run}</h4>
      {error && <Alert>{error}</Alert>}
      <pre class="log" aria-live="polite">
        {lines.length === 0 ? <span class="muted">{state === null ? "Loading…" : state.live ? "Waiting for output…" : "No output."}</span> : lines.map((l) => <div key={l.seq} class={`log-line level-${l.level}`}>
              <Shown text={l.line} />
            </div>)}
      </pre>
      {state?.more && (
        <button type="button" class="small" onClick={() => void page(state.next, false)}>
          Next {PAGE} lines
        </button>
      )}
    </div>
  );
}

export function JobPage(props: SectionProps) {
  const run = Number(props.query.get("run"));
  return (
    <ResourceFrame {...props}>
      {(v) => {
        const spec = v.resource.spec as { command?: string; schedule?: string | null; timeout_secs?: number };
        return (
          <>
            <dl class="facts">
              <dt>Command</dt>
              <dd>
                <code>{spec.command}</code>
              </dd>
              <dt>Schedule</dt>
              <dd>{spec.schedule ? <><code>{spec.schedule}</code> (UTC)</> : "by hand only"}</dd>
              <dt>Time limit</dt>
              <dd>{seconds(spec.timeout_secs ?? 3600)}</dd>
            </dl>
            <ResourceFacts resource={v.resource} />
            <Runs slug={props.project.slug} access={props.access} view={v} run={Number.isSafeInteger(run) && run > 0 ? run : null} />
            {v.entry && <SpecEditor project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} onSaved={v.replace} />}
            <DeleteResource project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} />
          </>
        );
      }}
    </ResourceFrame>
  );
}
