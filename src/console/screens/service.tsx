/**
 * A service's page (`/projects/<slug>/deployments/<service>?environment=…`): its health, the
 * digest it runs and its replicas (state, the node each runs on when on a Swarm, port, restarts,
 * last exit), deploy — a build of the service, the newest pushed image, or a digest — and
 * rollback, each behind a confirmation, and the service's timeline. While a rollout is in flight the page reads the service again every
 * two seconds.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link, when } from "../ui";
import type { ProjectInfo } from "../frame";
import type { Access } from "../access";
import { EnvironmentPicker } from "../widgets/environment-picker";
import { Denied } from "../widgets/guard";
import { short, StatusBadge, TimelineTable, type ServiceInfo, type TimelineEntry } from "../widgets/services";
import { FailureOutput } from "../widgets/failure-output";
import { Traffic } from "../widgets/traffic";
import { escapeForTerminal } from "../../core/terminal-text";

interface BuildInfo {
  id: number;
  status: string;
  commit_sha: string;
  message: string;
  image_digest?: string | null;
  queued_at: string;
}

interface Candidate {
  key: string;
  /** In the picker. */
  label: string;
  /** In the confirmation's sentence. */
  what: string;
  body: { digest: string } | { build_id: number };
  /** The image it deploys, to tell which one runs. */
  digest: string;
}

type Pending = { kind: "deploy"; candidate: Candidate } | { kind: "rollback"; digest: string };

const IN_FLIGHT = new Set(["queued", "starting", "releasing", "probing", "switching", "draining", "unhealthy", "rolling_back"]);

/** What can be deployed: the service's builds with an image, else the newest pushed image (each read only when the person may). */
async function loadCandidates(slug: string, env: string, service: string, access: Access): Promise<Candidate[]> {
  const out: Candidate[] = [];
  const built = new Set<string>();
  if (access.can("builds.read", env)) try {
    const builds = await api<BuildInfo[]>("GET", `/api/v1/projects/${slug}/builds?environment=${encodeURIComponent(env)}&service=${encodeURIComponent(service)}&limit=20`);
    for (const b of builds) {
      if (!b.image_digest) continue;
      built.add(b.image_digest);
      out.push({ key: `b${b.id}`, label: `Build ${b.id}: ${escapeForTerminal(b.message)} (${b.commit_sha.slice(0, 12)}, ${b.status})`, what: `build ${b.id} (${short(b.image_digest)})`, body: { build_id: b.id }, digest: b.image_digest });
    }
  } catch (e) {
    // A server without builds answers 404 for the route: the images below remain.
    if (!(e instanceof ApiError) || e.status !== 404) throw e;
  }
  if (!access.can("packages.read", null)) return out;
  const packages = await api<{ images: Array<{ service: string; digest: string; commit: string; pushed_at?: string | null }> }>("GET", `/api/v1/projects/${slug}/packages`).catch(() => ({ images: [] }));
  const image = packages.images.find((i) => i.service === service);
  if (image && !built.has(image.digest)) out.push({ key: `i${image.digest}`, label: `Newest pushed image ${short(image.digest)}${image.commit ? ` (${image.commit.slice(0, 12)})` : ""}`, what: `the image ${short(image.digest)}`, body: { digest: image.digest }, digest: image.digest });
  return out;
}

export function ServicePage(props: { project: ProjectInfo; service: string; query: URLSearchParams; access: Access }) {
  const slug = props.project.slug;
  const envs = props.project.environments;
  const env = props.query.get("environment") ?? envs[0] ?? "production";
  const base = `/api/v1/projects/${slug}/resources/service/${encodeURIComponent(props.service)}`;
  const q = `environment=${encodeURIComponent(env)}`;
  const [svc, setSvc] = useState<ServiceInfo | null>(null);
  const [timeline, setTimeline] = useState<TimelineEntry[]>([]);
  const [candidates, setCandidates] = useState<Candidate[]>([]);
  const [choice, setChoice] = useState("");
  /** Once the person picks, the page stops choosing for them. */
  const [picked, setPicked] = useState(false);
  const [digest, setDigest] = useState("");
  const [pending, setPending] = useState<Pending | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const load = () =>
    Promise.all([api<ServiceInfo>("GET", `${base}?${q}`), api<TimelineEntry[]>("GET", `/api/v1/projects/${slug}/deployments?${q}&service=${encodeURIComponent(props.service)}&limit=50`)])
      .then(([s, tl]) => {
        setSvc(s);
        setTimeline(tl);
      })
      .catch((e) => setError(e instanceof ApiError ? (e.status === 404 ? `There is no service "${props.service}" in ${env}.` : e.message) : "Could not load the service."));

  useEffect(() => {
    setSvc(null);
    setError(null);
    // Another service or environment: the page chooses again. A pick made while the candidates
    // load is kept, and a list that arrives after the page moved on is dropped.
    setPicked(false);
    void load();
    if (!props.access.can("deployments.deploy", env)) return setCandidates([]);
    let live = true;
    loadCandidates(slug, env, props.service, props.access)
      .then((c) => live && setCandidates(c))
      .catch(() => live && setCandidates([]));
    return () => {
      live = false;
    };
  }, [slug, env, props.service]);

  const flying = svc?.status.detail?.rollout ?? null;
  const latest = timeline[0]?.deployment;
  const moving = !!flying || (latest ? IN_FLIGHT.has(latest.rollout) : false);
  useEffect(() => {
    if (!moving) return;
    const timer = setInterval(() => void load(), 2000);
    return () => clearInterval(timer);
  }, [moving, slug, env, props.service]);

  const current = svc?.status.detail?.digest ?? null;
  // The picker starts at what runs (after a rollback, not the broken build), else the newest.
  useEffect(() => {
    if (picked) return;
    setChoice((candidates.find((c) => c.digest === current) ?? candidates[0])?.key ?? "");
  }, [candidates, current, picked]);
  const rollbackTo = timeline.map((r) => r.deployment).find((d) => d && d.rollout === "healthy" && d.image_digest !== current)?.image_digest ?? null;

  function askDeploy(e: Event) {
    e.preventDefault();
    setNotice(null);
    setError(null);
    const typed = digest.trim();
    const chosen = typed ? { key: "typed", label: typed, what: `the image ${short(typed)}`, body: { digest: typed }, digest: typed } : candidates.find((c) => c.key === choice);
    if (!chosen) return setError("Pick a build or an image, or paste a digest.");
    setPending({ kind: "deploy", candidate: chosen });
  }

  async function confirm() {
    if (!pending) return;
    setBusy(true);
    setError(null);
    try {
      const d =
        pending.kind === "deploy"
          ? await api<{ id: number; image_digest: string }>("POST", `${base}/deploy?${q}`, pending.candidate.body)
          : await api<{ id: number; image_digest: string }>("POST", `${base}/rollback?${q}`, { digest: pending.digest });
      setNotice(`Deployment ${d.id} of ${short(d.image_digest)} is recorded; the timeline follows its rollout.`);
      setDigest("");
      await load();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "The request failed.");
    } finally {
      setPending(null);
      setBusy(false);
    }
  }

  const d = svc?.status.detail ?? {};
  // A Node column only where replicas run on nodes (a Swarm): one host needs none.
  const onNodes = (d.replicas ?? []).some((r) => !!r.node);
  return (
    <section aria-labelledby="service-title">
      <h2 id="service-title">
        <Link href={`/projects/${slug}/deployments?${q}`}>Deployments</Link> <span class="muted">/</span> {props.service}
      </h2>
      <EnvironmentPicker environments={envs} current={env} />
      {error && <Alert>{error}</Alert>}
      {notice && <Alert kind="ok">{notice}</Alert>}
      {!svc && !error && <p aria-busy="true">Loading the service…</p>}
      {timeline?.[0]?.deployment?.failure_output && (
        <section class="card" aria-labelledby="last-failure">
          <h3 id="last-failure">
            Deployment #{timeline[0].deployment.id}: {timeline[0].state.replace("_", " ")}
          </h3>
          <p>{timeline[0].state_text}</p>
          <FailureOutput output={timeline[0].deployment.failure_output} logs={`/projects/${slug}/logs?service=${encodeURIComponent(props.service)}&environment=${encodeURIComponent(env)}`} />
        </section>
      )}
      {svc && (
        <>
          <dl class="facts">
            <dt>Health</dt>
            <dd>
              <StatusBadge state={svc.status.state} /> {svc.status.summary}
            </dd>
            <dt>Running</dt>
            <dd>
              <code>{current ?? "nothing deployed"}</code>
            </dd>
            <dt>Replicas</dt>
            <dd>{d.replicas_wanted ?? svc.spec.replicas ?? 1} wanted</dd>
            <dt>Traffic</dt>
            <dd>
              <Traffic slug={slug} environment={env} service={props.service} />
            </dd>
            <dt>Health check</dt>
            <dd>{svc.spec.health_check_path ? <code>{svc.spec.health_check_path}</code> : "the port accepts connections"}</dd>
            <dt>Open</dt>
            <dd>
              {(d.urls ?? []).length === 0 ? (
                <span class="muted">not served: the ingress is off (OPS_INGRESS_LISTEN)</span>
              ) : (
                <ul class="urls">
                  {d.urls!.map((u) => (
                    <li key={u}>
                      <a href={u} target="_blank" rel="noopener noreferrer">
                        {u}
                      </a>
                    </li>
                  ))}
                </ul>
              )}
            </dd>
            {flying && (
              <>
                <dt>Rollout</dt>
                <dd aria-live="polite">
                  Deployment {flying.deployment} is {flying.rollout.replace("_", " ")}
                  {flying.note ? `: ${flying.note}` : ""}
                </dd>
              </>
            )}
          </dl>

          {(d.replicas ?? []).length > 0 && (
            <table class={onNodes ? "replicas with-nodes" : "replicas"}>
              <caption class="visually-hidden">Replicas</caption>
              <thead>
                <tr>
                  <th scope="col">Replica</th>
                  <th scope="col">State</th>
                  {onNodes && <th scope="col">Node</th>}
                  <th scope="col">Port</th>
                  <th scope="col">Restarts</th>
                  <th scope="col">Last exit</th>
                  <th scope="col">Memory</th>
                </tr>
              </thead>
              <tbody>
                {(d.replicas ?? []).map((r) => (
                  <tr key={r.id}>
                    <td>
                      <code>{r.id.split(".").at(-1)}</code>
                    </td>
                    <td>
                      <span class={`badge badge-${r.state === "running" ? "operational" : r.state === "crashed" ? "down" : "degraded"}`}>{r.state}</span>
                    </td>
                    {onNodes && <td title={r.node ? `${r.node.name} at ${r.host ?? r.node.addr}` : undefined}>{r.node ? <>{r.node.name} <span class="muted">{r.host ?? r.node.addr}</span></> : "–"}</td>}
                    <td>{r.port}</td>
                    <td>{r.restarts}</td>
                    <td>{r.last_exit ? `${r.last_exit.oom_killed ? "out of memory" : r.last_exit.signal ?? `code ${r.last_exit.code}`}, ${when(r.last_exit.at)}` : "—"}</td>
                    <td>{r.memory.limit_mb === null ? "no limit" : `${r.memory.limit_mb} MiB${r.memory.enforced ? "" : " (not enforced)"}`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}

          {!props.access.can("deployments.deploy", env) ? (
            <Denied access={props.access} perm="deployments.deploy" env={env} what={`Deploying and rolling back in ${env}`} />
          ) : (
          <form class="deploy-form" onSubmit={askDeploy}>
            <h3>Deploy</h3>
            {candidates.length > 0 && (
              <>
                <label for="deploy-pick">Build or image</label>
                <select
                  id="deploy-pick"
                  value={choice}
                  onChange={(e) => {
                    setPicked(true);
                    setChoice((e.target as HTMLSelectElement).value);
                  }}
                >
                  {candidates.map((c) => (
                    <option key={c.key} value={c.key}>
                      {c.label}
                      {c.digest === current ? " — running" : ""}
                    </option>
                  ))}
                </select>
              </>
            )}
            <label for="deploy-digest">Or a digest</label>
            <input id="deploy-digest" placeholder="sha256:…" value={digest} onInput={(e) => setDigest((e.target as HTMLInputElement).value)} />
            <p class="hint">Only images signed by this ops server's key are deployed.</p>
            <div class="actions">
              <button type="submit" class="primary" disabled={busy || moving}>
                Deploy…
              </button>
              <button type="button" disabled={busy || moving || !rollbackTo} onClick={() => rollbackTo && setPending({ kind: "rollback", digest: rollbackTo })}>
                Roll back…
              </button>
              {moving && <span class="muted">A rollout is in flight.</span>}
              {!rollbackTo && !moving && <span class="muted">Nothing to roll back to yet.</span>}
            </div>
          </form>
          )}

          {pending && (
            <div class="confirm card" role="alertdialog" aria-labelledby="confirm-title" aria-describedby="confirm-text">
              <h3 id="confirm-title">{pending.kind === "deploy" ? "Deploy?" : "Roll back?"}</h3>
              <p id="confirm-text">
                {pending.kind === "deploy" ? `Deploy ${pending.candidate.what} to ${props.service} in ${env}?` : `Roll ${props.service} in ${env} back to ${short(pending.digest)}?`} The new replicas take traffic
                only once they are healthy.
              </p>
              <div class="actions">
                <button type="button" class={pending.kind === "deploy" ? "primary" : "danger"} disabled={busy} onClick={() => void confirm()}>
                  {pending.kind === "deploy" ? "Yes, deploy" : "Yes, roll back"}
                </button>
                <button type="button" disabled={busy} onClick={() => setPending(null)}>
                  Cancel
                </button>
              </div>
            </div>
          )}

          <h3>Timeline</h3>
          <TimelineTable rows={timeline} slug={slug} env={env} />
        </>
      )}
    </section>
  );
}
