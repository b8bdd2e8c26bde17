/**
 * `ops logs`, `ops deploy` and `ops rollback`: a service's log lines (and a tail that follows
 * them), and rollouts from the terminal, each followed to its verdict with a progress line per
 * state. The project comes from `--project`, else the one `ops login --project` saved, else the
 * token's pinned project.
 */
import { EXIT, type Command, type CommandContext } from "../commands/types";
import { api, CliError } from "./http";
import { readConfigFile, requireClient } from "./config";

interface LogEntry {
  timestamp: string;
  level: string;
  service: string;
  environment: string;
  project: string;
  host: string;
  target: string;
  message: string;
}

interface Deployment {
  id: number;
  image_digest: string;
  rollout: string;
  rollout_note?: string | null;
  environment: string;
  service: string;
}

interface TimelineRow {
  state: string;
  state_text: string;
  failure_kind?: string | null;
  deployment?: { id: number; rollout: string; rollout_note?: string | null; image_digest: string; failure_output?: Array<{ process: string; lines: string[] }> } | null;
}

/** Rollout states that are a verdict. */
const FINAL_ROLLOUTS = new Set(["healthy", "rolled_back", "failed", "refused", "cancelled"]);

/** A flag's text, trimmed; undefined when missing or blank. */
export const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() !== "" ? v.trim() : undefined);

/** The `--project` flag of the commands that act in a project (see `projectOf`). */
export const PROJECT_FLAG = { type: "string" as const, value: "P", description: "Project (default: the one saved by 'ops login --project', or the token's)" };

/** `--limit` as given (a whole number from 1 to `max`), else `fallback`; a usage error otherwise. */
export function limitOf(ctx: CommandContext, fallback: number, max: number): string {
  const limit = str(ctx.flags.limit) ?? String(fallback);
  if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > max) throw new CliError(`--limit must be a whole number from 1 to ${max}.`, EXIT.usage);
  return limit;
}

/** The project to act in (see the file comment). */
export async function projectOf(ctx: CommandContext, server: string, token: string): Promise<string> {
  const flag = str(ctx.flags.project);
  if (flag) return flag;
  const saved = str(readConfigFile(ctx.env).project ?? undefined);
  if (saved) return saved;
  const me = (await api<{ token_project?: string | null }>(server, token, "GET", "/api/v1/me")).body;
  if (me.token_project) return me.token_project;
  throw new CliError("which project? Pass --project P (or sign in with 'ops login --project P').", EXIT.usage);
}

export function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

function logLine(e: LogEntry): string {
  // The replica that wrote the line, when one did (ops's own notes name none).
  return `${e.timestamp} ${e.level.toUpperCase().padEnd(5)} ${e.service}[${e.environment}${e.host ? ` ${e.host}` : ""}] ${e.message}\n`;
}

const logKey = (e: LogEntry) => `${e.timestamp}\u0000${e.host}\u0000${e.target}\u0000${e.message}`;

export interface FollowDeps {
  sleep(ms: number): Promise<void>;
  /** Checked before every poll: true ends the tail (Ctrl-C ends the process anyway). */
  stopped(): boolean;
}

/**
 * Print the newest lines oldest first, then, with `follow`, poll every `intervalMs` for lines from
 * the newest timestamp seen on, leaving out the ones already printed.
 */
export async function tailLogs(fetchPage: (from: string | undefined) => Promise<LogEntry[]>, print: (line: string) => void, opts: { since?: string; follow: boolean; intervalMs: number }, deps: FollowDeps): Promise<number> {
  let seen = new Set<string>();
  let newest: string | undefined;
  const show = (page: LogEntry[]) => {
    const fresh = page.filter((e) => !seen.has(logKey(e))).reverse();
    for (const e of fresh) print(logLine(e));
    for (const e of page) {
      if (!newest || e.timestamp > newest) {
        newest = e.timestamp;
        seen = new Set();
      }
    }
    // Lines at the newest timestamp come again in the next page (`from` is inclusive).
    for (const e of page) if (e.timestamp === newest) seen.add(logKey(e));
    return fresh.length;
  };
  let printed = show(await fetchPage(opts.since));
  if (!opts.follow) return printed;
  while (!deps.stopped()) {
    await deps.sleep(opts.intervalMs);
    if (deps.stopped()) break;
    printed += show(await fetchPage(newest ?? opts.since));
  }
  return printed;
}

/**
 * Exit 1 for a project or service that does not exist (like `ops deploy`), rather than "no log
 * lines yet". A caller who may read logs but not resources is not second-guessed (docs/decisions/0362).
 */
export async function assertExists(server: string, token: string, project: string, service: string | undefined, environment: string | undefined): Promise<void> {
  const p = await api<{ environments: string[] }>(server, token, "GET", `/api/v1/projects/${encodeURIComponent(project)}`, undefined, [403, 404]);
  if (p.status === 404) throw new CliError(`no project "${project}" on ${server}.`, EXIT.failure);
  if (p.status !== 200 || !service) return;
  const names = new Set<string>();
  for (const env of environment ? [environment] : p.body.environments) {
    const r = await api<Array<{ name: string }>>(server, token, "GET", `/api/v1/projects/${encodeURIComponent(project)}/resources${query({ environment: env, kind: "service" })}`, undefined, [403, 404, 422]);
    if (r.status !== 200) return;
    for (const s of r.body) names.add(s.name);
  }
  if (!names.has(service)) {
    const known = [...names].sort();
    throw new CliError(`no service "${service}" in ${project}${environment ? ` (${environment})` : ""}. ${known.length ? `Its services: ${known.join(", ")}.` : "It has no services yet."}`, EXIT.failure);
  }
}

export const logsCommand: Command = {
  name: "logs",
  side: "client",
  summary: "Show a service's log lines; --follow keeps printing new ones",
  usage: "[SERVICE] [--project P] [--environment E] [--level L] [--grep TEXT] [--since 15m] [--limit N] [--follow]",
  description:
    "Lines come from ops's log store: what the service printed, its builds' output and whatever it sent over OTLP. Without SERVICE, every service of the project. --since takes a time (RFC 3339) or an age (15m, 24h, 7d).",
  maxArgs: 1,
  flags: {
    project: PROJECT_FLAG,
    environment: { type: "string", value: "E", description: "Environment (default: every one you may read)" },
    level: { type: "string", value: "L", description: "Only this level: debug, info, warn or error" },
    grep: { type: "string", value: "TEXT", description: "Only lines whose message or target contains TEXT (any case)" },
    since: { type: "string", value: "WHEN", description: "From this time or age on (default: the newest lines)" },
    limit: { type: "string", value: "N", description: "Newest lines to show first, 1 to 1000 (default 100)" },
    follow: { type: "boolean", short: "f", description: "Keep printing new lines every 2 s until interrupted" },
    json: { type: "boolean", description: "Print the lines as JSON, one array (not with --follow)" },
  },
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const project = await projectOf(ctx, server, token);
    const limit = limitOf(ctx, 100, 1000);
    const follow = ctx.flags.follow === true;
    if (follow && ctx.flags.json) throw new CliError("--json prints one array; it cannot follow. Leave out one of them.", EXIT.usage);
    await assertExists(server, token, project, ctx.args[0], str(ctx.flags.environment));
    const base = { project, service: ctx.args[0], environment: str(ctx.flags.environment), level: str(ctx.flags.level), q: str(ctx.flags.grep), limit };
    const fetchPage = async (from: string | undefined) => (await api<LogEntry[]>(server, token, "GET", `/api/v1/obs/logs${query({ ...base, from })}`)).body;
    if (ctx.flags.json) {
      ctx.stdout(JSON.stringify((await fetchPage(str(ctx.flags.since))).reverse(), null, 2) + "\n");
      return EXIT.ok;
    }
    let interrupted = false;
    const onSignal = () => {
      interrupted = true;
    };
    if (follow) process.once("SIGINT", onSignal);
    try {
      const printed = await tailLogs(fetchPage, ctx.stdout, { since: str(ctx.flags.since), follow, intervalMs: 2000 }, { sleep: (ms) => Bun.sleep(ms), stopped: () => interrupted });
      if (printed === 0 && !follow) ctx.stderr(`no log lines in ${project}${base.service ? ` for ${base.service}` : ""} yet.\n`);
    } finally {
      process.off("SIGINT", onSignal);
    }
    return EXIT.ok;
  },
};

/** Follow a deployment on the timeline until its rollout has a verdict; a line per state. */
export async function followRollout(readTimeline: () => Promise<TimelineRow[]>, id: number, print: (line: string) => void, deps: { sleep(ms: number): Promise<void>; now(): number }, timeoutMs: number): Promise<TimelineRow | null> {
  const end = deps.now() + timeoutMs;
  let last = "";
  for (;;) {
    const row = (await readTimeline()).find((r) => r.deployment?.id === id) ?? null;
    if (row?.deployment) {
      const line = `${row.deployment.rollout}: ${row.state_text}`;
      if (line !== last) print(`  ${line}\n`);
      last = line;
      if (FINAL_ROLLOUTS.has(row.deployment.rollout)) return row;
    }
    if (deps.now() >= end) return row;
    await deps.sleep(1000);
  }
}

async function rollout(ctx: CommandContext, what: "deploy" | "rollback", body: Record<string, unknown>): Promise<number> {
  const { server, token } = requireClient(ctx.env);
  const service = ctx.args[0];
  if (!service) throw new CliError(`name the service: ops ${what} SERVICE …`, EXIT.usage);
  const project = await projectOf(ctx, server, token);
  const environment = str(ctx.flags.environment) ?? "production";
  const q = query({ environment });
  const res = await api<Deployment>(server, token, "POST", `/api/v1/projects/${encodeURIComponent(project)}/resources/service/${encodeURIComponent(service)}/${what}${q}`, body, [404, 409, 422]);
  if (res.status !== 201) {
    const message = (res.body as unknown as { message?: string })?.message ?? `the server answered ${res.status}`;
    throw new CliError(message, EXIT.failure);
  }
  const d = res.body;
  ctx.stderr(`deployment ${d.id}: ${service} in ${environment} of ${project} to ${d.image_digest}\n`);
  if (ctx.flags["no-wait"] === true) {
    ctx.stdout(`${d.id}\n`);
    return EXIT.ok;
  }
  const timeline = async () => (await api<TimelineRow[]>(server, token, "GET", `/api/v1/projects/${encodeURIComponent(project)}/deployments${query({ environment, service, limit: "20" })}`)).body;
  const row = await followRollout(timeline, d.id, ctx.stderr, { sleep: (ms) => Bun.sleep(ms), now: Date.now }, 10 * 60_000);
  const verdict = row?.deployment?.rollout ?? "unknown";
  // The reason where the failure is: what the failed replicas and release steps printed last.
  for (const p of row?.deployment?.failure_output ?? []) {
    ctx.stderr(`${p.process} printed last:\n`);
    for (const line of p.lines) ctx.stderr(`  | ${line}\n`);
  }
  if (row?.deployment?.failure_output?.length) ctx.stderr(`all its lines: ops logs ${service} --project ${project} --environment ${environment}\n`);
  ctx.stdout(`${d.id} ${verdict}\n`);
  return verdict === "healthy" ? EXIT.ok : EXIT.failure;
}

const rolloutFlags = {
  project: PROJECT_FLAG,
  environment: { type: "string" as const, value: "E", description: "Environment (default production)" },
  "no-wait": { type: "boolean" as const, description: "Print the deployment's id and return without following the rollout" },
};

export const deployCommand: Command = {
  name: "deploy",
  side: "client",
  summary: "Roll a service out to a build's image or a signed digest, and follow it",
  usage: "SERVICE (--build ID | --digest sha256:…) [--project P] [--environment E] [--no-wait]",
  description:
    "Only images signed by this server's key are deployed. The rollout is followed until its verdict, a line per state on stderr; the exit code is 0 when it is healthy, 1 when it failed or rolled back.",
  maxArgs: 1,
  flags: {
    build: { type: "string", value: "ID", description: "Deploy the image this build pushed" },
    digest: { type: "string", value: "DIGEST", description: "Deploy this manifest digest" },
    ...rolloutFlags,
  },
  async run(ctx) {
    const build = str(ctx.flags.build);
    const digest = str(ctx.flags.digest);
    if ((build === undefined) === (digest === undefined)) throw new CliError("give exactly one of --build ID and --digest sha256:….", EXIT.usage);
    if (build !== undefined && !/^\d+$/.test(build)) throw new CliError("--build takes a build's number (see the Builds page).", EXIT.usage);
    return rollout(ctx, "deploy", build !== undefined ? { build_id: Number(build) } : { digest });
  },
};

export const rollbackCommand: Command = {
  name: "rollback",
  side: "client",
  summary: "Roll a service back (default: to the newest healthy image that is not current), and follow it",
  usage: "SERVICE [--digest sha256:…] [--project P] [--environment E] [--no-wait]",
  maxArgs: 1,
  flags: {
    digest: { type: "string", value: "DIGEST", description: "Roll back to this digest" },
    ...rolloutFlags,
  },
  async run(ctx) {
    const digest = str(ctx.flags.digest);
    return rollout(ctx, "rollback", digest ? { digest } : {});
  },
};
