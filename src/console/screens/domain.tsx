/**
 * A domain's page: its hosts (each a link), the service its traffic goes to (with port and path
 * prefix), whether HTTPS is asked for, and the stored status — every figure the status reports,
 * so certificate fields appear here as soon as the domain's status carries them — then the spec
 * editor and delete.
 */
import { Link } from "../ui";
import type { SectionProps } from "../frame";
import { ResourceFrame } from "../widgets/resource-frame";
import { DeleteResource, ResourceFacts, SpecEditor } from "../widgets/resources";

interface DomainSpec {
  hosts?: string[];
  service?: string;
  port?: number;
  path_prefix?: string;
  tls?: boolean;
  redirect_http?: boolean;
}

export function DomainPage(props: SectionProps) {
  const slug = props.project.slug;
  return (
    <ResourceFrame {...props}>
      {(v) => {
        const spec = v.resource.spec as DomainSpec;
        const tls = spec.tls ?? true;
        const prefix = spec.path_prefix ?? "/";
        return (
          <>
            <dl class="facts">
              <dt>Hosts</dt>
              <dd>
                <ul class="urls">
                  {(spec.hosts ?? []).map((h) => (
                    <li key={h}>{h.startsWith("*.") ? <code>{h}</code> : <a href={`http://${h}${prefix}`} target="_blank" rel="noopener noreferrer">{`${h}${prefix === "/" ? "" : prefix}`}</a>}</li>
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
              <dd>{tls ? `asked for${spec.redirect_http ?? true ? ", plain HTTP redirected" : ""}` : "not asked for"}</dd>
            </dl>
            <ResourceFacts resource={v.resource} />
            {v.entry && <SpecEditor project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} onSaved={v.replace} />}
            <DeleteResource project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} />
          </>
        );
      }}
    </ResourceFrame>
  );
}
