/**
 * Request and response schemas of the sources domain (Code host App and Sources sections of the
 * spec), under the spec's names. Schemas are the types.
 */
import { t } from "elysia";
import { BodyInt, ErrorBody } from "../../core/http-schemas";

/** `owner/repo` as the spec checks it (422 otherwise). */
export const REPO_PATTERN = "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$";
export const REPO_RE = new RegExp(REPO_PATTERN);

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T, description?: string) => t.Optional(t.Union([s, t.Null()], description ? { description } : {}));

export const HostAppResponse = t.Object({
  html_url: t.String(),
  install_url: t.String({ description: "`<html_url>/installations/new`" }),
  installations: t.Integer({ description: "Owners the App is installed on now (built-in host: projects with a repository)" }),
  slug: t.String(),
});
export type HostAppResponse = typeof HostAppResponse.static;

export const Repo = t.Object({
  default_branch: t.String(),
  full_name: t.String({ description: "`owner/repo`" }),
  private: t.Boolean(),
});
export type Repo = typeof Repo.static;

export const DeclaredNames = t.Object({
  domains: t.Record(t.String(), t.Array(t.String()), { description: "Environment → host names" }),
  hooks: t.Record(t.String(), t.Array(t.String()), { description: "Event → the steps it fires" }),
  operational: t.Record(t.String(), t.Record(t.String(), t.Array(t.String())), {
    description: "Environment → service → the keys (`replicas`, `limits`, `env_group`, `address`) the file sets; the empty key means every environment without its own block",
  }),
  services: t.Array(t.String()),
  steps: t.Array(t.String()),
});
export type DeclaredNames = typeof DeclaredNames.static;

export const SourceResponse = t.Object({
  clone_url: t.String({ description: "What `git clone` takes (an ops addition to the spec's fields)" }),
  connected_at: t.String(),
  declared: t.Optional(t.Union([DeclaredNames, t.Null()], { description: "What the repository's ops.toml declares (as of the last scan of the default branch); null when nothing" })),
  default_branch: t.String(),
  id: t.String({ format: "uuid" }),
  installation_id: t.Integer({ description: "The host's installation on the owner (0 until installed)" }),
  last_event_at: Nullable(t.String(), "The last push the host reported for the repository; null = never"),
  repo: t.String({ description: "`owner/repo`" }),
  services: t.Array(t.String(), { description: "Services of the project that build from this repository" }),
});
export type SourceResponse = typeof SourceResponse.static;

export const CreateSourceRequest = t.Object({
  repo: t.String({ description: "`owner/repo` (built-in host: `<project>/<name>`, created when missing)" }),
  installation_id: t.Optional(BodyInt({ nullable: true, description: "Resolved from the host's installations by the repo's owner when absent" })),
});

export const SaveFileResponse = t.Object({
  path: t.String(),
  action: t.Union([t.Literal("add"), t.Literal("modify"), t.Literal("delete")]),
});
export type SaveFileResponse = typeof SaveFileResponse.static;

export const SaveResponse = t.Object({
  branch: Nullable(t.String(), "Branch the save's commit is on"),
  commit_sha: Nullable(t.String()),
  created_at: t.String(),
  error: Nullable(t.String()),
  files: t.Array(SaveFileResponse),
  finished_at: Nullable(t.String()),
  id: t.Integer(),
  log: t.String({ description: "What the save printed as it ran" }),
  merge_sha: Nullable(t.String()),
  merged_at: Nullable(t.String()),
  merged_by: Nullable(t.String()),
  message: t.String(),
  pull_number: Nullable(t.Integer()),
  pull_url: Nullable(t.String()),
  ref: Nullable(t.String(), "Branch the edit was made on; null = the default branch"),
  repo: t.String(),
  requested_by: t.String(),
  scan_id: Nullable(t.Integer(), "Scan queued by the merge"),
  source_id: Nullable(t.String({ format: "uuid" })),
  status: t.String({ description: "`queued`, `running`, `open`, `merged`, `closed` or `failed`" }),
});
export type SaveResponse = typeof SaveResponse.static;

export const SaveChange = t.Object({
  path: t.String({ description: "Repository-relative: no leading `/`, no `..`, never under `.git/`" }),
  text: Nullable(t.String()),
  base64: Nullable(t.String(), "Standard alphabet, padded; never together with text"),
  base_sha: Nullable(t.String(), "Blob sha the file had when opened; null for a new file"),
  moved_from: Nullable(t.String(), "For the add side of a move: the source path (removed in the same commit), whose git mode is kept"),
});
export type SaveChange = typeof SaveChange.static;

export const CreateSaveRequest = t.Object({
  message: t.String({ description: "Commit message and pull request title (required)" }),
  changes: t.Array(SaveChange, { description: "1 to 200 changes; 8 MiB of content in all; 5 MiB per binary file" }),
  ref: Nullable(t.String(), "Branch the editor opened the files at (default the default branch); its head becomes the commit's parent"),
});
export type CreateSaveRequest = typeof CreateSaveRequest.static;

export const SaveQueuedResponse = t.Object({ save_id: t.Integer(), status: t.Literal("queued") });

export const ScanSourceRequest = t.Object({
  repo: t.String({ description: "`owner/repo`: a connected source of the project, or a repository the project's installation reaches" }),
  ref: Nullable(t.String(), "Default the repository's default branch"),
});

export const DeclaredVolume = t.Object({ database: t.String(), path: t.Optional(t.String()) });

export const DetectedService = t.Object({
  args: t.Optional(t.Record(t.String(), t.String(), { description: "Build arguments with their defaults" })),
  context: t.String({ description: "Relative to the repository root" }),
  dockerfile: t.String(),
  healthcheck: Nullable(t.String(), "Path a container healthcheck probes, when it names a URL"),
  kind: t.Union([t.Literal("service"), t.Literal("release")], { description: "`service` (long running) or `release` (a migrate or release stage)" }),
  name: t.String(),
  port: Nullable(t.Integer(), "The last exposed port"),
  target: Nullable(t.String(), "Named build stage; null = the final one"),
  volumes: t.Optional(t.Array(DeclaredVolume)),
});
export type DetectedService = typeof DetectedService.static;

export const ScanQueuedResponse = t.Object({ scan_id: t.Integer(), status: t.Literal("queued") });

export const ReconciledRow = t.Object({
  kind: t.Union([t.Literal("service"), t.Literal("domain"), t.Literal("step"), t.Literal("docs-reader")]),
  name: t.String(),
  environment: Nullable(t.String(), "null for a step"),
  reason: Nullable(t.String()),
});
export type ReconciledRow = typeof ReconciledRow.static;

export const Reconciled = t.Object({
  created: t.Array(ReconciledRow),
  refused: t.Array(ReconciledRow, { description: "Writes refused, each with a reason" }),
  undeclared: t.Array(ReconciledRow, { description: "Rows the file no longer declares: left in place, never destroyed" }),
  updated: t.Array(ReconciledRow),
});
export type Reconciled = typeof Reconciled.static;

export const DeclaredStepResponse = t.Object({ name: t.String(), spec: t.Any() });

export const ScanResponse = t.Object({
  error: Nullable(t.String()),
  git_ref: t.String(),
  hooks: t.Any({ description: "Event → the steps it fires" }),
  id: t.Integer(),
  log: t.String(),
  reconciled: t.Optional(t.Union([Reconciled, t.Null()])),
  repo: t.String(),
  services: t.Array(DetectedService),
  status: t.String({ description: "`queued`, `running`, `succeeded` or `failed`" }),
  steps: t.Array(DeclaredStepResponse),
});
export type ScanResponse = typeof ScanResponse.static;

export const StudioTreeEntry = t.Object({
  path: t.String(),
  sha: t.String({ description: "Blob or tree sha" }),
  size: Nullable(t.Integer(), "Bytes; null for a directory"),
  type: t.Union([t.Literal("blob"), t.Literal("tree")]),
});

export const StudioRef = t.Object({
  name: t.String(),
  pull_number: Nullable(t.Integer()),
  save_id: Nullable(t.Integer(), "The open save whose branch this is; null for the default branch"),
});

export const StudioTree = t.Object({
  default_branch: t.String(),
  entries: t.Array(StudioTreeEntry, { description: "Every file and directory in the code host's order; submodules omitted" }),
  ref: t.String(),
  refs: t.Array(StudioRef, { description: "Default branch first, then each open save's branch, newest first" }),
  sha: t.String({ description: "Commit the ref names (empty for a repository without commits)" }),
  truncated: t.Boolean({ description: "Cut short past 100 000 entries: entries is a prefix and a save of an unlisted path is refused" }),
});
export type StudioTree = typeof StudioTree.static;

export const StudioFileResponse = t.Object({
  base64: Nullable(t.String(), "Binary content; null for text and for a missing file"),
  binary: t.Boolean({ description: "A NUL byte or invalid UTF-8 anywhere in the file (the first 8 KiB included); text is then empty" }),
  exists: t.Boolean({ description: "false = no file at the path on the ref" }),
  html_url: t.String({ description: "The file on the code host" }),
  path: t.String(),
  ref: t.String(),
  sha: t.String({ description: "Blob sha, sent back as base_sha; empty when missing" }),
  text: t.String({ description: "Empty when missing or binary" }),
});
export type StudioFileResponse = typeof StudioFileResponse.static;

export const sourcesModels = {
  HostAppResponse,
  Repo,
  DeclaredNames,
  SourceResponse,
  CreateSourceRequest,
  SaveFileResponse,
  SaveResponse,
  SaveChange,
  CreateSaveRequest,
  SaveQueuedResponse,
  ScanSourceRequest,
  DetectedService,
  ScanQueuedResponse,
  ScanResponse,
  StudioTree,
  StudioFileResponse,
  ErrorBody,
};
