/**
 * A project's Builds page (`/projects/<slug>/builds?environment=…`): the environment's builds and
 * the project's publish builds (a release tag's modules), newest first — state, commit, author,
 * duration, failure — refreshed while any is running, and a form to build a service's branch by
 * hand. `/projects/<slug>/builds/<id>` is one build's page (builds-page.tsx).
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link, Shown, ago, navigate } from "../ui";
import type { SectionProps } from "../frame";
import { EnvironmentPicker } from "../widgets/environment-picker";
import { Denied } from "../widgets/guard";
import { BuildBadge, buildSubject, duration, isFinal, reusedFrom, type Build } from "../widgets/builds";

interface ServiceRow {
  name: string;
  type: string;
  spec: { source?: { repo: string; branch?: string } | null };
}

export function BuildList(props: SectionProps) {
  const slug = props.project.slug;
  const envs = props.project.environments;
  const env = props.query.get("environment") ?? envs[0] ?? "production";
  const [builds, setBuilds] = useState<Build[] | null>(null);
  const [services, setServices] = useState<ServiceRow[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [service, setService] = useState("");
  const [ref, setRef] = useState("");
  const [busy, setBusy] = useState(false);
  const [now, setNow] = useState(Date.now());

  const load = () =>
    api<Build[]>("GET", `/api/v1/projects/${slug}/builds?environment=${encodeURIComponent(env)}&limit=100`)
      .then((b) => {
        setBuilds(b);
        setNow(Date.now());
      })
      .catch((e) => setError(e instanceof ApiError ? e.message : "Could not load the builds."));

  useEffect(() => {
    setBuilds(null);
    setError(null);
    void load();
    api<ServiceRow[]>("GET", `/api/v1/projects/${slug}/resources/service?environment=${encodeURIComponent(env)}`)
      .then((rows) => {
        const buildable = rows.filter((r) => r.spec.source?.repo);
        setServices(buildable);
        setService((cur) => (buildable.some((r) => r.name === cur) ? cur : (buildable[0]?.name ?? "")));
      })
      .catch(() => setServices([]));
  }, [slug, env]);

  // Follow running builds: refresh every 2 s while any is not finished.
  const running = builds?.some((b) => !isFinal(b.status)) ?? false;
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => void load(), 2000);
    return () => clearInterval(timer);
  }, [running, slug, env]);

  async function start(ev: Event) {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const b = await api<Build>("POST", `/api/v1/projects/${slug}/builds?environment=${encodeURIComponent(env)}`, { service, ref: ref.trim() || null });
      navigate(`/projects/${slug}/builds/${b.id}`);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "Could not start the build.");
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="builds-title">
      <h2 id="builds-title">Builds</h2>
      <p class="hint">A push to a service's branch builds it: checks, build commands, a secret scan, then a signed image in the project's registry. A pushed tag <code>v1.2.0</code> on a repository with <code>modules/</code> publishes its modules.</p>
      <EnvironmentPicker environments={envs} current={env} />
      {error && <Alert>{error}</Alert>}
      {!builds && !error && <p aria-busy="true">Loading builds…</p>}
      {builds && builds.length === 0 && <p class="muted">No builds in {env} yet. Push to a connected repository, or build a service below.</p>}
      {builds && builds.length > 0 && (
        <table class="builds">
          <thead>
            <tr>
              <th scope="col">Build</th>
              <th scope="col">State</th>
              <th scope="col">Commit</th>
              <th scope="col">Author</th>
              <th scope="col">Duration</th>
              <th scope="col">Failure</th>
            </tr>
          </thead>
          <tbody>
            {builds.map((b) => (
              <tr key={b.id}>
                <td>
                  <Link href={`/projects/${slug}/builds/${b.id}`}>
                    <strong>#{b.id}</strong> {buildSubject(b)}
                  </Link>
                  <div class="muted">
                    {b.trigger} · <time dateTime={b.queued_at} title={b.queued_at}>{ago(b.queued_at, now)}</time>
                    {reusedFrom(b) && ` · ${reusedFrom(b)!.waiting ? "waiting for" : "reused from"} #${reusedFrom(b)!.id}`}
                  </div>
                </td>
                <td>
                  <BuildBadge status={b.status} />
                </td>
                <td class="commit">
                  <code>{b.commit_sha.slice(0, 7)}</code> <Shown text={b.message} />
                  {b.branch && b.kind !== "publish" && <span class="tag">{b.branch}</span>}
                </td>
                <td>{b.author}</td>
                <td>{duration(b.started_at, b.finished_at, now)}</td>
                <td>
                  {b.failure_kind ? (
                    <span title={b.error ?? undefined}>
                      <span class="tag tag-bad">{b.failure_kind}</span> <span class="muted error-line">{b.error}</span>
                    </span>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {!props.access.can("builds.run", env) ? (
        <Denied access={props.access} perm="builds.run" env={env} what={`Building a service in ${env}`} />
      ) : (
      <form class="card build-form" onSubmit={(e) => void start(e)}>
        <h3>Build a service</h3>
        {services.length === 0 ? (
          <p class="muted">No service of {env} builds from a repository.</p>
        ) : (
          <div class="grid-form">
            <div>
              <label for="build-service">Service</label>
              <select id="build-service" value={service} onChange={(e) => setService((e.target as HTMLSelectElement).value)}>
                {services.map((s) => (
                  <option key={s.name} value={s.name}>
                    {s.name}
                  </option>
                ))}
              </select>
            </div>
            <div>
              <label for="build-ref">Branch</label>
              <input id="build-ref" value={ref} placeholder={services.find((s) => s.name === service)?.spec.source?.branch ?? "the service's branch"} onInput={(e) => setRef((e.target as HTMLInputElement).value)} />
            </div>
            <div class="actions">
              <button type="submit" class="primary" disabled={busy || !service}>
                {busy ? "Queueing…" : "Build"}
              </button>
            </div>
          </div>
        )}
      </form>
      )}
    </section>
  );
}
