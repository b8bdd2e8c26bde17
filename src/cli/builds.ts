/**
 * `ops builds`: a project's builds, newest first, one line each (issue 27: after a push, what did
 * it build?). The project comes from `--project`, the saved one or the token's pin, like `ops logs`.
 */
import { EXIT, type Command } from "../commands/types";
import { api } from "./http";
import { requireClient } from "./config";
import { PROJECT_FLAG, assertExists, limitOf, projectOf, query, str } from "./delivery";

interface Build {
  id: number;
  status: string;
  service: string;
  environment: string;
  commit_sha: string;
  branch: string | null;
  trigger: string;
  queued_at: string;
  message: string;
  error: string | null;
}


/** The table `ops builds` prints (one header line, then a line per build). */
export function buildsTable(builds: Build[]): string {
  const rows = [["ID", "STATUS", "SERVICE", "ENV", "COMMIT", "BRANCH", "TRIGGER", "QUEUED", "MESSAGE"], ...builds.map((b) => [String(b.id), b.status, b.service || "-", b.environment || "-", b.commit_sha.slice(0, 7), b.branch ?? "-", b.trigger, b.queued_at.replace(/\.\d+Z$/, "Z"), b.error ? `${b.message} (${b.error})` : b.message])];
  const widths = rows[0].map((_, i) => (i === rows[0].length - 1 ? 0 : Math.max(...rows.map((r) => r[i].length))));
  return rows.map((r) => r.map((c, i) => (widths[i] ? c.padEnd(widths[i]) : c)).join("  ").trimEnd()).join("\n") + "\n";
}

export const buildsCommand: Command = {
  name: "builds",
  side: "client",
  summary: "List a project's builds, newest first",
  usage: "[--service S] [--project P] [--environment E] [--limit N] [--json]",
  description: "A line per build: its number (for 'ops deploy --build N'), status, service, environment, commit, branch, what started it, when, and the commit message (with the error when it failed).",
  flags: {
    service: { type: "string", value: "S", description: "Only this service's builds" },
    project: PROJECT_FLAG,
    environment: { type: "string", value: "E", description: "Environment (default production)" },
    limit: { type: "string", value: "N", description: "How many, 1 to 500 (default 20)" },
    json: { type: "boolean", description: "Print the builds as a JSON array" },
  },
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const project = await projectOf(ctx, server, token);
    const limit = limitOf(ctx, 20, 500);
    const service = str(ctx.flags.service);
    const environment = str(ctx.flags.environment);
    await assertExists(server, token, project, service, environment);
    const builds = (await api<Build[]>(server, token, "GET", `/api/v1/projects/${encodeURIComponent(project)}/builds${query({ service, environment, limit })}`)).body;
    if (ctx.flags.json) {
      ctx.stdout(JSON.stringify(builds, null, 2) + "\n");
      return EXIT.ok;
    }
    if (builds.length === 0) {
      ctx.stderr(`no builds in ${project}${service ? ` for ${service}` : ""} yet. A push to a branch a service follows starts one.\n`);
      return EXIT.ok;
    }
    ctx.stdout(buildsTable(builds));
    return EXIT.ok;
  },
};
