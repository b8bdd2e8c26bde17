/**
 * The Operators page (`/operators`, for people who manage operators): every person and machine
 * with the roles they hold (estate-wide and per project), two-factor state and whether they are
 * disabled; adding a person or a machine; disabling (which ends their sessions and tokens at
 * once) and enabling; resetting a person's two-factor authentication.
 */
import { useState } from "preact/hooks";
import { api, type Me } from "../api";
import { Alert, when, ActionsHeader } from "../ui";
import { accessOf } from "../access";
import type { ProjectInfo } from "../frame";
import { Action, Denied } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { Pending, Scroll, errorText, useLoad } from "../widgets/load";
import type { Member, Role } from "../widgets/access-shapes";
import { SelectField } from "../widgets/select-field";

interface Operator {
  id: string;
  kind: "person" | "machine";
  name: string;
  display_name: string;
  suspended: boolean;
  mfa: boolean;
  estate_role_id: string | null;
  created_at: string;
}

type Pending_ = { op: Operator; what: "disable" | "reset_mfa" } | null;

/** The roles each operator holds in each project (read from the projects' member lists). */
async function rolesHeld(projects: ProjectInfo[]): Promise<Map<string, string[]>> {
  const held = new Map<string, string[]>();
  for (const p of projects) {
    for (const m of await api<Member[]>("GET", `/api/v1/projects/${p.slug}/members`).catch(() => [] as Member[])) {
      if (m.project == null) continue;
      held.set(m.operator_id, [...(held.get(m.operator_id) ?? []), `${m.role_name} in ${p.slug}`]);
    }
  }
  return held;
}

export function OperatorsPage(props: { me: Me }) {
  const access = accessOf(props.me, null);
  const allowed = access.can("operators.manage", null);
  const loaded = useLoad(async () => {
    if (!allowed) return null;
    const [operators, projects] = await Promise.all([api<Operator[]>("GET", "/api/v1/operators"), api<ProjectInfo[]>("GET", "/api/v1/projects")]);
    const roles = projects[0] ? (await api<Role[]>("GET", `/api/v1/projects/${projects[0].slug}/roles`)).filter((r) => r.fixed) : [];
    return { operators, roles, held: await rolesHeld(projects) };
  }, [allowed]);
  const [asking, setAsking] = useState<Pending_>(null);
  const [busy, setBusy] = useState(false);
  const [ok, setOk] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function patch(op: Operator, body: Record<string, unknown>, done: string) {
    setBusy(true);
    setError(null);
    setOk(null);
    try {
      await api("PATCH", `/api/v1/operators/${op.id}`, body);
      // Said once the table shows it, so the message never runs ahead of the row it speaks of.
      await loaded.reload();
      setOk(done);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
      setAsking(null);
    }
  }

  if (!allowed) {
    return (
      <section aria-labelledby="operators-title">
        <h1 id="operators-title">Operators</h1>
        <Denied access={access} perm="operators.manage" env={null} what="Managing operators" />
      </section>
    );
  }
  if (!loaded.data) {
    return (
      <section aria-labelledby="operators-title">
        <h1 id="operators-title">Operators</h1>
        <Pending what="operators" error={loaded.error} tall />
      </section>
    );
  }
  const { operators, roles, held } = loaded.data;
  const roleName = (id: string | null) => (id ? (roles.find((r) => r.id === id)?.display_name ?? "a role") : null);
  return (
    <section aria-labelledby="operators-title">
      <h1 id="operators-title">Operators</h1>
      {error && <Alert>{error}</Alert>}
      {ok && <Alert kind="ok">{ok}</Alert>}
      {asking && (
        <Confirm
          title={asking.what === "disable" ? `Disable ${asking.op.display_name}?` : `Reset two-factor authentication of ${asking.op.display_name}?`}
          yes={asking.what === "disable" ? "Yes, disable" : "Yes, reset"}
          danger
          busy={busy}
          onConfirm={() => void (asking.what === "disable" ? patch(asking.op, { suspended: true }, `${asking.op.display_name} is disabled.`) : patch(asking.op, { reset_mfa: true }, `${asking.op.display_name} signs in without a second factor until they enrol again.`))}
          onCancel={() => setAsking(null)}
        >
          <p>{asking.what === "disable" ? "Their sessions and tokens stop working at once; nothing they own is deleted." : "Their authenticator is forgotten; they should enrol a new one."}</p>
        </Confirm>
      )}
      <Scroll>
        <table class="operators">
          <caption class="visually-hidden">Operators</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email or handle</th>
              <th scope="col">Roles</th>
              <th scope="col">Two-factor</th>
              <th scope="col">Status</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {operators.map((o) => {
              const roles_ = [roleName(o.estate_role_id) && `${roleName(o.estate_role_id)} in every project`, ...(held.get(o.id) ?? [])].filter(Boolean);
              const self = o.id === props.me.operator_id;
              return (
                <tr key={o.id} class={o.suspended ? "revoked" : undefined}>
                  <td>
                    {o.display_name}
                    {o.kind === "machine" && <span class="tag">machine</span>}
                  </td>
                  <td>{o.name}</td>
                  <td>{roles_.join("; ") || <span class="muted">none</span>}</td>
                  <td>{o.kind === "machine" ? "—" : o.mfa ? "on" : "off"}</td>
                  <td>{o.suspended ? <span class="tag tag-warn">disabled</span> : `since ${when(o.created_at)}`}</td>
                  <td class="row-actions">
                    {o.suspended ? (
                      <button type="button" class="small" disabled={busy} onClick={() => void patch(o, { suspended: false }, `${o.display_name} is enabled again.`)} aria-label={`Enable ${o.display_name}`}>
                        Enable
                      </button>
                    ) : (
                      <Action access={access} perm="operators.manage" env={null} class="small danger" off={self ? "You cannot disable yourself." : busy} label={`Disable ${o.display_name}`} onClick={() => setAsking({ op: o, what: "disable" })}>
                        Disable
                      </Action>
                    )}
                    {o.mfa && (
                      <button type="button" class="small" onClick={() => setAsking({ op: o, what: "reset_mfa" })} aria-label={`Reset two-factor of ${o.display_name}`}>
                        Reset two-factor
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </Scroll>
      <NewOperator roles={roles} onCreated={(name) => void loaded.reload().then(() => setOk(`${name} is added.`))} />
    </section>
  );
}

function NewOperator(props: { roles: Role[]; onCreated(name: string): void }) {
  const [kind, setKind] = useState<"person" | "machine">("person");
  const [id, setId] = useState("");
  const [name, setName] = useState("");
  const [role, setRole] = useState("");
  const [error, setError] = useState<string | null>(null);
  async function create(e: Event) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const password = (form.elements.namedItem("password") as HTMLInputElement | null)?.value ?? "";
    setError(null);
    try {
      await api("POST", "/api/v1/operators", {
        kind,
        display_name: name.trim(),
        ...(kind === "person" ? { email: id.trim(), ...(password ? { password } : {}) } : { handle: id.trim() }),
        estate_role_id: role || null,
      });
      form.reset();
      setId("");
      setName("");
      props.onCreated(name.trim());
    } catch (err) {
      setError(errorText(err));
    }
  }
  return (
    <form class="card grid-form new-operator" onSubmit={(e) => void create(e)} aria-labelledby="new-operator-title">
      <h3 id="new-operator-title">Add an operator</h3>
      <div>
        <label for="op-kind">Kind</label>
        <select id="op-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as "person" | "machine")}>
          <option value="person">person</option>
          <option value="machine">machine</option>
        </select>
      </div>
      <div>
        <label for="op-id">{kind === "person" ? "Email" : "Handle"}</label>
        <input id="op-id" required autocomplete="off" inputMode={kind === "person" ? "email" : "text"} value={id} onInput={(e) => setId(e.currentTarget.value)} />
      </div>
      <div>
        <label for="op-name">Display name</label>
        <input id="op-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      {kind === "person" && (
        <div>
          <label for="op-password">Password</label>
          <input id="op-password" name="password" type="password" autocomplete="new-password" minLength={12} aria-describedby="op-password-hint" />
        </div>
      )}
      <div>
        <SelectField id="op-role" label="Role in every project" value={role} options={[["", "none (add them to projects)"], ...props.roles.map((r) => [r.id, r.display_name] as const)]} onChange={setRole} />
      </div>
      {kind === "person" && (
        <p class="hint" id="op-password-hint">
          At least 12 characters; leave it empty to set one later.
        </p>
      )}
      {error && <Alert>{error}</Alert>}
      <div class="actions">
        <button type="submit" class="primary">
          Add {kind}
        </button>
      </div>
    </form>
  );
}
