/**
 * A repository's studio (`/projects/<slug>/sources/<id>?ref=…&path=…`): the file tree of a ref,
 * a file view and editor, edits collected across files (modify, new file, delete), "Save as pull
 * request" with a message (the save is polled until its pull request is open), and the saves with
 * their state and a merge button. Only the public API is used.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert, Link, navigate, when, ActionsHeader } from "../ui";
import type { ProjectInfo } from "../frame";
import type { Access } from "../access";
import { Action } from "../widgets/guard";
import { CopyField } from "../widgets/copy-field";
import type { SourceInfo } from "../widgets/sources";

interface TreeEntry {
  path: string;
  sha: string;
  size?: number | null;
  type: "blob" | "tree";
}
interface StudioTree {
  default_branch: string;
  entries: TreeEntry[];
  ref: string;
  refs: Array<{ name: string; pull_number?: number | null; save_id?: number | null }>;
  sha: string;
  truncated: boolean;
}
interface StudioFile {
  base64?: string | null;
  binary: boolean;
  exists: boolean;
  html_url: string;
  path: string;
  ref: string;
  sha: string;
  text: string;
}
interface Save {
  id: number;
  message: string;
  status: string;
  branch?: string | null;
  pull_number?: number | null;
  pull_url?: string | null;
  error?: string | null;
  created_at: string;
  requested_by: string;
  files: Array<{ path: string; action: string }>;
  merge_sha?: string | null;
  scan_id?: number | null;
}
/** A pending edit: new text (null = delete) over the blob it was opened at. */
interface Edit {
  text: string | null;
  base_sha: string | null;
}

const SHOWN_ENTRIES = 2000;
const SAVE_STATE: Record<string, string> = { open: "operational", merged: "operational", queued: "degraded", running: "degraded", closed: "degraded", failed: "down" };

function setQuery(changes: Record<string, string | null>): void {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) q.delete(k);
    else q.set(k, v);
  }
  navigate(`${location.pathname}${q.size ? `?${q}` : ""}`);
}

export function Studio(props: { project: ProjectInfo; sourceId: string; query: URLSearchParams; access: Access }) {
  const base = `/api/v1/projects/${props.project.slug}/sources`;
  const ref = props.query.get("ref");
  const path = props.query.get("path");
  const [source, setSource] = useState<SourceInfo | null>(null);
  const [tree, setTree] = useState<StudioTree | null>(null);
  const [file, setFile] = useState<StudioFile | null>(null);
  const [saves, setSaves] = useState<Save[]>([]);
  const [edits, setEdits] = useState<Record<string, Edit>>({});
  const [filter, setFilter] = useState("");
  const [newPath, setNewPath] = useState("");
  const [message, setMessage] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Bumped after a save or merge: the open file is read again.
  const [generation, setGeneration] = useState(0);

  const fail = (e: unknown, fallback: string) => setError(e instanceof ApiError ? e.message : fallback);
  const loadTree = () =>
    api<StudioTree>("GET", `${base}/${props.sourceId}/tree${ref ? `?ref=${encodeURIComponent(ref)}` : ""}`)
      .then(setTree)
      .catch((e) => fail(e, "Could not load the tree."));
  const loadSaves = () =>
    api<Save[]>("GET", `${base}/${props.sourceId}/saves`)
      .then(setSaves)
      .catch((e) => fail(e, "Could not load the saves."));

  useEffect(() => {
    api<SourceInfo[]>("GET", base)
      .then((list) => setSource(list.find((s) => s.id === props.sourceId) ?? null))
      .catch((e) => fail(e, "Could not load the source."));
    void loadSaves();
  }, [props.sourceId]);
  useEffect(() => {
    setTree(null);
    setEdits({});
    void loadTree();
  }, [props.sourceId, ref]);
  useEffect(() => {
    setFile(null);
    if (!path) return;
    api<StudioFile>("GET", `${base}/${props.sourceId}/file?path=${encodeURIComponent(path)}${ref ? `&ref=${encodeURIComponent(ref)}` : ""}`)
      .then(setFile)
      .catch((e) => fail(e, "Could not open the file."));
  }, [props.sourceId, ref, path, generation]);

  const currentRef = tree?.ref ?? ref ?? source?.default_branch ?? "";
  const edited = Object.keys(edits);
  const editOf = (p: string) => edits[p];
  const setEdit = (p: string, e: Edit | null) =>
    setEdits((cur) => {
      const next = { ...cur };
      if (e === null) delete next[p];
      else next[p] = e;
      return next;
    });

  function addFile(ev: Event) {
    ev.preventDefault();
    const p = newPath.trim().replace(/^\/+/, "");
    if (!p) return;
    setEdit(p, { text: "", base_sha: null });
    setNewPath("");
    setQuery({ path: p });
  }

  async function save(ev: Event) {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      const changes = edited.map((p) => ({ path: p, text: edits[p]!.text, base_sha: edits[p]!.base_sha }));
      const queued = await api<{ save_id: number }>("POST", `${base}/${props.sourceId}/saves`, { message, ref: tree && currentRef !== tree.default_branch ? currentRef : null, changes });
      let s: Save | null = null;
      for (let i = 0; i < 120; i++) {
        s = await api<Save>("GET", `${base}/saves/${queued.save_id}`);
        if (s.status !== "queued" && s.status !== "running") break;
        await new Promise((r) => setTimeout(r, 500));
      }
      if (s?.status === "open") {
        setNotice(`Save ${s.id} is open as pull request #${s.pull_number} on ${s.branch}.`);
        setEdits({});
        setMessage("");
      } else if (s?.status === "failed") setError(`Save ${s.id} failed: ${s.error}`);
      else setNotice(`Save ${queued.save_id} is queued; it shows below when it has run.`);
      await loadSaves();
      await loadTree();
      setGeneration((g) => g + 1);
    } catch (e) {
      fail(e, "Could not save.");
    } finally {
      setBusy(false);
    }
  }

  async function merge(s: Save) {
    setBusy(true);
    setError(null);
    setNotice(null);
    try {
      const merged = await api<Save>("POST", `${base}/saves/${s.id}/merge`);
      setNotice(`Merged save ${s.id} as ${merged.merge_sha?.slice(0, 12)}; scan ${merged.scan_id} is queued.`);
      await loadSaves();
      await loadTree();
      setGeneration((g) => g + 1);
    } catch (e) {
      fail(e, "Could not merge.");
    } finally {
      setBusy(false);
    }
  }

  const shown = (tree?.entries ?? []).filter((e) => !filter || e.path.toLowerCase().includes(filter.toLowerCase()));
  const pendingNew = edited.filter((p) => !tree?.entries.some((e) => e.path === p));
  const e = path ? editOf(path) : undefined;

  return (
    <section aria-labelledby="studio-title" class="studio">
      <h2 id="studio-title">
        <Link href={`/projects/${props.project.slug}/sources`}>Sources</Link> <span class="muted">/</span> {source?.repo ?? "…"}
      </h2>
      {source && <CopyField label="Clone URL" value={source.clone_url} />}
      {error && <Alert>{error}</Alert>}
      {notice && <Alert kind="ok">{notice}</Alert>}
      {tree && (
        <div class="studio-bar">
          <label for="studio-ref">Branch</label>
          <select id="studio-ref" value={currentRef} onChange={(ev) => setQuery({ ref: (ev.target as HTMLSelectElement).value, path: null })}>
            {tree.refs.map((r) => (
              <option key={r.name} value={r.name}>
                {r.name}
                {r.pull_number ? ` (pull request #${r.pull_number})` : ""}
              </option>
            ))}
            {!tree.refs.some((r) => r.name === currentRef) && <option value={currentRef}>{currentRef}</option>}
          </select>
          <span class="muted">{tree.sha ? <code>{tree.sha.slice(0, 12)}</code> : "no commits yet"}</span>
        </div>
      )}
      <div class="studio-grid">
        <nav class="tree" aria-label="Files">
          <input type="search" placeholder="Filter files" aria-label="Filter files" value={filter} onInput={(ev) => setFilter((ev.target as HTMLInputElement).value)} />
          {!tree && <p aria-busy="true">Loading files…</p>}
          {tree && tree.entries.length === 0 && <p class="muted">No files on {currentRef} yet: push a first commit, or add a file below.</p>}
          {tree?.truncated && <p class="hint">The tree is cut at 100 000 entries; files past that cannot be edited here.</p>}
          <ul>
            {shown.slice(0, SHOWN_ENTRIES).map((entry) => {
              const depth = Math.min(entry.path.split("/").length - 1, 8);
              const name = entry.path.split("/").pop();
              const mark = edits[entry.path] ? (edits[entry.path]!.text === null ? " (deleted)" : " (edited)") : "";
              return (
                <li key={entry.path} class={`d${depth}${entry.path === path ? " current" : ""}`}>
                  {entry.type === "tree" ? (
                    <span class="dir">{name}/</span>
                  ) : (
                    <a href={`?${new URLSearchParams({ ...(ref ? { ref } : {}), path: entry.path })}`} onClick={(ev) => {
                      ev.preventDefault();
                      setQuery({ path: entry.path });
                    }}>
                      {name}
                      {mark}
                    </a>
                  )}
                </li>
              );
            })}
            {pendingNew.map((p) => (
              <li key={`new-${p}`} class={p === path ? "current" : undefined}>
                <a href="#" onClick={(ev) => {
                  ev.preventDefault();
                  setQuery({ path: p });
                }}>
                  {p} (new)
                </a>
              </li>
            ))}
          </ul>
          {shown.length > SHOWN_ENTRIES && <p class="hint">{shown.length - SHOWN_ENTRIES} more: filter to find them.</p>}
          <form onSubmit={addFile}>
            <label for="new-file">New file</label>
            <input id="new-file" placeholder="path/to/file.txt" value={newPath} onInput={(ev) => setNewPath((ev.target as HTMLInputElement).value)} />
            <button type="submit" class="small">
              Add file
            </button>
          </form>
        </nav>
        <div class="editor">
          {!path && <p class="muted">Choose a file to view or edit it.</p>}
          {path && e && e.base_sha === null && e.text !== null && !file?.exists && <FileEditor path={path} text={e.text} onChange={(text) => setEdit(path, { text, base_sha: null })} onRemove={() => setEdit(path, null)} />}
          {path && file && file.exists && (
            <>
              <div class="file-head">
                <strong>{file.path}</strong> <a href={file.html_url}>permalink</a>
              </div>
              {file.binary ? (
                <p class="muted">A binary file ({Math.floor(((file.base64 ?? "").length * 3) / 4)} bytes); it cannot be edited here.</p>
              ) : e?.text === null ? (
                <p class="warning">This file is deleted in your edits. <button type="button" class="small" onClick={() => setEdit(file.path, null)}>Keep it</button></p>
              ) : (
                <FileEditor
                  path={file.path}
                  text={e?.text ?? file.text}
                  onChange={(text) => setEdit(file.path, text === file.text ? null : { text, base_sha: file.sha })}
                  onRemove={() => setEdit(file.path, { text: null, base_sha: file.sha })}
                  removeLabel="Delete file"
                />
              )}
            </>
          )}
          {path && file && !file.exists && !e && <p class="muted">There is no {path} on {currentRef}.</p>}
          <form class="card save-form" onSubmit={(ev) => void save(ev)}>
            <h3>Save as pull request</h3>
            <p class="hint">{edited.length === 0 ? "No edits yet." : `${edited.length} file${edited.length === 1 ? "" : "s"} changed: ${edited.join(", ")}`}</p>
            <label for="save-message">Message</label>
            <input id="save-message" value={message} onInput={(ev) => setMessage((ev.target as HTMLInputElement).value)} required placeholder="Describe the change" />
            <div class="actions">
              <Action access={props.access} perm="sources.save" env={null} type="submit" class="primary" off={busy || edited.length === 0 || message.trim() === ""} onClick={() => undefined}>
                {busy ? "Saving…" : "Save as pull request"}
              </Action>
            </div>
          </form>
        </div>
      </div>
      <h3>Saves</h3>
      {saves.length === 0 ? (
        <p class="muted">No saves yet.</p>
      ) : (
        <table class="saves">
          <thead>
            <tr>
              <th scope="col">Save</th>
              <th scope="col">Message</th>
              <th scope="col">State</th>
              <th scope="col">Pull request</th>
              <th scope="col">By</th>
              <ActionsHeader />
            </tr>
          </thead>
          <tbody>
            {saves.map((s) => (
              <tr key={s.id}>
                <td>#{s.id}</td>
                <td>
                  {s.message.split("\n")[0]}
                  {s.error && <div class="muted">{s.error}</div>}
                </td>
                <td>
                  <span class={`badge badge-${SAVE_STATE[s.status] ?? "degraded"}`}>{s.status}</span>
                </td>
                <td>{s.pull_number ? <span>#{s.pull_number} <code>{s.branch}</code></span> : <span class="muted">—</span>}</td>
                <td>
                  {s.requested_by}
                  <div class="muted">{when(s.created_at)}</div>
                </td>
                <td>
                  {s.status === "open" && (
                    <Action access={props.access} perm="sources.save" env={null} class="small" off={busy} onClick={() => void merge(s)}>
                      Merge
                    </Action>
                  )}
                  {s.branch && s.status === "open" && (
                    <button type="button" class="small" onClick={() => setQuery({ ref: s.branch as string, path: null })}>
                      Open
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

function FileEditor(props: { path: string; text: string; onChange(text: string): void; onRemove(): void; removeLabel?: string }) {
  return (
    <>
      {!props.removeLabel && (
        <div class="file-head">
          <strong>{props.path}</strong> <span class="tag">new file</span>
        </div>
      )}
      <label for="file-text" class="visually-hidden">
        Contents of {props.path}
      </label>
      <textarea id="file-text" spellcheck={false} value={props.text} onInput={(ev) => props.onChange((ev.target as HTMLTextAreaElement).value)} />
      <div class="actions">
        <button type="button" class="small danger" onClick={props.onRemove}>
          {props.removeLabel ?? "Discard new file"}
        </button>
      </div>
    </>
  );
}
