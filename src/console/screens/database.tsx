/**
 * A database's page: its provisioning state on the PostgreSQL plane (name, size, connections,
 * server version), where its connection string lives (a secret variable of the env group of the
 * service the spec names: set or not, never its value — no route gives a group's secret value
 * back), rotating the role's password, the pgBackRest restore runbook, the spec editor (the
 * fields fixed at creation locked) and delete, which wants the name typed.
 */
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link, when } from "../ui";
import { ARCHIVED_REASON, type Access } from "../access";
import type { SectionProps } from "../frame";
import { Action } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { errorText } from "../widgets/load";
import { ResourceFrame, type ResourceView } from "../widgets/resource-frame";
import { DeleteResource, ResourceFacts, SpecEditor, resourceApi, type Resource } from "../widgets/resources";
import type { SecretVariable } from "../widgets/secrets";

const FIXED_AT_CREATION: ReadonlySet<string> = new Set(["engine", "adopted", "database", "service", "variable"]);

interface Runbook {
  backup: string;
  database: string;
  stanza: string;
  steps: string[];
  text: string;
}

/** Where the connection string is, and whether it is set. */
function ConnectionString(props: { slug: string; access: Access; view: ResourceView }) {
  const spec = props.view.resource.spec as { service?: string | null; variable?: string; adopted?: boolean };
  const variable = spec.variable ?? "DATABASE_URL";
  const [where, setWhere] = useState<{ group: string | null; stored: SecretVariable | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const env = props.view.env;
  useEffect(() => {
    if (!spec.service) return;
    api<Resource>("GET", resourceApi(props.slug, "service", spec.service, env))
      .then(async (svc) => {
        const group = (svc.spec as { env_group?: string | null }).env_group ?? null;
        if (!group || !props.access.can("secrets.read", env)) return setWhere({ group, stored: null });
        const vars = await api<SecretVariable[]>("GET", resourceApi(props.slug, "secret-group", group, env, "/variables"));
        setWhere({ group, stored: vars.find((v) => v.name === variable) ?? null });
      })
      .catch((e) => setError(errorText(e)));
  }, [props.slug, env, spec.service, variable, props.view.resource.version]);
  if (spec.adopted) return <p>An adopted database: ops records it but does not own its password or connection string.</p>;
  if (!spec.service) return null;
  return (
    <dl class="facts">
      <dt>Connection string</dt>
      <dd>
        {error ? (
          <span class="muted">{error}</span>
        ) : !where ? (
          <span class="muted">Looking it up…</span>
        ) : (
          <>
            <code>{variable}</code> in{" "}
            {where.group ? (
              <Link href={`/projects/${props.slug}/secrets?environment=${encodeURIComponent(env)}&group=${encodeURIComponent(where.group)}`}>env group {where.group}</Link>
            ) : (
              "no env group"
            )}{" "}
            of service {spec.service}
            {where.stored ? `: set (version ${where.stored.version}, ${when(where.stored.updated_at)})${where.stored.pending ? ", waiting for the group's next rotation" : ""}.` : props.access.can("secrets.read", env) ? ": not set." : "."}
            <p class="hint">A secret variable: its value is never shown. The service reads it from its environment.</p>
          </>
        )}
      </dd>
    </dl>
  );
}

function Maintenance(props: { slug: string; access: Access; view: ResourceView; archived: boolean }) {
  const r = props.view.resource;
  const env = props.view.env;
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [ok, setOk] = useState<string | null>(null);
  const [runbook, setRunbook] = useState<Runbook | null>(null);
  const adopted = (r.spec as { adopted?: boolean }).adopted === true;

  async function rotate() {
    setBusy(true);
    setError(null);
    try {
      props.view.replace(await api<Resource>("POST", resourceApi(props.slug, "database", r.name, env, "/rotate-password")));
      setOk("The role has a new password on the plane, and every connection string that held the old one now holds the new one. Services read it after the group's next rotation.");
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
      setAsking(false);
    }
  }
  async function showRunbook() {
    setError(null);
    try {
      setRunbook(await api<Runbook>("GET", resourceApi(props.slug, "database", r.name, env, "/restore-runbook")));
    } catch (e) {
      setError(errorText(e));
    }
  }
  return (
    <section class="card" aria-labelledby="db-maint-title">
      <h3 id="db-maint-title">Password and backups</h3>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      {asking ? (
        <Confirm title="Rotate the password?" yes="Yes, rotate" busy={busy} onConfirm={() => void rotate()} onCancel={() => setAsking(false)}>
          <p>The database role gets a new password on the plane at once; connections opened with the old one keep working until they close.</p>
        </Confirm>
      ) : (
        <div class="actions">
          <Action access={props.access} perm="databases.manage" env={env} off={adopted ? "An adopted database's password belongs to whoever owns it." : props.archived ? ARCHIVED_REASON : false} onClick={() => setAsking(true)}>
            Rotate password…
          </Action>
          <Action access={props.access} perm="databases.manage" env={env} onClick={() => void showRunbook()}>
            Show restore runbook
          </Action>
        </div>
      )}
      {runbook && (
        <>
          <p>
            Restore <code>{runbook.database}</code> from the plane's pgBackRest stanza <code>{runbook.stanza}</code>
            {runbook.backup === "null" ? " (point-in-time recovery is off: OPS_DB_PLANE_PITR)" : ` (${runbook.backup})`}:
          </p>
          <pre class="runbook" aria-label="Restore runbook">
            {runbook.text}
          </pre>
          <button type="button" class="small" onClick={() => void navigator.clipboard?.writeText(runbook.text)}>
            Copy the steps
          </button>
        </>
      )}
    </section>
  );
}

export function DatabasePage(props: SectionProps) {
  return (
    <ResourceFrame {...props}>
      {(v) => (
        <>
          <ResourceFacts resource={v.resource} />
          <ConnectionString slug={props.project.slug} access={props.access} view={v} />
          <Maintenance slug={props.project.slug} access={props.access} view={v} archived={props.project.archived} />
          {v.entry && <SpecEditor project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} locked={FIXED_AT_CREATION} onSaved={v.replace} />}
          <DeleteResource project={props.project} access={props.access} entry={v.entry} resource={v.resource} env={v.env} />
        </>
      )}
    </ResourceFrame>
  );
}
