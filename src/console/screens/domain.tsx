/**
 * A domain's page: its hosts (each a link, over HTTPS once the host has a valid certificate), the
 * service its traffic goes to (with port and path prefix), whether HTTPS is asked for, each host's
 * certificate as the domain's status reports it (state, expiry, source, why it fails and when it
 * is tried again) with "Retry now" for a failing one — writing the unchanged spec orders again at
 * once — then the stored status, the spec editor and delete.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link, when } from "../ui";
import type { Access } from "../access";
import type { SectionProps } from "../frame";
import { Action } from "../widgets/guard";
import { errorText } from "../widgets/load";
import { ResourceFrame, type ResourceView } from "../widgets/resource-frame";
import { DeleteResource, ResourceFacts, SpecEditor, resourceApi, type Resource } from "../widgets/resources";

interface DomainSpec {
  hosts?: string[];
  service?: string;
  port?: number;
  path_prefix?: string;
  tls?: boolean;
  redirect_http?: boolean;
}

/** One host's certificate in the domain's status (`detail.certificate.hosts`). */
interface HostCertificate {
  host: string;
  source: string;
  state: string;
  not_after: string | null;
  reason: string | null;
  next_attempt_at: string | null;
}

const CERT_BADGE: Record<string, string> = { valid: "operational", issuing: "degraded", failing: "down" };

function certificatesOf(r: Resource): HostCertificate[] | null {
  const c = r.status.detail?.certificate as { hosts?: HostCertificate[] } | undefined;
  return c?.hosts ?? null;
}

function Certificates(props: { slug: string; access: Access; view: ResourceView; tls: boolean }) {
  const r = props.view.resource;
  const hosts = certificatesOf(r);
  const [busy, setBusy] = useState(false);
  const [ok, setOk] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function retry() {
    setBusy(true);
    setError(null);
    setOk(null);
    try {
      // Writing the unchanged spec orders a failing host's certificate again at once.
      await api<Resource>("PUT", resourceApi(props.slug, "domain", r.name, props.view.env), { spec: r.spec, version: r.version });
      props.view.replace(await api<Resource>("POST", resourceApi(props.slug, "domain", r.name, props.view.env, "/observe")));
      setOk("The certificates are being ordered again now; refresh the status to follow them.");
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="card" aria-labelledby="certs-title">
      <h3 id="certs-title">Certificates</h3>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      {!props.tls ? (
        <p class="muted">HTTPS is not asked for: the hosts are served over plain HTTP only.</p>
      ) : !hosts || hosts.length === 0 ? (
        <p class="muted">No certificate is reported for these hosts: this server issues them when its HTTPS listener is on (OPS_INGRESS_TLS_LISTEN).</p>
      ) : (
        <>
          <table class="certificates">
            <caption class="visually-hidden">Certificates of {r.name}</caption>
            <thead>
              <tr>
                <th scope="col">Host</th>
                <th scope="col">State</th>
                <th scope="col">Valid until</th>
                <th scope="col">Source</th>
                <th scope="col">Problem</th>
              </tr>
            </thead>
            <tbody>
              {hosts.map((h) => (
                <tr key={h.host}>
                  <td>{h.host}</td>
                  <td>
                    <span class={`badge badge-${CERT_BADGE[h.state] ?? "degraded"}`}>{h.state}</span>
                  </td>
                  <td>{h.not_after ? when(h.not_after) : "—"}</td>
                  <td>{h.source === "acme" ? "ACME" : h.source}</td>
                  <td>
                    {h.reason ?? <span class="muted">none</span>}
                    {h.state === "failing" && h.next_attempt_at && <div class="hint">next attempt {when(h.next_attempt_at)}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {hosts.some((h) => h.state === "failing") && (
            <div class="actions">
              <Action access={props.access} perm="resources.write" env={props.view.env} off={busy} onClick={() => void retry()}>
                {busy ? "Ordering…" : "Retry now"}
              </Action>
            </div>
          )}
        </>
      )}
    </section>
  );
}

export function DomainPage(props: SectionProps) {
  const slug = props.project.slug;
  return (
    <ResourceFrame {...props}>
      {(v) => {
        const spec = v.resource.spec as DomainSpec;
        const tls = spec.tls ?? true;
        const prefix = spec.path_prefix ?? "/";
        const valid = new Set((certificatesOf(v.resource) ?? []).filter((c) => c.state === "valid").map((c) => c.host));
        return (
          <>
            <dl class="facts">
              <dt>Hosts</dt>
              <dd>
                <ul class="urls">
                  {(spec.hosts ?? []).map((h) => (
                    <li key={h}>
                      {h.startsWith("*.") ? (
                        <code>{h}</code>
                      ) : (
                        <a href={`${valid.has(h) ? "https" : "http"}://${h}${prefix}`} target="_blank" rel="noopener noreferrer">{`${h}${prefix === "/" ? "" : prefix}`}</a>
                      )}
                    </li>
                  ))}
                </ul>
              </dd>
              <dt>Routed to</dt>
              <dd>
                {spec.service ? <Link href={`/projects/${slug}/deployments/${encodeURIComponent(spec.service)}?environment=${encodeURIComponent(v.env)}`}>service {spec.service}</Link> : "—"}
                {spec.port ? `, port ${spec.port}` : ", the service's port"}
                {prefix !== "/" && `, paths under ${prefix}`}
              </dd>
              <dt>HTTPS</dt>
              <dd>{tls ? `asked for${spec.redirect_http ?? true ? ", plain HTTP redirected once a host has its certificate" : ""}` : "not asked for"}</dd>
            </dl>
            <Certificates slug={slug} access={props.access} view={v} tls={tls} />
            <ResourceFacts resource={v.resource} skip={["certificate", "hosts", "service", "tls"]} />
            {v.entry && <SpecEditor project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} onSaved={v.replace} />}
            <DeleteResource project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} />
          </>
        );
      }}
    </ResourceFrame>
  );
}
