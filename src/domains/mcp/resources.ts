/**
 * MCP resources: a build's log and a service's recent log lines (both subscribable: the session
 * polls them and sends `notifications/resources/updated` when they grow), and `ops.toml`'s format
 * for an assistant about to edit a repository. A resource read is a tool call underneath — the
 * build log is `get_build_log`, service logs are `search_logs` — so it is authorized and audited
 * exactly as those routes are.
 */
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import design from "../../../docs/design.md" with { type: "text" };
import { invoke, type Caller } from "./tool-kit";
import { toolsOf } from "./tools";

export const OPS_TOML_URI = "ops://docs/ops-toml";

export const STATIC_RESOURCES = [
  {
    uri: OPS_TOML_URI,
    name: "ops-toml",
    title: "The ops.toml format",
    description: "How a repository declares its services, build and start commands, release steps, hooks, domains and per-environment settings to ops. Read it before editing a repository's ops.toml.",
    mimeType: "text/markdown",
  },
];

export const RESOURCE_TEMPLATES = [
  {
    uriTemplate: "ops://projects/{project}/builds/{build_id}/log",
    name: "build-log",
    title: "Build log",
    description: "A build's whole log (steps, commands and their output). Subscribe to follow a running build.",
    mimeType: "text/plain",
  },
  {
    uriTemplate: "ops://projects/{project}/environments/{environment}/services/{service}/logs",
    name: "service-logs",
    title: "Service logs",
    description: "The newest 200 log lines of a service (its output and its OTLP logs), oldest first. Subscribe for a live tail.",
    mimeType: "text/plain",
  },
];

/** The format section of the design document, as the binary embeds it. */
export function opsTomlFormat(): string {
  const start = design.indexOf("### `ops.toml`");
  const end = design.indexOf("\n### ", start + 1);
  const section = start >= 0 ? design.slice(start, end > start ? end : undefined).trim() : "";
  if (!section) throw new OpsError("internal", "The ops.toml format is missing from this build.");
  return `${section.replace(/^### /, "# ")}\n`;
}

const SEGMENT = "([A-Za-z0-9][A-Za-z0-9._-]{0,127})";
const BUILD_LOG = new RegExp(`^ops://projects/${SEGMENT}/builds/([1-9][0-9]{0,15})/log$`);
const SERVICE_LOGS = new RegExp(`^ops://projects/${SEGMENT}/environments/${SEGMENT}/services/${SEGMENT}/logs$`);

/** Lines of a build log read into one resource at most. */
const MAX_BUILD_LINES = 20_000;
const PAGE = 5000;
const SERVICE_LINES = 200;

interface LogPage {
  lines: Array<{ at: string; level: string; line: string; seq: number; step: string }>;
  live: boolean;
  next: number;
}
interface Line {
  timestamp: string;
  level: string;
  host: string;
  message: string;
}

export class UnknownResource extends Error {}

/** The tool a resource reads through; absent when the Core was composed without its domain. */
function toolFor(core: Core, name: string) {
  const tool = toolsOf(core).get(name);
  if (!tool) throw new UnknownResource(`This server has no ${name} tool, so it serves no such resource.`);
  return tool;
}

async function readBuildLog(core: Core, caller: Caller, project: string, id: number): Promise<{ text: string; mark: string }> {
  const tool = toolFor(core, "get_build_log");
  const out: string[] = [];
  let after = 0;
  let live = false;
  for (;;) {
    const page = (await invoke(core, tool, { project, build_id: id, after, limit: PAGE }, caller)).result as LogPage;
    for (const l of page.lines) out.push(`${l.at} [${l.step}]${l.level === "info" ? "" : ` ${l.level.toUpperCase()}`} ${l.line}`);
    live = page.live;
    if (page.lines.length < PAGE || page.next === after) break;
    after = page.next;
    if (out.length >= MAX_BUILD_LINES) {
      out.push(`… the log goes on after line ${after}: read it with get_build_log (after=${after}).`);
      break;
    }
  }
  if (live) out.push("(the build is still running)");
  return { text: out.join("\n") + (out.length ? "\n" : ""), mark: `${after}:${out.length}:${live}` };
}

async function readServiceLogs(core: Core, caller: Caller, project: string, environment: string, service: string): Promise<{ text: string; mark: string }> {
  const tool = toolFor(core, "search_logs");
  const lines = (await invoke(core, tool, { project, environment, service, limit: SERVICE_LINES }, caller)).result as Line[];
  const text = [...lines].reverse().map((l) => `${l.timestamp} ${l.level} ${l.host} ${l.message}`).join("\n");
  const newest = lines[0];
  return { text: text + (text ? "\n" : ""), mark: newest ? `${newest.timestamp}:${Bun.hash(newest.message)}:${lines.length}` : "" };
}

/** Read a resource for `caller`; `mark` changes whenever the content grew (for subscriptions). Throws UnknownResource for a URI ops does not serve. */
export async function readResource(core: Core, uri: string, caller: Caller): Promise<{ mimeType: string; text: string; mark: string }> {
  if (uri === OPS_TOML_URI) return { mimeType: "text/markdown", text: opsTomlFormat(), mark: "" };
  const build = BUILD_LOG.exec(uri);
  if (build) return { mimeType: "text/plain", ...(await readBuildLog(core, caller, build[1], Number(build[2]))) };
  const logs = SERVICE_LOGS.exec(uri);
  if (logs) return { mimeType: "text/plain", ...(await readServiceLogs(core, caller, logs[1], logs[2], logs[3])) };
  throw new UnknownResource(`No resource ${uri.slice(0, 200)}: ops serves ${OPS_TOML_URI} and the templates resources/templates/list names.`);
}
