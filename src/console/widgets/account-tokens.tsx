/**
 * The Account page's tokens card: the person's tokens (revoke) and a mint form. The projects
 * offered are every project the person can see (an estate-wide member holds a role in each), a
 * project's roles come from the server, and the role offered first is the least one that can
 * `git push` (issue 27).
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Me, type Token } from "../api";
import { Alert } from "../ui";
import { TokenTable } from "./token-table";
import { SelectField } from "./select-field";

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : "That did not work.";
}

function confirm_(text: string): boolean {
  return typeof window.confirm === "function" ? window.confirm(text) : true;
}

interface RoleChoice {
  id: string;
  name: string;
  permissions?: string[];
}

/** The role with the fewest permissions that can still `git push` (sources.save): the token a newcomer needs. */
function leastThatPushes(roles: RoleChoice[]): RoleChoice | undefined {
  return roles.filter((r) => r.permissions?.includes("sources.save")).sort((a, b) => a.permissions!.length - b.permissions!.length)[0];
}

export function Tokens(props: { me: Me }) {
  const [list, setList] = useState<Token[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [secret, setSecret] = useState<{ name: string; value: string } | null>(null);
  const [name, setName] = useState("");
  const [project, setProject] = useState("");
  const [roleId, setRoleId] = useState("");
  const [roles, setRoles] = useState<RoleChoice[]>([]);
  const [kind, setKind] = useState("api");
  const [expiry, setExpiry] = useState("90");

  // Every project the person can see: an estate-wide member holds a role in each of them.
  const [projects, setProjects] = useState<string[]>(() => [...new Set(props.me.memberships.map((m) => m.project).filter((p): p is string => !!p))].sort());
  useEffect(() => {
    api<Array<{ slug: string; archived: boolean }>>("GET", "/api/v1/projects")
      .then((ps) => {
        const slugs = ps.filter((p) => !p.archived).map((p) => p.slug).sort();
        setProjects(slugs);
        // A token pinned to one project is the safer default.
        setProject((cur) => cur || slugs[0] || "");
      })
      .catch(() => undefined);
  }, []);
  const load = () =>
    api<Token[]>("GET", "/api/v1/tokens")
      .then(setList)
      .catch((e) => setError(message(e)));
  useEffect(() => void load(), []);
  useEffect(() => {
    const own = props.me.memberships.map((m) => ({ id: m.role_id, name: m.role_name }));
    if (!project) {
      setRoles(own.filter((r, i) => own.findIndex((o) => o.id === r.id) === i));
      return;
    }
    api<Array<{ id: string; display_name: string; permissions: string[] }>>("GET", `/api/v1/projects/${encodeURIComponent(project)}/roles`)
      .then((rs) => setRoles(rs.map((r) => ({ id: r.id, name: r.display_name, permissions: r.permissions }))))
      .catch(() => setRoles(own));
  }, [project]);
  useEffect(() => {
    // Each new list (a project chosen) starts at its least role that can push.
    const keep = roles.some((r) => r.id === roleId) ? roleId : (roles[0]?.id ?? "");
    setRoleId(leastThatPushes(roles)?.id ?? keep);
  }, [roles]);

  async function mint(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      const r = await api<{ secret: string; token: Token }>("POST", "/api/v1/tokens", { name, role_id: roleId, project: project || null, kind, expires_in_days: Number(expiry) });
      setSecret({ name: r.token.name, value: r.secret });
      setName("");
      await load();
    } catch (err) {
      setError(message(err));
    }
  }
  async function revoke(t: Token) {
    if (!confirm_(`Revoke the token "${t.name}"? Anything using it stops working at once.`)) return;
    try {
      await api("DELETE", `/api/v1/tokens/${t.id}`);
      await load();
    } catch (e) {
      setError(message(e));
    }
  }

  return (
    <section class="card" aria-labelledby="tokens-title">
      <h2 id="tokens-title">Tokens</h2>
      {secret && (
        <div class="alert alert-ok" role="status">
          <p>
            New token <strong>{secret.name}</strong>. Copy the secret now: it is shown once and never again.
          </p>
          <code class="secret">{secret.value}</code>
          <div class="actions">
            <button type="button" class="small" onClick={() => void navigator.clipboard?.writeText(secret.value)}>
              Copy
            </button>
            <button type="button" class="small" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      {error && <Alert>{error}</Alert>}
      {list === null ? (
        <p aria-busy="true">Loading…</p>
      ) : list.length === 0 ? (
        <p class="muted">No tokens yet.</p>
      ) : (
        <TokenTable tokens={list} caption="Your tokens" show={{ project: true }} onRevoke={(t) => void revoke(t)} />
      )}
      <h3>Mint a token</h3>
      <form onSubmit={mint} class="grid-form">
        <div>
          <label for="token-name">Name</label>
          <input id="token-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <div>
          <SelectField id="token-project" label="Project" value={project} options={[["", "Any (not pinned)"], ...projects]} onChange={setProject} />
        </div>
        <div>
          <SelectField id="token-role" label="Role" value={roleId} options={roles.map((r) => [r.id, r.name] as const)} onChange={setRoleId} required />
        </div>
        <div>
          <SelectField id="token-kind" label="Kind" value={kind} options={["api", "cli", "mcp"]} onChange={setKind} />
        </div>
        <div>
          <SelectField id="token-expiry" label="Expires after" value={expiry} options={[["7", "7 days"], ["30", "30 days"], ["90", "90 days"], ["365", "1 year"], ["0", "Never"]]} onChange={setExpiry} />
        </div>
        <div class="actions">
          <button type="submit" class="primary" disabled={!roleId || !name.trim()}>
            Mint token
          </button>
        </div>
      </form>
    </section>
  );
}
