/**
 * A service's images (`/projects/<slug>/packages/images/<service>`): every digest its builds
 * pushed, in each environment, with its signature state and where it runs now; the newest pushed
 * digest (from the package read) shows even when no build made it.
 *
 * No API route reports a digest's signature: the state shown is what the builds that pushed the
 * digest report of their `sign` step (decision 0302). The deploy gate still verifies the signature
 * against the registry before anything runs, whatever this page says.
 */
import { api } from "../api";
import { Link, Shown, when } from "../ui";
import type { Access } from "../access";
import type { SectionProps } from "../frame";
import type { Build } from "../widgets/builds";
import { Empty, Pending, Scroll, useLoad } from "../widgets/load";
import { bytes, resourceApi } from "../widgets/resources";
import type { ServiceInfo } from "../widgets/services";
import { signatureOf, type ImageRepo, type ProjectPackages, type Signature } from "../widgets/packages";

interface DigestRow {
  digest: string;
  builds: Build[];
  runsIn: string[];
  pushedAt: string | null;
  size: number | null;
}

const BADGE: Record<Signature["state"], string> = { signed: "operational", failed: "down", unsigned: "down", unknown: "degraded" };

async function readEnvironment(slug: string, service: string, env: string, access: Access): Promise<{ env: string; builds: Build[]; running: string | null }> {
  const q = `environment=${encodeURIComponent(env)}&service=${encodeURIComponent(service)}&limit=200`;
  const [builds, svc] = await Promise.all([
    access.can("builds.read", env) ? api<Build[]>("GET", `/api/v1/projects/${slug}/builds?${q}`) : Promise.resolve([] as Build[]),
    access.can("resources.read", env) ? api<ServiceInfo>("GET", resourceApi(slug, "service", service, env)).catch(() => null) : Promise.resolve(null),
  ]);
  return { env, builds: builds.filter((b) => b.kind === "image" && b.image_digest), running: svc?.status.detail?.digest ?? null };
}

/** Digest rows, newest push first: what the builds pushed, and the newest pushed digest. */
function rowsOf(repo: ImageRepo | undefined, perEnv: Array<{ env: string; builds: Build[]; running: string | null }>): DigestRow[] {
  const rows = new Map<string, DigestRow>();
  const row = (digest: string) => {
    let r = rows.get(digest);
    if (!r) rows.set(digest, (r = { digest, builds: [], runsIn: [], pushedAt: null, size: null }));
    return r;
  };
  for (const e of perEnv) {
    for (const b of e.builds) {
      const r = row(b.image_digest!);
      r.builds.push(b);
      r.size ??= b.image_size_bytes ?? null;
      const at = b.step_timings.find((s) => s.step === "push")?.finished_at ?? b.finished_at ?? b.queued_at;
      if (!r.pushedAt || at > r.pushedAt) r.pushedAt = at;
    }
    if (e.running) row(e.running).runsIn.push(e.env);
  }
  if (repo) {
    const r = row(repo.digest);
    r.pushedAt = repo.pushed_at ?? r.pushedAt;
    r.size ??= repo.size_bytes ?? null;
    for (const env of repo.environments) if (!r.runsIn.includes(env)) r.runsIn.push(env);
  }
  for (const r of rows.values()) r.builds.sort((a, b) => b.id - a.id);
  return [...rows.values()].sort((a, b) => (b.pushedAt ?? "").localeCompare(a.pushedAt ?? ""));
}

export function ImagePage(props: SectionProps) {
  const slug = props.project.slug;
  const service = props.rest[1] ?? "";
  const envs = props.project.environments;
  const loaded = useLoad(async () => {
    const [packages, perEnv] = await Promise.all([api<ProjectPackages>("GET", `/api/v1/projects/${slug}/packages`), Promise.all(envs.map((e) => readEnvironment(slug, service, e, props.access)))]);
    const repo = packages.images.find((i) => i.service === service);
    return { repo, rows: rowsOf(repo, perEnv) };
  }, [slug, service, envs.join(",")]);
  const withheld = envs.filter((e) => !props.access.can("builds.read", e));
  const heading = (
    <h2 id="image-title">
      <Link href={`/projects/${slug}/packages`}>Packages</Link> <span class="muted">/</span> images <span class="muted">/</span> {slug}/{service}
    </h2>
  );
  if (!loaded.data) {
    return (
      <section aria-labelledby="image-title">
        {heading}
        <Pending what={`the images of ${service}`} error={loaded.error} tall />
      </section>
    );
  }
  const { rows } = loaded.data;
  return (
    <section aria-labelledby="image-title">
      {heading}
      <p>
        Deploys and rollbacks: <Link href={`/projects/${slug}/deployments/${encodeURIComponent(service)}`}>the service's deployments</Link>. Signatures are checked against the estate key's{" "}
        <a href="/api/v1/signing/public-key">public key</a> (<code>cosign verify --key</code> takes it).
      </p>
      {withheld.length > 0 && (
        <p class="muted denied" title={props.access.why("builds.read", withheld[0] ?? null)}>
          Builds of {withheld.join(", ")} are not shown: {props.access.why("builds.read", withheld[0] ?? null)}
        </p>
      )}
      {rows.length === 0 ? (
        <Empty>No image of {service} was pushed yet.</Empty>
      ) : (
        <Scroll>
          <table class="digests">
            <caption class="visually-hidden">Digests of {slug}/{service}</caption>
            <thead>
              <tr>
                <th scope="col">Digest</th>
                <th scope="col">Signature</th>
                <th scope="col">Runs in</th>
                <th scope="col">Builds</th>
                <th scope="col">Pushed</th>
                <th scope="col">Size</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => {
                const sig = signatureOf(r.builds);
                return (
                  <tr key={r.digest}>
                    <td>
                      <code class="digest" title={r.digest}>
                        {r.digest.slice(0, 19)}…
                      </code>
                    </td>
                    <td>
                      <span class={`badge badge-${BADGE[sig.state]}`}>{sig.state}</span>
                      <div class="hint">{sig.text}</div>
                    </td>
                    <td>{r.runsIn.join(", ") || <span class="muted">not running</span>}</td>
                    <td>
                      {r.builds.length === 0
                        ? "—"
                        : r.builds.map((b, i) => (
                            <span key={b.id}>
                              {i > 0 && ", "}
                              <Link href={`/projects/${slug}/builds/${b.id}`}>{`${b.id} (${b.environment})`}</Link>
                            </span>
                          ))}
                      {r.builds[0] && <div class="hint">
                          <Shown text={r.builds[0].message} />
                        </div>}
                    </td>
                    <td>{when(r.pushedAt)}</td>
                    <td>{r.size ? bytes(r.size) : "—"}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </Scroll>
      )}
    </section>
  );
}
