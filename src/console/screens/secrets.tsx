/**
 * A project's Secrets page (`/projects/<slug>/secrets?environment=…&group=…`): the secret groups
 * of one environment and, for the chosen group, its variables by name and kind with whether a
 * value is stored, whether it waits for a render, and its version — never a secret's value (the
 * API never returns one; a text variable's value shows to people allowed to reveal it, which the
 * API audits). Set a variable through a write-only field that is emptied once sent, delete one,
 * import a dotenv file (its values go straight to the API, never into the page), see the rendered
 * versions, and rotate, after a confirmation that names the services it restarts.
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert, Link, when, ActionsHeader } from "../ui";
import type { Access } from "../access";
import type { SectionProps } from "../frame";
import { EnvironmentPicker } from "../widgets/environment-picker";
import { Action, Denied } from "../widgets/guard";
import { Confirm } from "../widgets/confirm";
import { Empty, Outcome, Pending, Scroll, errorText, useActions, useLoad } from "../widgets/load";
import { parseDotenv } from "../widgets/dotenv";
import { resourceApi, type Resource } from "../widgets/resources";
import { SecretTabs, ValueField, type SecretVariable } from "../widgets/secrets";

interface Rendered {
  version: number;
  secret: string;
  rendered_at: string;
  actor: string;
  current: boolean;
}

interface Rotated {
  state: string;
  version?: number | null;
  secret?: string | null;
  rolled: string[];
  skipped: Array<{ service: string; reason: string }>;
  reason?: string | null;
}

export function SecretsPage(props: SectionProps) {
  const slug = props.project.slug;
  const envs = props.project.environments;
  const env = props.query.get("environment") ?? envs[0] ?? "production";
  const canList = props.access.can("resources.read", env);
  const loaded = useLoad(
    () => (canList ? Promise.all([api<Resource[]>("GET", resourceApi(slug, "secret-group", null, env)), api<Resource[]>("GET", resourceApi(slug, "service", null, env))]) : Promise.resolve([[], []] as [Resource[], Resource[]])),
    [slug, env, canList],
  );
  const head = (
    <>
      <SecretTabs slug={slug} current="groups" env={env} />
      <EnvironmentPicker environments={envs} current={env} />
    </>
  );
  if (!canList) {
    return (
      <section aria-labelledby="secrets-title">
        {head}
        <Denied access={props.access} perm="resources.read" env={env} what="Listing the secret groups" />
      </section>
    );
  }
  if (!loaded.data) {
    return (
      <section aria-labelledby="secrets-title">
        {head}
        <Pending what="secret groups" error={loaded.error} tall />
      </section>
    );
  }
  const [groups, services] = loaded.data;
  const chosen = groups.find((g) => g.name === props.query.get("group")) ?? groups[0];
  return (
    <section aria-labelledby="secrets-title">
      {head}
      {groups.length === 0 ? (
        <Empty>
          No secret groups in {env}. Create one on the <Link href={`/projects/${slug}/resources?environment=${encodeURIComponent(env)}&type=secret-group`}>Resources page</Link>.
        </Empty>
      ) : (
        <>
          <nav class="env-picker" aria-label="Secret group">
            {groups.map((g) => (
              <Link key={g.name} href={`/projects/${slug}/secrets?environment=${encodeURIComponent(env)}&group=${encodeURIComponent(g.name)}`} current={g.name === chosen?.name}>
                {g.name}
              </Link>
            ))}
          </nav>
          {chosen && <Group key={`${env}/${chosen.name}`} slug={slug} env={env} access={props.access} group={chosen} mounts={services.filter((s) => s.spec.env_group === chosen.name).map((s) => s.name)} />}
        </>
      )}
    </section>
  );
}

function Group(props: { slug: string; env: string; access: Access; group: Resource; mounts: string[] }) {
  const name = props.group.name;
  const base = (rest: string) => resourceApi(props.slug, "secret-group", name, props.env, rest);
  const loaded = useLoad(() => Promise.all([api<SecretVariable[]>("GET", base("/variables")), api<Rendered[]>("GET", base("/versions"))]), [props.slug, props.env, name]);
  const [removing, setRemoving] = useState<string | null>(null);
  const [rotating, setRotating] = useState(false);
  const actions = useActions(loaded.reload, {
    settle: () => {
      setRemoving(null);
      setRotating(false);
    },
  });
  const { busy, run: act } = actions;
  const remove = (key: string) => act(async () => (await api("DELETE", base(`/variables/${encodeURIComponent(key)}`)), `${key} was deleted.`));
  const rotate = () =>
    act(async () => {
      const r = await api<Rotated>("POST", base("/rotate"));
      const rolled = r.rolled.length > 0 ? ` Restarted: ${r.rolled.join(", ")}.` : "";
      const skipped = r.skipped.length > 0 ? ` Left alone: ${r.skipped.map((s) => `${s.service} (${s.reason})`).join(", ")}.` : "";
      return `Rendered ${r.secret ?? `version ${r.version}`}.${rolled}${skipped}`;
    });

  if (!loaded.data) return <Pending what={`the variables of ${name}`} error={loaded.error} />;
  const [variables, versions] = loaded.data;
  const write = props.access.can("secrets.write", props.env);
  return (
    <>
      <section class="card" aria-labelledby="vars-title">
        <h3 id="vars-title">Variables of {name}</h3>
        <Outcome of={actions} />
        {removing && (
          <Confirm title={`Delete ${removing}?`} yes="Yes, delete" danger busy={busy} onConfirm={() => void remove(removing)} onCancel={() => setRemoving(null)}>
            <p>Its value and its declaration leave the group. Services keep the rendered version they mount until the next rotation.</p>
          </Confirm>
        )}
        {variables.length === 0 ? (
          <Empty>No variables yet.</Empty>
        ) : (
          <Scroll>
            <table class="variables">
              <caption class="visually-hidden">Variables of {name}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Value</th>
                  <th scope="col">Version</th>
                  <th scope="col">Updated</th>
                  <ActionsHeader />
                </tr>
              </thead>
              <tbody>
                {variables.map((v) => (
                  <tr key={v.name}>
                    <td>
                      <code>{v.name}</code>
                    </td>
                    <td>{v.kind}</td>
                    <td>
                      {v.kind === "text" && typeof v.value === "string" ? <code class="text-value">{v.value}</code> : <span class="muted">{v.has_value ? "set" : "not set"}</span>}
                      {v.pending && <span class="tag tag-warn">not yet rendered</span>}
                    </td>
                    <td>{v.version}</td>
                    <td>{when(v.updated_at)}</td>
                    <td>
                      <Action access={props.access} perm="secrets.write" env={props.env} class="small" label={`Delete ${v.name}`} onClick={() => setRemoving(v.name)}>
                        Delete
                      </Action>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
        )}
        {write ? (
          <>
            <SetVariable url={(key) => base(`/variables/${encodeURIComponent(key)}`)} onDone={(msg) => void act(async () => msg)} />
            <ImportDotenv url={(key) => base(`/variables/${encodeURIComponent(key)}`)} onDone={(msg) => void act(async () => msg)} />
          </>
        ) : (
          <Denied access={props.access} perm="secrets.write" env={props.env} what="Setting variables" />
        )}
      </section>

      <section class="card" aria-labelledby="versions-title">
        <div class="card-head">
          <h3 id="versions-title">Rendered versions</h3>
          <Action access={props.access} perm="secrets.rotate" env={props.env} off={busy || rotating} onClick={() => setRotating(true)}>
            Rotate…
          </Action>
        </div>
        {rotating && (
          <Confirm title={`Rotate ${name}?`} yes="Yes, rotate" busy={busy} onConfirm={() => void rotate()} onCancel={() => setRotating(false)}>
            <p>
              The group's current values are rendered as a new version
              {props.mounts.length > 0 ? `, and the services that mount it restart onto it: ${props.mounts.join(", ")}.` : ". No service in this environment mounts it, so nothing restarts."}
            </p>
          </Confirm>
        )}
        {versions.length === 0 ? (
          <Empty>Never rendered: rotate to give services a first version.</Empty>
        ) : (
          <Scroll>
            <table class="versions">
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Secret</th>
                  <th scope="col">Rendered</th>
                  <th scope="col">By</th>
                </tr>
              </thead>
              <tbody>
                {versions.map((r) => (
                  <tr key={r.version}>
                    <td>
                      {r.version}
                      {r.current && <span class="tag">mounted now</span>}
                    </td>
                    <td>
                      <code>{r.secret}</code>
                    </td>
                    <td>{when(r.rendered_at)}</td>
                    <td>{r.actor}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
        )}
      </section>
    </>
  );
}

/** Name, kind and a write-only value; the value field is emptied as soon as it is sent. */
function SetVariable(props: { url(key: string): string; onDone(msg: string): void }) {
  const [name, setName] = useState("");
  const [kind, setKind] = useState("secret");
  const [error, setError] = useState<string | null>(null);
  const [reset, setReset] = useState(0);
  async function submit(e: Event) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const field = form.elements.namedItem("value") as HTMLInputElement;
    const value = field.value;
    field.value = "";
    setReset((n) => n + 1);
    setError(null);
    try {
      const v = await api<SecretVariable>("PUT", props.url(name.trim()), { value, kind });
      setName("");
      props.onDone(`${v.name} is set (version ${v.version}).`);
    } catch (err) {
      setError(errorText(err));
    }
  }
  return (
    <form class="grid-form set-form" onSubmit={(e) => void submit(e)} aria-labelledby="set-var-title">
      <h4 id="set-var-title">Set a variable</h4>
      <div>
        <label for="var-name">Name</label>
        <input id="var-name" required pattern="[A-Za-z_][A-Za-z0-9_]*" autocomplete="off" spellcheck={false} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </div>
      <div>
        <label for="var-kind">Kind</label>
        <select id="var-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)} aria-describedby="var-kind-hint">
          <option value="secret">secret</option>
          <option value="text">text</option>
        </select>
      </div>
      <ValueField key={reset} id="var-value" secret={kind === "secret"} />
      <p class="hint" id="var-kind-hint">
        A secret is never read back; a text value shows to people who may reveal values. The kind is fixed when a variable is first set.
      </p>
      {error && <Alert>{error}</Alert>}
      <div class="actions">
        <button type="submit" class="primary">
          Set variable
        </button>
      </div>
    </form>
  );
}

/** A dotenv file or pasted text: its names are listed, its values sent one by one and never shown. */
function ImportDotenv(props: { url(key: string): string; onDone(msg: string): void }) {
  const [names, setNames] = useState<string[] | null>(null);
  const [bad, setBad] = useState<number[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function read(file: File | undefined) {
    setError(null);
    if (!file) return setNames(null);
    const parsed = parseDotenv(await file.text());
    setNames(parsed.entries.map(([k]) => k));
    setBad(parsed.bad);
  }
  async function submit(e: Event) {
    e.preventDefault();
    const input = (e.currentTarget as HTMLFormElement).elements.namedItem("dotenv") as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    setBusy(true);
    setError(null);
    let done = 0;
    try {
      for (const [key, value] of parseDotenv(await file.text()).entries) {
        await api("PUT", props.url(key), { value, kind: "secret" });
        done++;
      }
      input.value = "";
      setNames(null);
      props.onDone(`Imported ${done} variable${done === 1 ? "" : "s"} as secrets.`);
    } catch (err) {
      setError(`${errorText(err)} (${done} imported before this one.)`);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form class="import-form" onSubmit={(e) => void submit(e)} aria-labelledby="import-title">
      <h4 id="import-title">Import a dotenv file</h4>
      <label for="dotenv-file">Dotenv file</label>
      <input id="dotenv-file" name="dotenv" type="file" accept=".env,text/plain" onChange={(e) => void read(e.currentTarget.files?.[0])} />
      {names && <p class="hint">{names.length === 0 ? "No variables in this file." : `${names.length} to import as secrets: ${names.join(", ")}.`}{bad.length > 0 && ` Lines not understood: ${bad.join(", ")}.`}</p>}
      {error && <Alert>{error}</Alert>}
      <div class="actions">
        <button type="submit" disabled={busy || !names || names.length === 0}>
          {busy ? "Importing…" : "Import"}
        </button>
      </div>
    </form>
  );
}

