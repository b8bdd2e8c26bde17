/**
 * The account page: who you are, password, two-factor authentication (enrol with a QR code of
 * the otpauth URI, confirm with a code; remove with the current code, which the server asks for
 * unless the session signed in within ten minutes), live sessions (revoke), tokens (mint — the
 * secret is shown once — and revoke; the role offered first is the least one that can push) and
 * the CLI's install command.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Me, type Session } from "../api";
import { Alert, QrCode, when, ActionsHeader } from "../ui";
import { McpCard } from "../widgets/account-mcp";
import { Tokens } from "../widgets/account-tokens";
import { PasswordCard } from "../widgets/account-password";
import { InstallCliCard } from "../widgets/install-cli";
import { useLoad } from "../widgets/load";
import type { ProjectInfo } from "../frame";

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : "That did not work.";
}

function Mfa(props: { me: Me; onChange: () => void }) {
  const [enrol, setEnrol] = useState<{ secret: string; uri: string } | null>(null);
  const [removing, setRemoving] = useState(false);
  const [code, setCode] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [ok, setOk] = useState<string | null>(null);
  const invalid = (err: unknown) => (err instanceof ApiError && err.status === 401 ? "That code is not valid. Enter the current code from your app." : message(err));

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
      setOk("Two-factor authentication is on. You will be asked for a code when you sign in; your other sessions were signed out.");
      props.onChange();
    } catch (err) {
      setError(invalid(err));
    }
  }
  function startRemoving() {
    setOk(null);
    setError(null);
    setCode("");
    setRemoving(true);
  }
  async function remove(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      await api("DELETE", "/api/v1/me/mfa", { code: code.replace(/\s/g, "") });
      setRemoving(false);
      setCode("");
      setOk("Two-factor authentication was removed.");
      props.onChange();
    } catch (err) {
      setError(invalid(err));
    }
  }
  const codeField = (id: string, label: string) => (
    <>
      <label for={id}>{label}</label>
      <input id={id} class="otp" inputMode="numeric" autocomplete="one-time-code" maxLength={8} required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
    </>
  );

  return (
    <section class="card" aria-labelledby="mfa-title">
      <h2 id="mfa-title">Two-factor authentication</h2>
      {ok && <Alert kind="ok">{ok}</Alert>}
      {props.me.mfa && !enrol && !removing && (
        <>
          <p>
            <span class="badge badge-operational">On</span> Sign-in asks for a code from your authenticator app.
          </p>
          <button type="button" class="danger" onClick={startRemoving}>
            Remove two-factor authentication
          </button>
        </>
      )}
      {props.me.mfa && removing && (
        <form onSubmit={remove}>
          <p>To remove two-factor authentication from your account, enter the code your authenticator app shows now.</p>
          {codeField("mfa-remove-code", "Current code")}
          {error && <Alert>{error}</Alert>}
          <div class="actions">
            <button type="submit" class="danger">
              Remove
            </button>
            <button
              type="button"
              onClick={() => {
                setRemoving(false);
                setError(null);
              }}
            >
              Cancel
            </button>
          </div>
        </form>
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
          {codeField("mfa-code", "Code")}
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
      {error && !enrol && !removing && <Alert>{error}</Alert>}
    </section>
  );
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
              <ActionsHeader />
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
      <PasswordCard />
      <Mfa me={me} onChange={props.onChange} />
      <Sessions />
      <McpCard />
      <Tokens me={me} />
      <InstallForAccount />
    </>
  );
}

function InstallForAccount() {
  const loaded = useLoad(() => api<ProjectInfo[]>("GET", "/api/v1/projects"), []);
  if (!loaded.data) return null;
  return <InstallCliCard projects={loaded.data.filter((p) => !p.archived)} />;
}
