/**
 * One build's page (`/projects/<slug>/builds/<id>`): its state, commit and image, its steps in
 * run order with their timings and notes, the error when it failed, and the log — read in pages
 * and followed while the build runs (new lines are appended and the view stays at the bottom
 * unless the reader scrolled up). Cancel while it runs; retry any time.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link, Shown, navigate, when } from "../ui";
import type { ProjectInfo } from "../frame";
import type { Access } from "../access";
import { Action } from "../widgets/guard";
import { BuildBadge, buildSubject, duration, isFinal, reusedFrom, type Build } from "../widgets/builds";
import { FailureOutput, type FailedProcess } from "../widgets/failure-output";

interface LogLine {
  seq: number;
  at: string;
  level: string;
  step: string;
  line: string;
}

interface Detail {
  build: Build;
  host: { check_run_id?: number | null; status_id?: number | null; deployment_id?: number | null };
  deployment?: { id: number; rollout: string; service: string; environment: string; failure_output?: FailedProcess[] } | null;
}

const STEP_LABELS: Record<string, string> = {
  clone: "Clone",
  checks: "Checks",
  build: "Build",
  scan: "Secret scan",
  push: "Push",
  sign: "Sign",
  deploy: "Deploy",
  plan: "Plan",
  crates: "Crates",
  layers: "Layers",
  locales: "Locales",
};
const LIVE_POLL_MS = 1000;

function useBuild(slug: string, id: string) {
  const [detail, setDetail] = useState<Detail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    api<Detail>("GET", `/api/v1/projects/${slug}/builds/${encodeURIComponent(id)}`)
      .then((d) => {
        setDetail(d);
        setError(null);
      })
      .catch((e) => setError(e instanceof ApiError ? e.message : "Could not load the build."));
  useEffect(() => {
    setDetail(null);
    void load();
  }, [slug, id]);
  const live = detail ? !isFinal(detail.build.status) : false;
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => void load(), LIVE_POLL_MS);
    return () => clearInterval(timer);
  }, [live, slug, id]);
  return { detail, error, reload: load };
}

/** The log, read after the last sequence seen and polled while the build is live. */
function BuildLog(props: { slug: string; id: string }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [live, setLive] = useState(true);
  const [follow, setFollow] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const box = useRef<HTMLPreElement>(null);
  const next = useRef(0);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    next.current = 0;
    setLines([]);
    const poll = async () => {
      try {
        for (;;) {
          const page = await api<{ lines: LogLine[]; live: boolean; next: number }>("GET", `/api/v1/projects/${props.slug}/builds/${encodeURIComponent(props.id)}/log?after=${next.current}&limit=1000`);
          if (stopped) return;
          next.current = page.next;
          if (page.lines.length > 0) setLines((cur) => [...cur, ...page.lines]);
          setLive(page.live);
          if (page.lines.length < 1000) {
            if (page.live) timer = setTimeout(() => void poll(), LIVE_POLL_MS);
            return;
          }
        }
      } catch (e) {
        if (!stopped) setError(e instanceof ApiError ? e.message : "Could not read the log.");
      }
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [props.slug, props.id]);

  useEffect(() => {
    if (follow && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines, follow]);

  const onScroll = () => {
    const el = box.current;
    if (el) setFollow(el.scrollHeight - el.scrollTop - el.clientHeight < 24);
  };

  return (
    <section class="build-log" aria-labelledby="log-title">
      <div class="log-head">
        <h3 id="log-title">Log</h3>
        <span class="muted" role="status">
          {live ? (follow ? "Following the build…" : "Paused: scroll to the bottom to follow") : `${lines.length} lines`}
        </span>
      </div>
      {error && <Alert>{error}</Alert>}
      <pre ref={box} class="log" tabIndex={0} aria-label="Build log" aria-live={live ? "polite" : "off"} onScroll={onScroll}>
        {lines.length === 0 && <span class="muted">{live ? "Waiting for output…" : "No output."}</span>}
        {lines.map((l) => (
          <div key={l.seq} class={`log-line level-${l.level}`}>
            <span class="log-step">{l.step}</span>
            <span class="log-text">
              <Shown text={l.line} />
            </span>
          </div>
        ))}
      </pre>
    </section>
  );
}

export function BuildPage(props: { project: ProjectInfo; id: string; access: Access }) {
  const slug = props.project.slug;
  const { detail, error, reload } = useBuild(slug, props.id);
  const [busy, setBusy] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);

  async function act(what: "cancel" | "retry") {
    setBusy(what);
    setActionError(null);
    try {
      const b = await api<Build>("POST", `/api/v1/projects/${slug}/builds/${encodeURIComponent(props.id)}/${what}`);
      if (what === "retry") {
        navigate(`/projects/${slug}/builds/${b.id}`);
        return;
      }
      setNotice(b.status === "cancelled" ? "The build was cancelled." : "Cancelling: the running step's processes were stopped; the build reads cancelled when the step ends.");
      await reload();
    } catch (e) {
      setActionError(e instanceof ApiError ? e.message : `Could not ${what} the build.`);
    } finally {
      setBusy(null);
    }
  }

  const back = <Link href={`/projects/${slug}/builds`}>← All builds</Link>;
  if (error && !detail) {
    return (
      <section>
        {back}
        <Alert>{error}</Alert>
      </section>
    );
  }
  if (!detail) return <p aria-busy="true">Loading the build…</p>;
  const b = detail.build;
  const reused = reusedFrom(b);
  const cancellable = !isFinal(b.status) && b.status !== "deploying";

  return (
    <section aria-labelledby="build-title">
      {back}
      <div class="build-head">
        <h2 id="build-title">
          Build #{b.id} · {buildSubject(b)} {b.kind !== "publish" && <span class="muted">({b.environment})</span>}
        </h2>
        <BuildBadge status={b.status} />
        <div class="actions">
          {cancellable && (
            <Action access={props.access} perm="builds.run" env={b.environment} class="danger" off={busy !== null} onClick={() => void act("cancel")}>
              {busy === "cancel" ? "Cancelling…" : "Cancel"}
            </Action>
          )}
          <Action access={props.access} perm="builds.run" env={b.environment} off={busy !== null} onClick={() => void act("retry")}>
            {busy === "retry" ? "Queueing…" : "Retry"}
          </Action>
        </div>
      </div>
      {notice && !isFinal(b.status) && <Alert kind="ok">{notice}</Alert>}
      {actionError && <Alert>{actionError}</Alert>}
      {b.failure_kind && (
        <Alert>
          <strong>Failed ({b.failure_kind}):</strong> {b.error}
        </Alert>
      )}
      <dl class="facts">
        <dt>Commit</dt>
        <dd>
          <code>{b.commit_sha.slice(0, 12)}</code> <Shown text={b.message} /> {b.branch && <span class="tag">{b.branch}</span>}
        </dd>
        {b.kind === "publish" && (
          <>
            <dt>Publishes</dt>
            <dd>
              the modules of <code>{b.repo}</code> at the tag <code>{b.branch}</code> (see <Link href={`/projects/${slug}/modules`}>Modules</Link>)
            </dd>
          </>
        )}
        <dt>Author</dt>
        <dd>{b.author}</dd>
        <dt>Requested</dt>
        <dd>
          {b.trigger} by {b.requested_by}, {when(b.queued_at)}
        </dd>
        <dt>Duration</dt>
        <dd>{duration(b.started_at, b.finished_at)}</dd>
        {b.image_ref && (
          <>
            <dt>Image</dt>
            <dd>
              <code class="wrap">{b.image_ref}</code>
              {b.image_digest && <div class="muted wrap">{b.image_digest}</div>}
              {b.image_size_bytes != null && <div class="muted">{(b.image_size_bytes / 1024).toFixed(1)} KiB</div>}
            </dd>
          </>
        )}
        {reused && (
          <>
            <dt>Built by</dt>
            <dd>
              <Link href={`/projects/${slug}/builds/${reused.id}`}>build #{reused.id}</Link> ({reused.waiting ? "building it now: this build waits for its image" : "reused from it: the same inputs, so nothing was built here"})
            </dd>
          </>
        )}
        {b.cache_hit != null && (
          <>
            <dt>Dependency cache</dt>
            <dd>{b.cache_hit === 1 ? "reused" : b.cache_hit === 0 ? "filled (cold)" : `${Math.round(b.cache_hit * 100)} % hit`}</dd>
          </>
        )}
        {detail.deployment && (
          <>
            <dt>Rollout</dt>
            <dd>
              #{detail.deployment.id}: {detail.deployment.rollout}
            </dd>
          </>
        )}
      </dl>
      {detail.deployment?.failure_output && (
        <FailureOutput output={detail.deployment.failure_output} logs={`/projects/${slug}/logs?service=${encodeURIComponent(detail.deployment.service)}&environment=${encodeURIComponent(detail.deployment.environment)}`} />
      )}
      <h3>Steps</h3>
      <ol class="build-steps">
        {b.step_timings.map((s, i) => {
          const state = s.ok === true ? "ok" : s.ok === false ? "failed" : s.finished_at ? "skipped" : "running";
          const mark = { ok: "✓", failed: "✗", skipped: "–", running: "…" }[state];
          return (
            <li key={`${s.step}-${i}`} class={`step-${state}`}>
              <span class="step-mark" aria-hidden="true">
                {mark}
              </span>
              <strong>{STEP_LABELS[s.step] ?? s.step}</strong>
              <span class="muted">{state === "skipped" ? "skipped" : duration(s.started_at, s.finished_at)}</span>
              {s.note && <span class="step-note">{s.note}</span>}
            </li>
          );
        })}
        {b.step_timings.length === 0 && <li class="muted">{b.status === "queued" ? "Queued: waiting for a builder." : "No step ran."}</li>}
      </ol>
      <BuildLog slug={slug} id={props.id} />
    </section>
  );
}
