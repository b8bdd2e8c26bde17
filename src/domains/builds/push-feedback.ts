/**
 * What a push tells its pusher (`remote:` lines on the built-in host, docs/decisions/0430): one
 * line per build it queued, read from the build rows `onPush` returned —
 * `build #12 for web (production): <console URL>`, `build #13 publishes v1.2.0: <console URL>` —
 * or, when it queued none, one line saying why: the ref was deleted, the tag is not a release tag
 * or its commit has no `modules/`, no service builds from the repository yet (run Scan; or the
 * commit's `ops.toml` declares none), no service follows the branch (and which branches they
 * follow), the project is archived, or the commit could not be read.
 */
import type { Core } from "../../core/core";
import { listOfTypeInProject, specOf, type ServiceSpec } from "../resources/service";
import { declarationAt, OpsTomlError, sourceById, type PushEvent, type SourceRow } from "../sources/service";
import { tagVersion } from "../modules/service";
import { buildUrl } from "./host";
import { environmentBranch } from "./queue";
import { buildById, type BuildRow } from "./rows";

const ZERO_SHA = /^0+$/;
/** Services named in a "follows" line at most. */
const NAMED = 6;

/** The line of one queued build. */
function buildLine(core: Core, row: BuildRow): string {
  const what = row.kind === "publish" ? `publishes ${row.branch ?? "a tag"}` : `for ${row.service} (${row.environment})`;
  return `build #${row.id} ${what}: ${buildUrl(core, row)}`;
}

/** The ref as a user names it: `main`, `tag v1.2.0`, or the full ref. */
function refName(ref: string): string {
  if (ref.startsWith("refs/heads/")) return ref.slice("refs/heads/".length);
  if (ref.startsWith("refs/tags/")) return `tag ${ref.slice("refs/tags/".length)}`;
  return ref;
}

/** Tell the pusher what the push queued (`ids`, as onPush returned them) or why it queued nothing. */
export async function tellPush(core: Core, ev: PushEvent, ids: number[]): Promise<void> {
  if (!ev.say) return;
  const rows = ids.map((id) => buildById(core.db, id)).filter((r): r is BuildRow => r !== null);
  if (rows.length > 0) {
    for (const row of rows) ev.say(buildLine(core, row));
    return;
  }
  ev.say(await whyNothing(core, ev));
}

/**
 * What the lines ask git for, looked up once per push rather than once per ref (each is a git
 * process): the environments' branches, and the `ops.toml` of each pushed commit. A push of 300
 * branches nobody follows, in two environments, started 600 branch lookups, 2 now; the same
 * push to a repository with no service yet read the one commit's `ops.toml` 300 times, now once.
 * The push is known by its `say`, one function per push answer (HostPush.say).
 */
const askedInPush = new WeakMap<(line: string) => void, Map<string, Promise<unknown>>>();

function oncePerPush<T>(ev: PushEvent, key: string, ask: () => Promise<T>): Promise<T> {
  let known = askedInPush.get(ev.say!);
  if (!known) askedInPush.set(ev.say!, (known = new Map()));
  if (!known.has(key)) known.set(key, ask());
  return known.get(key) as Promise<T>;
}

function envBranchOf(core: Core, ev: PushEvent, source: SourceRow, env: string): Promise<string | null> {
  return oncePerPush(ev, `branch\n${source.id}\n${env}`, () => environmentBranch(core, source, env).catch(() => null));
}

/** Why a push queued no build (onPush's rules, asked again for the one line). */
async function whyNothing(core: Core, ev: PushEvent): Promise<string> {
  const name = refName(ev.ref);
  if (ZERO_SHA.test(ev.after)) return `${name} was deleted: nothing to build`;
  const project = core.access.findProject(ev.project);
  const source = sourceById(core, ev.sourceId);
  if (!project || !source) return `${name}: nothing builds (${ev.repo} is no longer connected to ${ev.project})`;
  if (project.archived) return `${name}: nothing builds, ${project.slug} is archived`;
  if (ev.ref.startsWith("refs/tags/")) {
    if (!tagVersion(ev.ref)) return `${name} is not a release tag (v<semver>): nothing to publish`;
    return `${name} publishes nothing: its commit has no modules/ tree`;
  }
  if (!ev.ref.startsWith("refs/heads/")) return `${name}: only branches and release tags build`;
  const branch = name;
  const services = listOfTypeInProject(core.db, project.id, "service").filter((r) => r.environment !== null && specOf<ServiceSpec>(r).source?.repo === ev.repo);
  if (services.length === 0) return `nothing builds from ${branch}: ${await noServiceYet(core, source, ev)}`;
  // The branch each service follows, as onPush decides it (own branch, environment's, default).
  const followed: string[] = [];
  for (const r of services) {
    const env = r.environment!;
    const follows = specOf<ServiceSpec>(r).source?.branch ?? (await envBranchOf(core, ev, source, env)) ?? source.defaultBranch;
    if (follows === branch) return `nothing built from ${branch}: its commit could not be read (the server log says why)`;
    followed.push(`${r.name} (${env}) follows ${follows}`);
  }
  const more = followed.length > NAMED ? `, and ${followed.length - NAMED} more` : "";
  return `nothing builds from ${branch}: no service follows it (${followed.slice(0, NAMED).join(", ")}${more})`;
}

/** Why a repository has no service yet: what its `ops.toml` at the pushed commit says, and Scan. */
async function noServiceYet(core: Core, source: SourceRow, ev: PushEvent): Promise<string> {
  const scan = `run Scan in the console: ${core.config.publicUrl}/projects/${encodeURIComponent(ev.project)}/sources`;
  try {
    const declared = await oncePerPush(ev, `ops.toml\n${source.id}\n${ev.after}`, () => declarationAt(core, source, ev.after));
    if (!declared) return `no service follows it yet and this commit has no ops.toml (add one, then ${scan})`;
    if (declared.services.length === 0) return `no service follows it yet and this commit's ops.toml declares none (add [services.<name>], then ${scan})`;
    return `no service follows it yet (${scan}; it creates ${declared.services.map((s) => s.name).join(", ")} from the default branch's ops.toml)`;
  } catch (e) {
    if (e instanceof OpsTomlError) return `no service follows it yet and this commit's ops.toml does not parse (${e.message})`;
    core.log.warn("ops.toml of a pushed commit could not be read", { repo: ev.repo, sha: ev.after, err: (e as Error).message });
    return `no service follows it yet (${scan})`;
  }
}
