/**
 * A resource's page when its type needs nothing beyond the form (services, buckets, secret
 * groups): its stored status with every figure the type reports, the spec editor, delete, and
 * where the type's own pages are (a service's deployments, a group's variables).
 */
import { Link } from "../ui";
import type { SectionProps } from "../frame";
import { ResourceFrame } from "../widgets/resource-frame";
import { DeleteResource, ResourceFacts, SpecEditor } from "../widgets/resources";

export function ResourcePage(props: SectionProps) {
  const slug = props.project.slug;
  return (
    <ResourceFrame {...props}>
      {(v) => (
        <>
          <ResourceFacts resource={v.resource} skip={v.resource.type === "service" ? ["replicas", "urls", "rollout"] : undefined} />
          {v.resource.type === "service" && (
            <p>
              Replicas, deploys and rollbacks: <Link href={`/projects/${slug}/deployments/${encodeURIComponent(v.resource.name)}?environment=${encodeURIComponent(v.env)}`}>the service's deployments</Link>.
            </p>
          )}
          {v.resource.type === "secret-group" && (
            <p>
              Values, imports and rotation: <Link href={`/projects/${slug}/secrets?environment=${encodeURIComponent(v.env)}&group=${encodeURIComponent(v.resource.name)}`}>the group on the Secrets page</Link>.
            </p>
          )}
          {v.entry && <SpecEditor project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} onSaved={v.replace} />}
          <DeleteResource project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} />
        </>
      )}
    </ResourceFrame>
  );
}
