/**
 * What a container build file (Dockerfile / Containerfile) says a service is: the final stage's
 * last exposed port, the path a URL healthcheck probes, the build arguments with their defaults,
 * and one `release` entry per named stage that migrates or releases (`migrate`, `migrations`,
 * `release`, `db-migrate` …), built with that stage as its target. Stages inherit `EXPOSE` and
 * `HEALTHCHECK` from the stage they are `FROM`; `$VAR` / `${VAR}` in them expand from the stage's
 * `ARG` and `ENV` defaults. The parser reads instructions only; it runs nothing.
 */
import path from "node:path";
import type { DetectedService } from "./model";

interface Stage {
  name: string | null;
  from: string;
  vars: Record<string, string>;
  args: Record<string, string>;
  ports: number[];
  healthcheck: string | null | undefined;
}

/** Join continuation lines, drop comments and parser directives; one entry per instruction. */
function instructions(textIn: string): Array<{ op: string; rest: string }> {
  const out: Array<{ op: string; rest: string }> = [];
  let buf = "";
  for (const raw of textIn.replace(/\r\n?/g, "\n").split("\n")) {
    const line = raw.replace(/\s+$/, "");
    if (buf === "" && /^\s*#/.test(line)) continue;
    if (buf !== "" && /^\s*#/.test(line)) continue;
    if (line.endsWith("\\")) {
      buf += line.slice(0, -1) + " ";
      continue;
    }
    buf += line;
    const m = /^\s*([A-Za-z]+)\s*(.*)$/.exec(buf);
    if (m) out.push({ op: m[1]!.toUpperCase(), rest: m[2]!.trim() });
    buf = "";
  }
  if (buf.trim() !== "") {
    const m = /^\s*([A-Za-z]+)\s*(.*)$/.exec(buf);
    if (m) out.push({ op: m[1]!.toUpperCase(), rest: m[2]!.trim() });
  }
  return out;
}

function expand(s: string, vars: Record<string, string>): string {
  return s.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+][^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (all, a: string | undefined, b: string | undefined) => vars[(a ?? b) as string] ?? all);
}

/** `KEY=value KEY2="v 2"` or the legacy `KEY value` form. */
function assignments(rest: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(rest)) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:\s+(.*))?$/.exec(rest);
    if (m) out.push([m[1]!, (m[2] ?? "").trim()]);
    return out;
  }
  const re = /([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(rest))) out.push([m[1]!, m[2]!.replace(/^(["'])(.*)\1$/, "$2")]);
  return out;
}

/** The path of the first http(s) URL in a healthcheck command. */
function healthPath(cmd: string): string | null {
  const m = /https?:\/\/[^\s/"'`]+(\/[^\s"'`|;&)]*)?/.exec(cmd);
  if (!m) return null;
  return m[1] && m[1] !== "" ? m[1] : "/";
}

/** Parse the stages of a build file. */
export function parseStages(textIn: string): { stages: Stage[]; globalArgs: Record<string, string> } {
  const stages: Stage[] = [];
  const globalArgs: Record<string, string> = {};
  let cur: Stage | null = null;
  for (const { op, rest } of instructions(textIn)) {
    if (op === "FROM") {
      const words = rest.split(/\s+/).filter((w) => !w.startsWith("--"));
      const from = expand(words[0] ?? "", globalArgs);
      const asAt = words.findIndex((w) => w.toUpperCase() === "AS");
      const name = asAt >= 0 && words[asAt + 1] ? words[asAt + 1]!.toLowerCase() : null;
      const parent = stages.find((s) => s.name !== null && s.name === from.toLowerCase());
      cur = {
        name,
        from,
        vars: { ...(parent?.vars ?? {}) },
        args: {},
        ports: [...(parent?.ports ?? [])],
        healthcheck: parent?.healthcheck,
      };
      stages.push(cur);
      continue;
    }
    if (op === "ARG") {
      for (const [k, v] of assignments(rest)) {
        if (!cur) globalArgs[k] = v;
        else {
          const value = v !== "" ? expand(v, cur.vars) : (globalArgs[k] ?? "");
          cur.args[k] = value;
          cur.vars[k] = value;
        }
      }
      continue;
    }
    if (!cur) continue;
    if (op === "ENV") {
      for (const [k, v] of assignments(rest)) cur.vars[k] = expand(v, cur.vars);
    } else if (op === "EXPOSE") {
      for (const w of expand(rest, cur.vars).split(/\s+/)) {
        const port = Number.parseInt(w.split("/")[0] ?? "", 10);
        if (Number.isInteger(port) && port > 0 && port < 65536) cur.ports.push(port);
      }
    } else if (op === "HEALTHCHECK") {
      cur.healthcheck = /^NONE\b/i.test(rest) ? null : healthPath(expand(rest, cur.vars));
    }
  }
  return { stages, globalArgs };
}

const RELEASE_STAGE = /^(db-?)?(migrate|migrations?|release|releases)$|(^|[-_])(migrate|migrations?|release)([-_]|$)/;

/** A resource-shaped name: lower case, letters, digits and dashes, 63 characters at most. */
export function resourceNameOf(s: string): string {
  const n = s
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .replace(/-{2,}/g, "-")
    .slice(0, 63)
    .replace(/-+$/, "");
  return n === "" ? "app" : n;
}

/** True for the file names the scan reads as build files. */
export function isBuildFile(p: string): boolean {
  const base = path.posix.basename(p);
  return /^(Dockerfile|Containerfile)(\.[A-Za-z0-9_.-]+)?$/.test(base) || /\.(Dockerfile|Containerfile|dockerfile)$/.test(base);
}

/** The service name for a build file: its directory's (or the repository's) name, plus a `Dockerfile.<x>` suffix. */
export function serviceNameFor(repoName: string, file: string): string {
  const dir = path.posix.dirname(file);
  const base = path.posix.basename(file);
  const stem = dir === "." ? repoName : path.posix.basename(dir);
  const suffix = /^(?:Dockerfile|Containerfile)\.(.+)$/.exec(base)?.[1] ?? /^(.+)\.(?:Dockerfile|Containerfile|dockerfile)$/.exec(base)?.[1];
  return resourceNameOf(suffix ? (dir === "." ? suffix : `${stem}-${suffix}`) : stem);
}

/** The services one build file describes: the final stage as a service, plus its release stages. */
export function detectFromBuildFile(repoName: string, file: string, textIn: string): DetectedService[] {
  const { stages, globalArgs } = parseStages(textIn);
  if (stages.length === 0) return [];
  const context = path.posix.dirname(file);
  const name = serviceNameFor(repoName, file);
  const final = stages[stages.length - 1]!;
  const argsOf = (s: Stage) => ({ ...globalArgs, ...s.args });
  const out: DetectedService[] = [
    {
      name,
      context,
      dockerfile: file,
      kind: "service",
      port: final.ports.length > 0 ? final.ports[final.ports.length - 1]! : null,
      healthcheck: final.healthcheck ?? null,
      target: null,
      args: argsOf(final),
    },
  ];
  for (const s of stages) {
    if (s === final || s.name === null || !RELEASE_STAGE.test(s.name)) continue;
    out.push({ name: resourceNameOf(`${name}-${s.name}`), context, dockerfile: file, kind: "release", port: null, healthcheck: null, target: s.name, args: argsOf(s) });
  }
  return out;
}
