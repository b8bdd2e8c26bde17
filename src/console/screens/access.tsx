/**
 * A project's Access page (`/projects/<slug>/access`): its members (people and machines, each
 * with their role; estate-wide members are listed but changed on the Operators page), adding an
 * operator with a role, changing a member's role and removing one; and the tokens pinned to the
 * project, which their owner or someone who manages operators may revoke.
 */
import { useState } from "preact/hooks";
import { api, type Token } from "../api";
import { when, ActionsHeader } from "../ui";
import { routeEnvironment, type Access } from "../access";
import type { SectionProps } from "../frame";
import { Action, Denied } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { Empty, Outcome, Pending, Scroll, useActions, useLoad } from "../widgets/load";
import { AccessTabs, type Member, type Role } from "../widgets/access-shapes";
import { TokenTable } from "../widgets/token-table";
import { SelectField } from "../widgets/select-field";

interface Candidate {
  id: string;
  email: string;
  display_name: string;
  kind: string;
}

/** The members routes evaluate in the default environment (they take no environment). */
const ENV = routeEnvironment();

export function AccessPage(props: SectionProps) {
  const slug = props.project.slug;
  const base = `/api/v1/projects/${slug}`;
  const manage = props.access.can("project.members", ENV);
  const seeTokens = props.access.can("project.members", null);
  const loaded = useLoad(
    () =>
      Promise.all([
        api<Member[]>("GET", `${base}/members`),
        api<Role[]>("GET", `${base}/roles`),
        manage ? api<Candidate[]>("GET", `${base}/members/candidates`) : Promise.resolve(null),
        seeTokens ? api<Token[]>("GET", `${base}/tokens`) : Promise.resolve(null),
      ]),
    [slug],
  );
  const [removing, setRemoving] = useState<Member | null>(null);
  const actions = useActions(loaded.reload, { settle: () => setRemoving(null) });
  const { busy, run: act } = actions;

  if (!loaded.data) {
    return (
      <section>
        <AccessTabs slug={slug} current="members" />
        <Pending what="members" error={loaded.error} tall />
      </section>
    );
  }
  const [members, roles, candidates, tokens] = loaded.data;
  const roleName = (id: string) => roles.find((r) => r.id === id)?.display_name ?? id;
  return (
    <section aria-labelledby="members-title">
      <AccessTabs slug={slug} current="members" />
      <h2 id="members-title">Members</h2>
      <Outcome of={actions} />
      {removing && (
        <Confirm title={`Remove ${removing.display_name}?`} yes="Yes, remove" danger busy={busy} onConfirm={() => void act(async () => (await api("DELETE", `${base}/members/${removing.operator_id}`), `${removing.display_name} is no longer a member.`))} onCancel={() => setRemoving(null)}>
          <p>They lose their {removing.role_name} role in {slug} at once. Tokens they minted for the project stop working for it.</p>
        </Confirm>
      )}
      <Scroll>
        <table class="members">
          <caption class="visually-hidden">Members of {slug}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email or handle</th>
              <th scope="col">Role</th>
              <th scope="col">Since</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {members.map((m) => {
              const estate = m.project == null;
              return (
                <tr key={`${m.operator_id}-${m.project ?? ""}`}>
                  <td>
                    {m.display_name}
                    {m.kind === "machine" && <span class="tag">machine</span>}
                  </td>
                  <td>{m.email}</td>
                  <td>
                    {estate || !manage ? (
                      <span title={estate ? "An estate-wide role: it applies in every project and is changed on the Operators page." : props.access.why("project.members", ENV)}>
                        {m.role_name}
                        {estate && <span class="tag">every project</span>}
                      </span>
                    ) : (
                      <select
                        aria-label={`Role of ${m.display_name}`}
                        value={m.role_id}
                        disabled={busy}
                        onChange={(e) => {
                          const role = e.currentTarget.value;
                          void act(async () => (await api("PUT", `${base}/members/${m.operator_id}`, { operator_id: m.operator_id, role_id: role }), `${m.display_name} is now ${roleName(role)}.`));
                        }}
                      >
                        {roles.map((r) => (
                          <option key={r.id} value={r.id}>
                            {r.display_name}
                          </option>
                        ))}
                      </select>
                    )}
                  </td>
                  <td>{when(m.since)}</td>
                  <td>
                    {!estate && (
                      <Action access={props.access} perm="project.members" env={ENV} class="small" label={`Remove ${m.display_name}`} onClick={() => setRemoving(m)}>
                        Remove
                      </Action>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </Scroll>
      {candidates ? <AddMember candidates={candidates} roles={roles} onAdd={(id, role, who) => void act(async () => (await api("POST", `${base}/members`, { operator_id: id, role_id: role }), `${who} is now a member as ${roleName(role)}.`))} /> : <Denied access={props.access} perm="project.members" env={ENV} what="Adding members" />}
      <Tokens slug={slug} me={props.me.operator_id} access={props.access} tokens={tokens} onRevoke={(tk) => void act(async () => (await api("DELETE", `/api/v1/tokens/${tk.id}`), `The token "${tk.name}" is revoked.`))} />
    </section>
  );
}

function AddMember(props: { candidates: Candidate[]; roles: Role[]; onAdd(id: string, role: string, who: string): void }) {
  const [who, setWho] = useState(props.candidates[0]?.id ?? "");
  const [role, setRole] = useState(props.roles.find((r) => r.slug === "developer")?.id ?? props.roles[0]?.id ?? "");
  if (props.candidates.length === 0) return <Empty>Every operator is a member already. Add people and machines on the Operators page.</Empty>;
  const person = props.candidates.find((c) => c.id === who);
  return (
    <form
      class="card grid-form add-member"
      onSubmit={(e) => {
        e.preventDefault();
        if (person) props.onAdd(person.id, role, person.display_name);
      }}
      aria-labelledby="add-member-title"
    >
      <h3 id="add-member-title">Add a member</h3>
      <div>
        <SelectField id="member-who" label="Operator" value={who} options={props.candidates.map((c) => [c.id, `${c.display_name} (${c.email})${c.kind === "machine" ? ", machine" : ""}`] as const)} onChange={setWho} />
      </div>
      <div>
        <SelectField id="member-role" label="Role" value={role} options={props.roles.map((r) => [r.id, `${r.display_name}${r.fixed ? "" : " (this project's)"}`] as const)} onChange={setRole} />
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Add member
        </button>
      </div>
    </form>
  );
}

function Tokens(props: { slug: string; me: string; access: Access; tokens: Array<Token & { operator_id?: string }> | null; onRevoke(t: Token): void }) {
  const manages = props.access.can("operators.manage", null);
  return (
    <section aria-labelledby="project-tokens-title">
      <h2 id="project-tokens-title">Tokens pinned to {props.slug}</h2>
      {props.tokens === null ? (
        <Denied access={props.access} perm="project.members" env={null} what="Seeing the project's tokens" />
      ) : props.tokens.length === 0 ? (
        <Empty>No token is pinned to this project.</Empty>
      ) : (
        <Scroll>
          <TokenTable tokens={props.tokens} show={{ operator: true }} blocked={(tk) => (tk.operator_id === props.me || manages ? "" : "Only the token's owner, or someone who manages operators, can revoke it.")} onRevoke={props.onRevoke} />
        </Scroll>
      )}
    </section>
  );
}
