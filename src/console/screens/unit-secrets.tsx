/**
 * Per-service secrets (`/projects/<slug>/secrets/services`): each service's (or bucket's) secrets
 * by name with their version and last change — never a value — set through a write-only field,
 * deleted after a confirmation, and, for people allowed to reveal values, the service's dotenv
 * file as a download (the API's one value egress, audited; the values go to the file, not into
 * the page). A unit's secrets are guarded in every environment its service runs in, as the API
 * guards them.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert, when, ActionsHeader } from "../ui";
import type { Access } from "../access";
import type { SectionProps } from "../frame";
import type { PermissionKey } from "../../core/authz/catalog";
import { Confirm } from "../widgets/confirm";
import { Empty, Pending, Scroll, errorText, useLoad } from "../widgets/load";
import { resourceApi, type Resource } from "../widgets/resources";
import { SecretTabs, ValueField } from "../widgets/secrets";
import { SelectField } from "../widgets/select-field";

interface SecretMeta {
  service: string;
  name: string;
  version: number;
  updated_at: string;
}

/** Services and buckets by name, with the environments each service runs in. */
type Units = Map<string, string[]>;

/** Whether `key` is held for `unit` (in every environment it runs in), and why not. */
function unitCheck(access: Access, units: Units, unit: string, key: PermissionKey): string {
  const envs = units.get(unit) ?? [];
  for (const env of envs.length > 0 ? envs : [null]) {
    const why = access.why(key, env);
    if (why) return why;
  }
  return "";
}

export function UnitSecretsPage(props: SectionProps) {
  const slug = props.project.slug;
  const envs = props.project.environments;
  const env = props.query.get("environment") ?? envs[0] ?? "production";
  const loaded = useLoad(async () => {
    const units: Units = new Map();
    for (const e of envs) {
      // A list this person may not read counts as "the service may run there", the stricter guess.
      const services = props.access.can("resources.read", e) ? await api<Resource[]>("GET", resourceApi(slug, "service", null, e)) : null;
      for (const s of services ?? []) units.set(s.name, [...(units.get(s.name) ?? []), e]);
      if (!services) for (const [k, v] of units) units.set(k, [...v, e]);
    }
    if (props.access.can("resources.read", null)) for (const b of await api<Resource[]>("GET", resourceApi(slug, "bucket", null, env))) if (!units.has(b.name)) units.set(b.name, []);
    return { units, secrets: await api<SecretMeta[]>("GET", `/api/v1/projects/${slug}/secrets`) };
  }, [slug]);
  const [removing, setRemoving] = useState<SecretMeta | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [ok, setOk] = useState<string | null>(null);

  const head = <SecretTabs slug={slug} current="services" env={env} />;
  if (!loaded.data) {
    return (
      <section>
        {head}
        <Pending what="secrets" error={loaded.error} tall />
      </section>
    );
  }
  const { units, secrets } = loaded.data;
  const names = [...new Set([...units.keys(), ...secrets.map((s) => s.service)])].sort();
  const unitUrl = (unit: string, name: string) => `/api/v1/projects/${slug}/secrets/${encodeURIComponent(unit)}/${encodeURIComponent(name)}`;

  async function remove(s: SecretMeta) {
    setBusy(true);
    setError(null);
    try {
      await api("DELETE", unitUrl(s.service, s.name));
      setOk(`${s.name} of ${s.service} was deleted.`);
      await loaded.reload();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
      setRemoving(null);
    }
  }

  return (
    <section aria-labelledby="unit-title">
      {head}
      <h2 id="unit-title" class="visually-hidden">
        Per-service secrets
      </h2>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      {removing && (
        <Confirm title={`Delete ${removing.name} of ${removing.service}?`} yes="Yes, delete" danger busy={busy} onConfirm={() => void remove(removing)} onCancel={() => setRemoving(null)}>
          <p>The service no longer receives it after its next restart.</p>
        </Confirm>
      )}
      {secrets.length === 0 ? (
        <Empty>No per-service secrets yet.</Empty>
      ) : (
        <Scroll>
          <table class="unit-secrets">
            <caption class="visually-hidden">Secrets per service</caption>
            <thead>
              <tr>
                <th scope="col">Service</th>
                <th scope="col">Name</th>
                <th scope="col">Version</th>
                <th scope="col">Changed</th>
                <ActionsHeader />
              </tr>
            </thead>
            <tbody>
              {secrets.map((s) => {
                const why = unitCheck(props.access, units, s.service, "secrets.write");
                return (
                  <tr key={`${s.service}/${s.name}`}>
                    <td>{s.service}</td>
                    <td>
                      <code>{s.name}</code>
                    </td>
                    <td>{s.version}</td>
                    <td>{when(s.updated_at)}</td>
                    <td>
                      <button type="button" class={why ? "small blocked" : "small"} aria-disabled={why ? "true" : undefined} title={why || undefined} aria-label={`Delete ${s.name} of ${s.service}`} onClick={() => why || setRemoving(s)}>
                        Delete
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </Scroll>
      )}
      <Downloads access={props.access} units={units} services={[...new Set(secrets.map((s) => s.service))]} slug={slug} />
      <SetSecret access={props.access} units={units} names={names} url={unitUrl} onDone={(msg) => void loaded.reload().then(() => setOk(msg))} />
    </section>
  );
}

function Downloads(props: { slug: string; access: Access; units: Units; services: string[] }) {
  if (props.services.length === 0) return null;
  return (
    <p class="downloads">
      Download as a dotenv file (audited):{" "}
      {props.services.map((s) => {
        const why = unitCheck(props.access, props.units, s, "secrets.reveal");
        return why ? (
          <span key={s} class="muted blocked-link" title={why}>
            {s}.env{" "}
          </span>
        ) : (
          <a key={s} href={`/api/v1/projects/${props.slug}/secrets/${encodeURIComponent(s)}/env`} download={`${s}.env`}>
            {s}.env{" "}
          </a>
        );
      })}
    </p>
  );
}

function SetSecret(props: { access: Access; units: Units; names: string[]; url(unit: string, name: string): string; onDone(msg: string): void }) {
  const [unit, setUnit] = useState(props.names[0] ?? "");
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [reset, setReset] = useState(0);
  const why = unit ? unitCheck(props.access, props.units, unit, "secrets.write") : "";
  async function submit(e: Event) {
    e.preventDefault();
    const field = (e.currentTarget as HTMLFormElement).elements.namedItem("value") as HTMLInputElement;
    const value = field.value;
    field.value = "";
    setReset((n) => n + 1);
    setError(null);
    if (why) return setError(why);
    try {
      await api("PUT", props.url(unit, name.trim()), { value });
      setName("");
      props.onDone(`${name.trim()} of ${unit} is set.`);
    } catch (err) {
      setError(errorText(err));
    }
  }
  if (props.names.length === 0) return <Empty>Secrets belong to a service or a bucket: create one first.</Empty>;
  return (
    <form class="card grid-form set-form" onSubmit={(e) => void submit(e)} aria-labelledby="set-secret-title">
      <h3 id="set-secret-title">Set a secret</h3>
      <div>
        <SelectField id="unit-service" label="Service" value={unit} options={props.names} onChange={setUnit} />
      </div>
      <div>
        <label for="unit-name">Name</label>
        <input id="unit-name" required pattern="[A-Za-z_][A-Za-z0-9_]*" autocomplete="off" spellcheck={false} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <ValueField key={reset} id="unit-value" secret />
      {error && <Alert>{error}</Alert>}
      <div class="actions">
        <button type="submit" class={why ? "primary blocked" : "primary"} aria-disabled={why ? "true" : undefined} title={why || undefined}>
          Set secret
        </button>
      </div>
    </form>
  );
}
