/**
 * The GitHub App code host (`OPS_CODE_HOST=github`, DESIGN §5): the same `CodeHost` as the built-in
 * host, answered by GitHub's REST API as the App (auth.ts: App JWT → installation tokens;
 * client.ts: calls, rate limits, retries), with pushes arriving through the App's webhook
 * (webhook.ts, served at `POST /api/v1/host/webhook` by the sources domain).
 *
 * Where GitHub differs from the built-in host, the difference is GitHub's, said here once:
 * - `ensureRepo` never creates a repository (the App is given repositories by their owners);
 * - `installationFor` ignores the project: an installation on an owner serves every project of
 *   this ops (one App per estate), and is found by the owner's login among the App's installations;
 * - merges always write a merge commit (GitHub's merge API has no fast-forward), follow the
 *   repository's merge settings and branch protection, and report conflicts without their paths;
 * - the merge commit's committer is GitHub's.
 * An App without its id, private key file or webhook secret is not configured: every method
 * answers 503 and `configured()` is false.
 */
import type { Core } from "../../../core/core";
import { OpsError } from "../../../core/errors";
import { PushSubscribers } from "../push";
import type { CodeHost, HostRepo, RepoRef } from "../types";
import { unconfiguredHost } from "../unconfigured";
import { AppCredentials } from "./auth";
import { GithubClient, repoPath } from "./client";
import { Reader, encodeSegments, SHA_RE, type Installed } from "./reads";
import { commitChanges } from "./writes";
import { Pulls } from "./pulls";
import { Reports } from "./reports";
import { extractTarball } from "./tarball";
import { attachWebhookReceiver, createWebhookReceiver } from "./webhook";

export { webhookReceiverOf, type WebhookAck, type WebhookDelivery } from "./webhook";

/** The route that receives the App's webhook deliveries (raw body, verified by signature). */
export const WEBHOOK_PATH = "/api/v1/host/webhook";
/** GitHub caps a delivery's payload at 25 MB. */
export const WEBHOOK_MAX_BYTES = 25 * 1024 * 1024;
/** How long the list of the App's installations is trusted before it is asked again. */
const INSTALLATIONS_TTL_MS = 60_000;
/** Time allowed for downloading a commit's archive. */
const ARCHIVE_TIMEOUT_MS = 10 * 60_000;

interface GithubInstallation {
  id: number;
  account: { login: string } | null;
}

interface GithubRepo {
  full_name: string;
  default_branch: string;
  private: boolean;
}

/** The webhook route reads its body itself: the signature is over the exact bytes. */
const bodyLimits = () => [{ prefix: WEBHOOK_PATH, bytes: WEBHOOK_MAX_BYTES, raw: true }];

/** The GitHub App host of a Core (unconfigured when its settings are missing). */
export function createGithubHost(core: Core): CodeHost {
  const app = core.config.hostApp;
  const pushes = new PushSubscribers(core.log);
  const missing = [!app.id && "OPS_GITHUB_APP_ID", !app.privateKeyFile && "OPS_GITHUB_APP_PRIVATE_KEY_FILE", !app.webhookSecret && "OPS_GITHUB_WEBHOOK_SECRET"].filter(Boolean);
  if (!app.id || !app.privateKeyFile || !app.webhookSecret) {
    // Links need no App: sources connected before keep their clone URL while the App is away.
    const host = { ...unconfiguredHost("github", `The GitHub App is not configured on this server (set ${missing.join(", ")}).`, core.log), bodyLimits, cloneUrl: (repo: string) => `${app.webUrl}/${repo}.git` };
    return attachWebhookReceiver(host, createWebhookReceiver(core, { secret: null, pushes, installationsChanged: () => {} }));
  }

  const creds = new AppCredentials(app.id, app.privateKeyFile, core.clock);
  const client = new GithubClient(app.apiUrl, creds, core.clock, core.log, `ops/${core.version}`);
  const reader = new Reader(client);
  const pulls = new Pulls(client, reader, core.log);
  const reports = new Reports(client);
  const web = app.webUrl;

  let installations: { at: number; list: GithubInstallation[] } | null = null;
  const listInstallations = async (fresh = false): Promise<GithubInstallation[]> => {
    if (!fresh && installations && core.clock.now() - installations.at < INSTALLATIONS_TTL_MS) return installations.list;
    const list = await client.paginate<GithubInstallation>({ path: "/app/installations", auth: "app" }, (d) => (Array.isArray(d) ? (d as GithubInstallation[]) : []));
    installations = { at: core.clock.now(), list };
    return list;
  };
  const installationOn = async (owner: string): Promise<number | null> => {
    const find = (list: GithubInstallation[]) => list.find((i) => i.account?.login.toLowerCase() === owner.toLowerCase())?.id ?? null;
    // A miss asks GitHub again: the App may have been installed a moment ago.
    return find(await listInstallations()) ?? find(await listInstallations(true));
  };
  /** The installation a call on `ref` goes through; 409 when the App is not installed on the owner. */
  const installed = async (ref: RepoRef): Promise<Installed> => {
    if (ref.installationId > 0) return ref;
    const owner = ref.repo.split("/")[0]!;
    const id = await installationOn(owner);
    if (id === null) throw new OpsError("conflict", `The GitHub App is not installed on ${owner}.`);
    return { repo: ref.repo, installationId: id };
  };
  const toRepo = (r: GithubRepo, installationId: number): HostRepo => ({ fullName: r.full_name, defaultBranch: r.default_branch, private: r.private, installationId });

  const getRepo = async (ref: RepoRef): Promise<HostRepo | null> => {
    if (!/^[^/\s]+\/[^/\s]+$/.test(ref.repo)) return null;
    const id = ref.installationId > 0 ? ref.installationId : await installationOn(ref.repo.split("/")[0]!);
    if (id === null) return null;
    const r = await client.call<GithubRepo>({ path: repoPath(ref.repo), auth: { installation: id }, expect: [404] });
    return r.status === 200 ? toRepo(r.data, id) : null;
  };

  const host: CodeHost = {
    kind: "github",
    configured: () => true,
    async describe() {
      const me = await client.call<{ slug: string; html_url: string }>({ path: "/app", auth: "app" });
      const htmlUrl = me.data.html_url.replace(/\/+$/, "");
      return { slug: app.slug ?? me.data.slug, htmlUrl, installUrl: `${htmlUrl}/installations/new`, installations: (await listInstallations()).length };
    },
    async listRepos() {
      const out: HostRepo[] = [];
      for (const inst of await listInstallations()) {
        try {
          const repos = await client.paginate<GithubRepo>({ path: "/installation/repositories", auth: { installation: inst.id } }, (d) => (d as { repositories?: GithubRepo[] }).repositories ?? []);
          out.push(...repos.map((r) => toRepo(r, inst.id)));
        } catch (e) {
          // A suspended or vanishing installation refuses its token: the others still list.
          if (!(e instanceof OpsError) || e.status !== 409) throw e;
          core.log.warn("github installation refused", { installation: inst.id, account: inst.account?.login, reason: e.message });
        }
      }
      return out;
    },
    installationFor: async (owner) => installationOn(owner),
    getRepo,
    // GitHub repositories are created by their owners, never by the App.
    ensureRepo: getRepo,

    resolveRef: async (ref, name) => reader.resolveRef(await installed(ref), name),
    readTree: async (ref, sha, opts) => reader.readTree(await installed(ref), sha, opts.limit),
    readFile: async (ref, sha, p, opts) => reader.readFile(await installed(ref), sha, p, opts.maxBytes),
    commitInfo: async (ref, sha) => reader.commitInfo(await installed(ref), sha),
    async fetchCommit(ref, sha, dir) {
      const r0 = await installed(ref);
      if (!SHA_RE.test(sha)) throw new OpsError("not_found", `No commit ${sha} in ${ref.repo}.`);
      const r = await client.call({ path: `${repoPath(ref.repo)}/tarball/${sha}`, auth: { installation: r0.installationId }, expect: [302, 404, 422] });
      const location = r.headers.get("location");
      if (r.status !== 302 || !location) throw new OpsError("not_found", `No commit ${sha} in ${ref.repo}.`);
      const res = await client.download(location, ARCHIVE_TIMEOUT_MS);
      if (!res.body) throw new OpsError("bad_gateway", `GitHub's archive of ${ref.repo}@${sha} is empty.`);
      await extractTarball(res.body, dir, `${ref.repo}@${sha}`, core.log);
    },

    commitChanges: async (ref, req) => commitChanges(client, reader, await installed(ref), req, core.clock.now()),
    openPull: async (ref, req) => pulls.open(await installed(ref), req),
    getPull: async (ref, n) => pulls.get(await installed(ref), n),
    mergePull: async (ref, n, opts) => pulls.merge(await installed(ref), n, opts.message),
    closePull: async (ref, n) => pulls.close(await installed(ref), n),

    createCheckRun: async (ref, input) => reports.createCheckRun(await installed(ref), input),
    updateCheckRun: async (ref, id, input) => reports.updateCheckRun(await installed(ref), id, input),
    setCommitStatus: async (ref, sha, input) => reports.setCommitStatus(await installed(ref), sha, input),
    createDeployment: async (ref, input) => reports.createDeployment(await installed(ref), input),
    createDeploymentStatus: async (ref, id, input) => reports.createDeploymentStatus(await installed(ref), id, input),

    repoUrl: (repo) => `${web}/${repo}`,
    cloneUrl: (repo) => `${web}/${repo}.git`,
    fileUrl: (repo, ref, p) => `${web}/${repo}/blob/${encodeSegments(ref)}/${encodeSegments(p)}`,
    pullUrl: (repo, n) => `${web}/${repo}/pull/${n}`,

    onPush: (handler) => pushes.on(handler),
    bodyLimits,
  };
  return attachWebhookReceiver(
    host,
    createWebhookReceiver(core, {
      secret: app.webhookSecret,
      pushes,
      installationsChanged: () => {
        installations = null;
      },
    }),
  );
}
