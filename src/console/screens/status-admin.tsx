/**
 * Status administration (`/status/admin`, for people who manage the estate): the public status
 * page's components — the platform's own, which ops probes every minute, and the ones added by
 * hand — with their state and since when; setting a component's state with a reason (kept for
 * operators, never shown publicly); adding and removing components; and the incidents the public
 * page folds from the transitions; the processes that serve the estate, the estate's backups and
 * the server's self-update.
 */
import { useState } from "preact/hooks";
import { api, type Me, type PublicStatus } from "../api";
import { Link, StateBadge, when } from "../ui";
import { accessOf } from "../access";
import { Denied } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { Empty, Outcome, Pending, Scroll, useActions, useLoad } from "../widgets/load";
import { BackupsCard, ProcessesCard, UpdateCard } from "../widgets/appliance";

interface Component {
  slug: string;
  name: string;
  state: "operational" | "degraded" | "down";
  since: string;
  platform: boolean;
}

const STATES = ["operational", "degraded", "down"] as const;

export function StatusAdminPage(props: { me: Me }) {
  const access = accessOf(props.me, null);
  const allowed = access.can("estate.manage", null);
  const loaded = useLoad(() => (allowed ? Promise.all([api<Component[]>("GET", "/api/v1/status/components"), api<PublicStatus>("GET", "/api/v1/status/public", undefined, true)]) : Promise.resolve(null)), [allowed]);
  const [removing, setRemoving] = useState<Component | null>(null);

  const actions = useActions(loaded.reload, { settle: () => setRemoving(null) });
  const act = actions.run;

  const heading = (
    <h1 id="status-admin-title">
      Status administration <Link href="/status">public page</Link>
    </h1>
  );
  if (!allowed) {
    return (
      <section aria-labelledby="status-admin-title">
        {heading}
        <Denied access={access} perm="estate.manage" env={null} what="Managing the status page" />
      </section>
    );
  }
  if (!loaded.data) {
    return (
      <section aria-labelledby="status-admin-title">
        {heading}
        <Pending what="components" error={loaded.error} tall />
      </section>
    );
  }
  const [components, status] = loaded.data;
  return (
    <section aria-labelledby="status-admin-title">
      {heading}
      <Outcome of={actions} />
      {removing && (
        <Confirm title={`Remove ${removing.name}?`} yes="Yes, remove" danger onConfirm={() => void act(async () => (await api("DELETE", `/api/v1/status/components/${removing.slug}`), `${removing.name} is no longer on the status page.`))} onCancel={() => setRemoving(null)}>
          <p>It leaves the public page; its past incidents go with it.</p>
        </Confirm>
      )}
      <Scroll>
        <table class="components-admin">
          <caption class="visually-hidden">Status components</caption>
          <thead>
            <tr>
              <th scope="col">Component</th>
              <th scope="col">State</th>
              <th scope="col">Checked by</th>
              <th scope="col">Set state</th>
            </tr>
          </thead>
          <tbody>
            {components.map((c) => (
              <ComponentRow key={c.slug} c={c} onSet={(state, reason) => void act(async () => (await api("POST", `/api/v1/status/components/${c.slug}/transitions`, { state, ...(reason ? { reason } : {}) }), `${c.name} is ${state}.`))} onRemove={() => setRemoving(c)} />
            ))}
          </tbody>
        </table>
      </Scroll>
      <NewComponent onAdd={(slug, name) => void act(async () => (await api("POST", "/api/v1/status/components", { slug, name }), `${name} is on the status page.`))} />
      <ProcessesCard />
      <BackupsCard />
      <UpdateCard />
      <h2>Incidents</h2>
      {status.incidents.length === 0 ? (
        <Empty>No incidents in the last 30 days.</Empty>
      ) : (
        <ul class="incidents">
          {status.incidents.map((i) => (
            <li key={`${i.slug}-${i.started_at}`}>
              <span class="component-name">{i.name}</span>
              <StateBadge state={i.state} />
              <span class="since muted">
                {when(i.started_at)} – {i.resolved_at ? when(i.resolved_at) : "ongoing"}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function ComponentRow(props: { c: Component; onSet(state: string, reason: string): void; onRemove(): void }) {
  const [state, setState] = useState<string>(props.c.state);
  const [reason, setReason] = useState("");
  const c = props.c;
  return (
    <tr>
      <td>
        <strong>{c.name}</strong> <code class="muted">{c.slug}</code>
      </td>
      <td>
        <StateBadge state={c.state} /> <span class="hint">since {when(c.since)}</span>
      </td>
      <td>{c.platform ? "ops, every minute" : "hand (or the service's health probe)"}</td>
      <td>
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            props.onSet(state, reason.trim());
            setReason("");
          }}
        >
          <select aria-label={`New state of ${c.name}`} value={state} onChange={(e) => setState(e.currentTarget.value)}>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
          <input aria-label={`Reason for ${c.name} (operators only)`} placeholder="Reason (not public)" maxLength={500} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
          <button type="submit" class="small">
            Set
          </button>
          {!c.platform && (
            <button type="button" class="small danger" onClick={props.onRemove} aria-label={`Remove ${c.name}`}>
              Remove
            </button>
          )}
        </form>
      </td>
    </tr>
  );
}

function NewComponent(props: { onAdd(slug: string, name: string): void }) {
  const [slug, setSlug] = useState("");
  const [name, setName] = useState("");
  return (
    <form
      class="card grid-form"
      onSubmit={(e) => {
        e.preventDefault();
        props.onAdd(slug.trim(), name.trim());
        setSlug("");
        setName("");
      }}
      aria-labelledby="new-component-title"
    >
      <h3 id="new-component-title">Add a component</h3>
      <div>
        <label for="component-name">Name</label>
        <input id="component-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <div>
        <label for="component-slug">Slug</label>
        <input id="component-slug" required pattern="[a-z0-9][a-z0-9\-]{0,62}" value={slug} onInput={(e) => setSlug(e.currentTarget.value)} />
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Add component
        </button>
      </div>
    </form>
  );
}
