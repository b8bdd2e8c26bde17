/**
 * Delivery tools: builds, deploy, rollback, the timeline and the nodes replicas run on. Each is one
 * route of the builds or deployments domain, with that route's permission spec (a build's routes are evaluated in the
 * build's own environment, through the builds domain's `environmentOfBuild`, as the routes are).
 */
import type { Core } from "../../core/core";
import type { ResolveContext } from "../../core/authz/plugin";
import { buildDetail, buildLog, cancelBuild, createBuild, environmentOfBuild, listBuilds, type BuildResponse } from "../builds/service";
import { deployService, isErrorHead, listTimeline, nodesReport, rollbackService, rolloutVerdict } from "../deployments/service";
import { READS, changes, count, envOf, type ToolSpec } from "./tool-kit";

const PROJECT = { slug: "project" };
const BUILD = { slug: "project", id: "build_id" };
const SERVICE = { slug: "project", name: "service" };
const describe = {
  project: "Project slug",
  build_id: "The build's number (`id` in list_builds)",
  service: "Service name",
};

/** The route's own scope for one build: that build's environment. */
const inBuildEnvironment = (key: "builds.read" | "builds.run") => (core: Core) => ({ key, environment: (ctx: ResolveContext) => environmentOfBuild(core, ctx.project!.id, Number(ctx.params.id)) });

const short = (sha: string | null | undefined) => (sha ?? "").slice(0, 12);
const buildLine = (b: BuildResponse) => `#${b.id} ${b.service || b.kind} ${b.status}${b.failure_kind ? ` (${b.failure_kind})` : ""} at ${short(b.commit_sha)}`;

export const DELIVERY_TOOLS: ToolSpec[] = [
  {
    name: "list_builds",
    title: "List builds",
    description: "Builds of one environment of a project, newest first (optionally one service's).",
    route: "GET /api/v1/projects/:slug/builds",
    args: { rename: PROJECT, describe },
    permission: "builds.read",
    annotations: READS,
    run: (c) => listBuilds(c.core, c.project, envOf(c), c.query.service ?? null, c.query.limit ?? 50),
    text: (r: BuildResponse[], c) => `${count(r.length, "build")} in ${c.project.slug}/${envOf(c)}${r.length ? `: ${r.slice(0, 5).map(buildLine).join("; ")}` : ""}.`,
  },
  {
    name: "get_build",
    title: "Get a build",
    description: "One build with its steps' timings, its failure, its image and the rollout it led to.",
    route: "GET /api/v1/projects/:slug/builds/:id",
    args: { rename: BUILD, describe },
    permission: inBuildEnvironment("builds.read"),
    annotations: READS,
    run: (c) => buildDetail(c.core, c.project, c.params.id),
    text: (r: ReturnType<typeof buildDetail>) => `Build ${buildLine(r.build)}${r.build.error ? `: ${r.build.error}` : ""}.`,
  },
  {
    name: "get_build_log",
    title: "Read a build's log",
    description: "A page of a build's log after sequence `after` (pass the returned `next` to read on; `live` while it runs).",
    route: "GET /api/v1/projects/:slug/builds/:id/log",
    args: { rename: BUILD, describe },
    permission: inBuildEnvironment("builds.read"),
    annotations: READS,
    run: (c) => buildLog(c.core, c.project, c.params.id, c.query.after ?? 0, c.query.limit ?? 500),
    text: (r: ReturnType<typeof buildLog>) => `${count(r.lines.length, "line")} up to ${r.next}${r.live ? " (still running)" : ""}.`,
  },
  {
    name: "start_build",
    title: "Start a build",
    description: "Queue a build of the head of a branch of the service's repository (default the service's branch).",
    route: "POST /api/v1/projects/:slug/builds",
    args: { rename: PROJECT, omit: ["query.service", "limit"], describe },
    permission: "builds.run",
    annotations: changes(false, false),
    run: (c) => createBuild(c.core, c.project, envOf(c), c.body as { service: string; ref?: string | null }, c.auth),
    text: (r: BuildResponse) => `Queued build ${buildLine(r)}.`,
  },
  {
    name: "cancel_build",
    title: "Cancel a build",
    description: "Cancel a queued or running build (a running one stops at the end of its step).",
    route: "POST /api/v1/projects/:slug/builds/:id/cancel",
    args: { rename: BUILD, describe },
    permission: inBuildEnvironment("builds.run"),
    annotations: changes(true, true),
    run: async (c) => (await cancelBuild(c.core, c.project, c.params.id, c.auth)).build,
    text: (r: BuildResponse) => `Build #${r.id} is ${r.status}.`,
  },
  {
    name: "deploy",
    title: "Deploy a service",
    description: "Roll a service out to a signed image: a digest, or the image of one of its builds (`build_id`). Under `ops serve` it answers with the rollout's verdict (up to 2 minutes): healthy, or rolled back or failed with what the new replicas printed last.",
    route: "POST /api/v1/projects/:slug/resources/service/:name/deploy",
    args: { rename: SERVICE, omit: ["query.service", "limit"], describe },
    permission: "deployments.deploy",
    annotations: changes(true, false),
    run: async (c) => {
      const d = await deployService(c.core, c.project, c.query.environment, c.params.name, c.body as { digest?: string | null; build_id?: number | null }, c.auth);
      return (await rolloutVerdict(c.core, d.id, c.project.slug, VERDICT_WAIT_MS)) ?? d;
    },
    text: (r) => rolloutText("Deploying", "to", r),
  },
  {
    name: "rollback",
    title: "Roll a service back",
    description: "Roll a service back to a digest, by default the newest healthy one that is not current.",
    route: "POST /api/v1/projects/:slug/resources/service/:name/rollback",
    args: { rename: SERVICE, omit: ["query.service", "limit"], describe },
    permission: "deployments.deploy",
    annotations: changes(true, false),
    run: async (c) => {
      const d = await rollbackService(c.core, c.project, c.query.environment, c.params.name, c.body as { digest?: string | null } | undefined, c.auth);
      return (await rolloutVerdict(c.core, d.id, c.project.slug, VERDICT_WAIT_MS)) ?? d;
    },
    text: (r) => rolloutText("Rolling back", "to", r),
  },
  {
    name: "timeline",
    title: "Deployment timeline",
    description: "Builds and rollouts of one environment, newest first: what ran, what failed and why, what rolled back.",
    route: "GET /api/v1/projects/:slug/deployments",
    args: { rename: PROJECT, describe },
    permission: "deployments.read",
    annotations: READS,
    run: (c) => listTimeline(c.core, c.project, envOf(c), c.query.service || null, c.query.limit ?? 50),
    text: (r: Array<{ service: string; state_text: string; deployment?: { failure_output?: Array<{ process: string; lines: string[] }> } | null }>, c) => {
      // A failed rollout's reason: the last line its failed process printed that says something.
      const failed = r[0]?.deployment?.failure_output?.[0];
      const said = saidBy(failed);
      return `${count(r.length, "event")} in ${c.project.slug}/${envOf(c)}${r.length ? `; newest: ${r[0]!.service}: ${r[0]!.state_text}` : ""}${said ? `; ${failed!.process} printed: ${said.slice(0, 300)}` : ""}.`;
    },
  },
  {
    name: "nodes_list",
    title: "List nodes",
    description: "Where replicas run (estate admins): the Swarm's nodes (or the one Docker Engine, or this host) with role, state, availability, address, CPUs and memory, and ops's replicas on each; when the engine does not answer, `manager.error` says why.",
    route: "GET /api/v1/admin/nodes",
    permission: "estate.manage",
    annotations: READS,
    run: (c) => nodesReport(c.core),
    text: (r: NodesReport) =>
      r.manager?.error
        ? `The ${r.runtime} engine: ${r.manager.error}`
        : `${count(r.nodes.length, "node")} (${r.runtime}): ${r.nodes.map((n) => `${n.hostname} ${n.role} ${n.state}/${n.availability} with ${count(n.replicas.length, "replica")}`).join("; ")}.`,
  },
];

type NodesReport = Awaited<ReturnType<typeof nodesReport>>;

/** How long the deploy and rollback tools wait for the rollout's verdict. */
const VERDICT_WAIT_MS = 120_000;

/** The line a failed process printed that says why: its first error line, else its last line. */
function saidBy(p: { lines: string[] } | undefined): string | undefined {
  return p?.lines.find((l) => isErrorHead(l)) ?? p?.lines.filter((l) => l.trim() !== "").at(-1);
}

/** A deploy's or rollback's answer in a sentence: the verdict when it came, with the reason of a failure. */
function rolloutText(what: string, to: string, r: { service: string; environment: string; image_digest: string; rollout: string; rollout_note?: string | null; failure_output?: Array<{ process: string; lines: string[] }> }): string {
  const head = `${what} ${r.service} in ${r.environment} ${to} ${short(r.image_digest)}: ${r.rollout}`;
  if (r.rollout === "healthy" || !r.rollout_note || ["queued", "starting", "releasing", "probing", "switching", "draining"].includes(r.rollout)) return `${head}.`;
  const failed = r.failure_output?.[0];
  const said = saidBy(failed);
  return `${head}: ${r.rollout_note}${said ? `; ${failed!.process} printed: ${said.slice(0, 300)}` : ""}.`;
}
