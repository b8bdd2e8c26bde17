/**
 * The account page: who you are, two-factor authentication (enrol with a QR code of the
 * otpauth URI, confirm with a code; remove), live sessions (revoke), and tokens (mint — the
 * secret is shown once — and revoke).
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Me, type Session, type Token } from "../api";
import { Alert, QrCode, when } from "../ui";
import { McpCard } from "../widgets/account-mcp";

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : "That did not work.";
}

function Mfa(props: { me: Me; onChange: () => void }) {
  const [enrol, setEnrol] = useState<{ secret: string; uri: string } | null>(null);
  const [code, setCode] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [ok, setOk] = useState<string | null>(null);

  async function start() {
    setError(null);
    setOk(null);
    try {
      setEnrol(await api<{ secret: string; uri: string }>("POST", "/api/v1/me/mfa/enrol"));
    } catch (e) {
      setError(message(e));
    }
  }
  async function confirm(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      await api("POST", "/api/v1/me/mfa/confirm", { code: code.replace(/\s/g, "") });
      setEnrol(null);
      setCode("");
      setOk("Two-factor authentication is on. You will be asked for a code when you sign in.");
      props.onChange();
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? "That code is not valid. Enter the current code from your app." : message(err));
    }
  }
  async function remove() {
    if (!confirm_("Remove two-factor authentication from your account?")) return;
    setError(null);
    try {
      await api("DELETE", "/api/v1/me/mfa");
      setOk("Two-factor authentication was removed.");
      props.onChange();
    } catch (e) {
      setError(message(e));
    }
  }

  return (
    <section class="card" aria-labelledby="mfa-title">
      <h2 id="mfa-title">Two-factor authentication</h2>
      {ok && <Alert kind="ok">{ok}</Alert>}
      {props.me.mfa && !enrol && (
        <>
          <p>
            <span class="badge badge-operational">On</span> Sign-in asks for a code from your authenticator app.
          </p>
          <button type="button" class="danger" onClick={() => void remove()}>
            Remove two-factor authentication
          </button>
        </>
      )}
      {!props.me.mfa && !enrol && (
        <>
          <p>
            <span class="badge badge-degraded">Off</span> Protect your account with a code from an authenticator app.
          </p>
          <button type="button" class="primary" onClick={() => void start()}>
            Set up two-factor authentication
          </button>
        </>
      )}
      {enrol && (
        <form onSubmit={confirm}>
          <ol class="steps">
            <li>Scan this QR code with your authenticator app.</li>
          </ol>
          <QrCode value={enrol.uri} label="QR code of the authenticator setup link" />
          <p>
            Or enter this key by hand: <code class="secret">{enrol.secret}</code>
          </p>
          <ol class="steps" start={2}>
            <li>Enter the 6-digit code the app shows.</li>
          </ol>
          <label for="mfa-code">Code</label>
          <input id="mfa-code" class="otp" inputMode="numeric" autocomplete="one-time-code" maxLength={8} required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
          {error && <Alert>{error}</Alert>}
          <div class="actions">
            <button type="submit" class="primary">
              Confirm
            </button>
            <button type="button" onClick={() => setEnrol(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {error && !enrol && <Alert>{error}</Alert>}
    </section>
  );
}

function confirm_(text: string): boolean {
  return typeof window.confirm === "function" ? window.confirm(text) : true;
}

function Sessions() {
  const [list, setList] = useState<Session[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    api<Session[]>("GET", "/api/v1/me/sessions")
      .then(setList)
      .catch((e) => setError(message(e)));
  useEffect(() => void load(), []);
  async function revoke(id: string) {
    try {
      await api("DELETE", `/api/v1/me/sessions/${id}`);
      await load();
    } catch (e) {
      setError(message(e));
    }
  }
  return (
    <section class="card" aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions</h2>
      {error && <Alert>{error}</Alert>}
      {list === null ? (
        <p aria-busy="true">Loading…</p>
      ) : (
        <table>
          <caption class="visually-hidden">Your signed-in sessions</caption>
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Address</th>
              <th scope="col">Browser or client</th>
              <th scope="col">Started</th>
              <th scope="col">Expires</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((s) => (
              <tr key={s.id}>
                <td>
                  {s.kind}
                  {s.current && <span class="tag">this session</span>}
                </td>
                <td>
                  <code>{s.ip || "—"}</code>
                </td>
                <td class="ua">{s.user_agent || "—"}</td>
                <td>{when(s.created_at)}</td>
                <td>{when(s.expires_at)}</td>
                <td>
                  {!s.current && (
                    <button type="button" class="small" onClick={() => void revoke(s.id)} aria-label={`Revoke the ${s.kind} session from ${s.ip || "an unknown address"}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Tokens(props: { me: Me }) {
  const [list, setList] = useState<Token[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [secret, setSecret] = useState<{ name: string; value: string } | null>(null);
  const [name, setName] = useState("");
  const [project, setProject] = useState("");
  const [roleId, setRoleId] = useState("");
  const [roles, setRoles] = useState<Array<{ id: string; name: string }>>([]);
  const [kind, setKind] = useState("api");
  const [expiry, setExpiry] = useState("90");

  const projects = [...new Set(props.me.memberships.map((m) => m.project).filter((p): p is string => !!p))].sort();
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
    api<Array<{ id: string; display_name: string }>>("GET", `/api/v1/projects/${encodeURIComponent(project)}/roles`)
      .then((rs) => setRoles(rs.map((r) => ({ id: r.id, name: r.display_name }))))
      .catch(() => setRoles(own));
  }, [project]);
  useEffect(() => {
    if (!roles.some((r) => r.id === roleId)) setRoleId(roles[0]?.id ?? "");
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
        <table>
          <caption class="visually-hidden">Your tokens</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Kind</th>
              <th scope="col">Role</th>
              <th scope="col">Project</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((t) => (
              <tr key={t.id} class={t.revoked ? "revoked" : ""}>
                <td>{t.name}</td>
                <td>{t.kind}</td>
                <td>{t.role_name}</td>
                <td>{t.project ?? "any"}</td>
                <td>{t.expires_at ? when(t.expires_at) : "never"}</td>
                <td>{when(t.last_used)}</td>
                <td>
                  {t.revoked ? (
                    <span class="tag">revoked</span>
                  ) : (
                    <button type="button" class="small" onClick={() => void revoke(t)} aria-label={`Revoke token ${t.name}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Mint a token</h3>
      <form onSubmit={mint} class="grid-form">
        <div>
          <label for="token-name">Name</label>
          <input id="token-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <div>
          <label for="token-project">Project</label>
          <select id="token-project" value={project} onChange={(e) => setProject(e.currentTarget.value)}>
            <option value="">Any (not pinned)</option>
            {projects.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="token-role">Role</label>
          <select id="token-role" value={roleId} onChange={(e) => setRoleId(e.currentTarget.value)} required>
            {roles.map((r) => (
              <option key={r.id} value={r.id}>
                {r.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="token-kind">Kind</label>
          <select id="token-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
            <option value="api">api</option>
            <option value="cli">cli</option>
            <option value="mcp">mcp</option>
          </select>
        </div>
        <div>
          <label for="token-expiry">Expires after</label>
          <select id="token-expiry" value={expiry} onChange={(e) => setExpiry(e.currentTarget.value)}>
            <option value="7">7 days</option>
            <option value="30">30 days</option>
            <option value="90">90 days</option>
            <option value="365">1 year</option>
            <option value="0">Never</option>
          </select>
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

export function AccountPage(props: { me: Me; onChange: () => void }) {
  const me = props.me;
  return (
    <>
      <section aria-labelledby="account-title">
        <h1 id="account-title">Your account</h1>
        <dl class="facts">
          <dt>Name</dt>
          <dd>{me.display_name}</dd>
          <dt>Email</dt>
          <dd>{me.actor}</dd>
          <dt>Roles</dt>
          <dd>{me.memberships.length === 0 ? <span class="muted">none yet</span> : me.memberships.map((m) => `${m.role_name} in ${m.project ?? "every project"}`).join(", ")}</dd>
        </dl>
      </section>
      <Mfa me={me} onChange={props.onChange} />
      <Sessions />
      <McpCard />
      <Tokens me={me} />
    </>
  );
}
