/**
 * A project's roles and environment policies (`/projects/<slug>/access/roles`): the fixed roles
 * every project has (read only) and the project's own, each with its permissions; a form that
 * builds a role from the permission catalog, each permission with its description, and edits or
 * deletes the project's roles; and the environment policies that narrow a project role in one
 * environment (set by keeping some of the role's permissions there, or removed).
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { when, ActionsHeader } from "../ui";
import { routeEnvironment } from "../access";
import type { SectionProps } from "../frame";
import { Action, Denied } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { Empty, Outcome, Pending, Scroll, useActions, useLoad } from "../widgets/load";
import { AccessTabs, PermissionPicker, type Permission, type Policy, type Role } from "../widgets/access-shapes";
import { SelectField } from "../widgets/select-field";

const ENV = routeEnvironment();

export function RolesPage(props: SectionProps) {
  const slug = props.project.slug;
  const base = `/api/v1/projects/${slug}`;
  const loaded = useLoad(() => Promise.all([api<Role[]>("GET", `${base}/roles`), api<Permission[]>("GET", "/api/v1/permissions"), api<Policy[]>("GET", `${base}/environment-policies`)]), [slug]);
  const [editing, setEditing] = useState<Role | "new" | null>(null);
  const [deleting, setDeleting] = useState<Role | null>(null);

  const actions = useActions(loaded.reload, { succeeded: () => setEditing(null), settle: () => setDeleting(null) });
  const { busy, run: act } = actions;

  if (!loaded.data) {
    return (
      <section>
        <AccessTabs slug={slug} current="roles" />
        <Pending what="roles" error={loaded.error} tall />
      </section>
    );
  }
  const [roles, permissions, policies] = loaded.data;
  const labelOf = (k: string) => permissions.find((p) => p.key === k)?.label ?? k;
  const manage = props.access.can("project.members", ENV);
  return (
    <section aria-labelledby="roles-title">
      <AccessTabs slug={slug} current="roles" />
      <div class="card-head">
        <h2 id="roles-title">Roles</h2>
        <Action access={props.access} perm="project.members" env={ENV} class="primary" onClick={() => setEditing("new")}>
          New role
        </Action>
      </div>
      <Outcome of={actions} />
      {deleting && (
        <Confirm title={`Delete the role ${deleting.display_name}?`} yes="Yes, delete" danger busy={busy} onConfirm={() => void act(async () => (await api("DELETE", `${base}/roles/${deleting.id}`), `The role ${deleting.display_name} is deleted.`))} onCancel={() => setDeleting(null)}>
          <p>{deleting.members > 0 ? `${deleting.members} member(s) still hold it: the server refuses until they have another role.` : "No member holds it."}</p>
        </Confirm>
      )}
      {editing && <RoleForm key={editing === "new" ? "new" : editing.id} base={base} role={editing === "new" ? null : editing} permissions={permissions} busy={busy} onSave={(msg, body, id) => void act(async () => (await api(id ? "PUT" : "POST", id ? `${base}/roles/${id}` : `${base}/roles`, body), msg))} onCancel={() => setEditing(null)} />}
      <ul class="roles">
        {roles.map((r) => (
          <li key={r.id} class="card role">
            <div class="card-head">
              <h3>
                {r.display_name} <code class="muted">{r.slug}</code>
                {r.fixed ? <span class="tag">fixed</span> : <span class="tag">this project's</span>}
              </h3>
              {!r.fixed && (
                <div class="actions">
                  <Action access={props.access} perm="project.members" env={ENV} class="small" label={`Edit ${r.display_name}`} onClick={() => setEditing(r)}>
                    Edit
                  </Action>
                  <Action access={props.access} perm="project.members" env={ENV} class="small danger" label={`Delete ${r.display_name}`} onClick={() => setDeleting(r)}>
                    Delete
                  </Action>
                </div>
              )}
            </div>
            <p class="muted">
              {r.description || "No description."} {r.members} member{r.members === 1 ? "" : "s"}.
            </p>
            <details>
              <summary>
                {r.permissions.length} permission{r.permissions.length === 1 ? "" : "s"}
              </summary>
              <p class="perm-list">{r.permissions.map(labelOf).join(", ") || "none"}</p>
            </details>
          </li>
        ))}
      </ul>

      <h2 id="policies-title">Environment policies</h2>
      <p class="muted">A policy keeps only some of a project role's permissions in one environment. Fixed roles take no policy.</p>
      {policies.length === 0 ? (
        <Empty>No policies: every role has its full set in every environment.</Empty>
      ) : (
        <Scroll>
          <table class="policies">
            <thead>
              <tr>
                <th scope="col">Environment</th>
                <th scope="col">Role</th>
                <th scope="col">Takes away</th>
                <th scope="col">Changed</th>
                <ActionsHeader />
              </tr>
            </thead>
            <tbody>
              {policies.map((p) => (
                <tr key={`${p.environment}/${p.role_id}`}>
                  <td>{p.environment}</td>
                  <td>{p.role_name}</td>
                  <td>{p.removed.map(labelOf).join(", ") || "nothing"}</td>
                  <td>{when(p.updated_at)}</td>
                  <td>
                    <Action access={props.access} perm="project.members" env={p.environment} class="small" label={`Remove the policy of ${p.role_name} in ${p.environment}`} onClick={() => void act(async () => (await api("DELETE", `${base}/environment-policies/${encodeURIComponent(p.environment)}/${p.role_id}`), `${p.role_name} has its full set in ${p.environment} again.`))}>
                      Remove
                    </Action>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
      {manage ? (
        <PolicyForm
          key={roles.map((r) => `${r.id}:${r.permissions.join(",")}`).join(" ")}
          environments={props.project.environments} roles={roles.filter((r) => !r.fixed)} permissions={permissions} busy={busy} onSave={(env, role, allowed, name) => void act(async () => (await api("PUT", `${base}/environment-policies/${encodeURIComponent(env)}/${role}`, { allowed }), `${name} in ${env} keeps ${allowed.length} permission(s).`))} />
      ) : (
        <Denied access={props.access} perm="project.members" env={ENV} what="Setting policies" />
      )}
    </section>
  );
}

function RoleForm(props: { base: string; role: Role | null; permissions: Permission[]; busy: boolean; onSave(msg: string, body: unknown, id: string | null): void; onCancel(): void }) {
  const r = props.role;
  const [slug, setSlug] = useState(r?.slug ?? "");
  const [name, setName] = useState(r?.display_name ?? "");
  const [description, setDescription] = useState(r?.description ?? "");
  const [chosen, setChosen] = useState<Set<string>>(new Set(r?.permissions ?? ["project.read"]));
  return (
    <form
      class="card role-form"
      onSubmit={(e) => {
        e.preventDefault();
        const body = { slug: slug.trim(), display_name: name.trim(), description: description.trim(), permissions: props.permissions.map((p) => p.key).filter((k) => chosen.has(k)) };
        props.onSave(r ? `The role ${body.display_name} is saved.` : `The role ${body.display_name} is created.`, body, r?.id ?? null);
      }}
      aria-labelledby="role-form-title"
    >
      <h3 id="role-form-title">{r ? `Edit ${r.display_name}` : "New role"}</h3>
      <div class="grid-form">
        <div>
          <label for="role-name">Display name</label>
          <input id="role-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <div>
          <label for="role-slug">Slug</label>
          <input id="role-slug" required maxLength={63} pattern="[a-z0-9][a-z0-9\-]*" value={slug} readOnly={!!r} onInput={(e) => setSlug(e.currentTarget.value)} />
        </div>
      </div>
      <label for="role-description">Description</label>
      <input id="role-description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      <PermissionPicker idPrefix="role" permissions={props.permissions.filter((p) => p.group !== "Estate")} chosen={chosen} onChange={setChosen} />
      <div class="actions">
        <button type="submit" class="primary" disabled={props.busy}>
          {r ? "Save role" : "Create role"}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function PolicyForm(props: { environments: string[]; roles: Role[]; permissions: Permission[]; busy: boolean; onSave(env: string, role: string, allowed: string[], name: string): void }) {
  const [env, setEnv] = useState(props.environments[0] ?? "production");
  const [roleId, setRoleId] = useState(props.roles[0]?.id ?? "");
  const role = props.roles.find((r) => r.id === roleId);
  const [kept, setKept] = useState<Set<string>>(new Set(role?.permissions ?? []));
  if (props.roles.length === 0) return <Empty>Policies apply to the project's own roles: create one first.</Empty>;
  return (
    <form
      class="card policy-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (role) props.onSave(env, role.id, role.permissions.filter((k) => kept.has(k)), role.display_name);
      }}
      aria-labelledby="policy-form-title"
    >
      <h3 id="policy-form-title">Set a policy</h3>
      <div class="grid-form">
        <div>
          <SelectField id="policy-env" label="Environment" value={env} options={props.environments} onChange={setEnv} />
        </div>
        <div>
          <label for="policy-role">Role</label>
          <select
            id="policy-role"
            value={roleId}
            onChange={(e) => {
              setRoleId(e.currentTarget.value);
              setKept(new Set(props.roles.find((r) => r.id === e.currentTarget.value)?.permissions ?? []));
            }}
          >
            {props.roles.map((r) => (
              <option key={r.id} value={r.id}>
                {r.display_name}
              </option>
            ))}
          </select>
        </div>
      </div>
      <p class="hint">Keep what the role may do in {env}; unchecked permissions are taken away there.</p>
      {role && <PermissionPicker idPrefix="policy" permissions={props.permissions} chosen={kept} onChange={setKept} only={new Set(role.permissions)} />}
      <div class="actions">
        <button type="submit" class="primary" disabled={props.busy || !role}>
          Set policy
        </button>
      </div>
    </form>
  );
}
