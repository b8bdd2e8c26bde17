/**
 * Device approval (`/device?user_code=…`): a person checks the code their terminal shows, sees
 * who is asking (the client's own name, marked unverified; the requesting address and time),
 * chooses a role — with the server's `mintable` advice — an optional project pin, a name and an
 * expiry, and explicitly approves or denies.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type DeviceGrant, type Me } from "../api";
import { Alert, ago, when } from "../ui";

const EXPIRY_CHOICES = [
  { days: 7, label: "7 days" },
  { days: 30, label: "30 days" },
  { days: 90, label: "90 days" },
  { days: 365, label: "1 year" },
  { days: 0, label: "Never" },
];

function normalise(code: string): string {
  const letters = code.toUpperCase().replace(/[^A-Z]/g, "");
  return letters.length === 8 ? `${letters.slice(0, 4)}-${letters.slice(4)}` : code.trim();
}

export function DevicePage(props: { me: Me; initialCode: string }) {
  const [code, setCode] = useState(props.initialCode);
  const [grant, setGrant] = useState<DeviceGrant | null>(null);
  const [projects, setProjects] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<"approved" | "denied" | null>(null);
  const [busy, setBusy] = useState(false);
  const [roleId, setRoleId] = useState("");
  const [project, setProject] = useState("");
  const [name, setName] = useState("");
  const [expiry, setExpiry] = useState(90);

  async function lookup(c: string) {
    setError(null);
    setGrant(null);
    setDone(null);
    try {
      const g = await api<DeviceGrant>("GET", `/api/v1/auth/device/${encodeURIComponent(normalise(c))}`);
      setGrant(g);
      setRoleId(g.default_role_id ?? g.roles.find((r) => r.mintable)?.id ?? "");
      setProject(g.default_project ?? "");
      const known = new Set<string>();
      for (const m of props.me.memberships) if (m.project) known.add(m.project);
      for (const r of g.roles) if (r.project) known.add(r.project);
      if (g.default_project) known.add(g.default_project);
      try {
        const list = await api<Array<{ slug: string }>>("GET", "/api/v1/projects");
        for (const p of list) known.add(p.slug);
      } catch {
        // The project list is a convenience; the pin choices above still work.
      }
      setProjects([...known].sort());
      history.replaceState(null, "", `/device?user_code=${encodeURIComponent(g.user_code)}`);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "Could not look up that code.");
    }
  }

  useEffect(() => {
    if (props.initialCode) void lookup(props.initialCode);
  }, []);

  async function decide(action: "approve" | "deny") {
    if (!grant) return;
    setBusy(true);
    setError(null);
    try {
      const path = `/api/v1/auth/device/${encodeURIComponent(grant.user_code)}/${action}`;
      if (action === "approve") {
        await api("POST", path, { role_id: roleId, project: project || null, expires_in_days: expiry, ...(name.trim() ? { name: name.trim() } : {}) });
      } else {
        await api("POST", path);
      }
      setDone(action === "approve" ? "approved" : "denied");
    } catch (e) {
      setError(e instanceof ApiError ? e.message : "That did not work.");
    } finally {
      setBusy(false);
    }
  }

  if (done) {
    return (
      <section class="card narrow" aria-labelledby="device-title">
        <h1 id="device-title">{done === "approved" ? "Device approved" : "Request denied"}</h1>
        <Alert kind={done === "approved" ? "ok" : "info"}>
          {done === "approved" ? "Return to your terminal: it signs in within a few seconds." : "The device was refused. Nothing was granted."}
        </Alert>
      </section>
    );
  }

  if (!grant) {
    return (
      <section class="card narrow" aria-labelledby="device-title">
        <h1 id="device-title">Connect a device</h1>
        <p>Enter the code your terminal shows after <code>ops login</code>.</p>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void lookup(code);
          }}
        >
          <label for="user-code">Device code</label>
          <input id="user-code" name="user_code" class="code-input" autocomplete="off" autocapitalize="characters" spellcheck={false} placeholder="XXXX-XXXX" value={code} onInput={(e) => setCode(e.currentTarget.value)} required />
          {error && <Alert>{error}</Alert>}
          <div class="actions">
            <button type="submit" class="primary">
              Continue
            </button>
          </div>
        </form>
      </section>
    );
  }

  const pending = grant.status === "pending";
  const clientLabel = grant.client === "mcp" ? "MCP client" : "ops CLI";
  return (
    <section class="card" aria-labelledby="device-title">
      <h1 id="device-title">Authorize a device</h1>
      <p class="warning">
        Approve only if you started this sign-in yourself and the code below matches the one in your terminal. Whoever holds the device gets a token that acts as you.
      </p>
      <dl class="facts">
        <dt>Code</dt>
        <dd>
          <code class="user-code">{grant.user_code}</code>
        </dd>
        <dt>Client</dt>
        <dd>{clientLabel}</dd>
        <dt>Device name</dt>
        <dd>
          {grant.client_name ? <span class="untrusted-name">“{grant.client_name}”</span> : <span class="muted">(none given)</span>}{" "}
          <span class="tag tag-warn" title="The device chose this name itself; ops cannot verify it.">unverified</span>
        </dd>
        <dt>Requested from</dt>
        <dd>
          <code>{grant.ip || "unknown address"}</code>
        </dd>
        <dt>Requested at</dt>
        <dd>
          {when(grant.created_at)} <span class="muted">({ago(grant.created_at)})</span>
        </dd>
        {grant.requested_project && (
          <>
            <dt>Asks for project</dt>
            <dd>{grant.requested_project}</dd>
          </>
        )}
        <dt>Status</dt>
        <dd>{grant.status}</dd>
      </dl>
      {!pending && <Alert kind="info">{grant.status === "expired" ? "This request has expired. Run ops login again." : `This request was already ${grant.status}.`}</Alert>}
      {pending && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void decide("approve");
          }}
        >
          <fieldset>
            <legend>Role the token carries</legend>
            {grant.roles.length === 0 && <p class="muted">There are no roles you could grant.</p>}
            {grant.roles.map((r) => (
              <label key={r.id} class={`choice${r.mintable ? "" : " disabled"}`}>
                <input type="radio" name="role" value={r.id} checked={roleId === r.id} disabled={!r.mintable} onChange={() => setRoleId(r.id)} />
                <span>
                  {r.name}
                  {r.project ? <span class="tag">{r.project}</span> : null}
                  {!r.mintable && <span class="hint"> — more than you hold here</span>}
                </span>
              </label>
            ))}
          </fieldset>
          <label for="pin">Project</label>
          <select id="pin" value={project} onChange={(e) => setProject(e.currentTarget.value)} aria-describedby="pin-hint">
            <option value="">Any project I can act in (not pinned)</option>
            {projects.map((p) => (
              <option key={p} value={p}>
                Only {p}
              </option>
            ))}
          </select>
          <p id="pin-hint" class="hint">
            A pinned token acts in that project and nowhere else.
          </p>
          <label for="token-name">Token name</label>
          <input id="token-name" maxLength={100} placeholder={grant.client_name ? `ops CLI on ${grant.client_name}` : "ops CLI"} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <label for="expiry">Expires after</label>
          <select id="expiry" value={String(expiry)} onChange={(e) => setExpiry(Number(e.currentTarget.value))}>
            {EXPIRY_CHOICES.map((c) => (
              <option key={c.days} value={String(c.days)}>
                {c.label}
              </option>
            ))}
          </select>
          {error && <Alert>{error}</Alert>}
          <div class="actions">
            <button type="submit" class="primary" disabled={busy || !roleId}>
              Approve
            </button>
            <button type="button" class="danger" disabled={busy} onClick={() => void decide("deny")}>
              Deny
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
