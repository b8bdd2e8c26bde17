/**
 * The command table's shape. `ops <name> [flags] [args]`; a name may have two words
 * (`admin create-operator`). Commands return an exit code; they never call `process.exit`.
 */
import { statSync } from "node:fs";

export interface FlagSpec {
  type: "string" | "boolean";
  short?: string;
  description: string;
  /** Shown in help as the value's name, e.g. `URL`. */
  value?: string;
  /** The OPS_* variable this flag overrides (server-side commands). */
  env?: string;
  multiple?: boolean;
}

export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  cwd: string;
}

export interface CommandContext extends CommandIO {
  flags: Record<string, string | boolean | string[] | undefined>;
  args: string[];
}

/**
 * Which side runs a command: `server` needs the server's host and data dir, `client` talks to a
 * server over HTTP, `local` needs neither (docs/decisions/0418-command-sides.md).
 */
export type Side = "server" | "client" | "local";

/** The headings `ops --help` and the README's command table group commands under, in order. */
export const SIDES: readonly { side: Side; heading: string }[] = [
  { side: "server", heading: "Server commands (on the server's host; they use its data dir)" },
  { side: "client", heading: "Client commands (they talk to a server over HTTP)" },
  { side: "local", heading: "Either side (no server, no data dir)" },
];

export interface Command {
  name: string;
  side: Side;
  summary: string;
  /** Usage line after `ops <name>`, e.g. `[--server URL] [--project P]`. */
  usage?: string;
  /** Paragraphs shown by `ops <name> --help` under the usage. */
  description?: string;
  flags?: Record<string, FlagSpec>;
  /** Most positional arguments accepted (default 0). */
  maxArgs?: number;
  run(ctx: CommandContext): Promise<number>;
}

/** Exit codes every command shares (documented in `ops --help`). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  /** Not signed in, or the token was refused (expired, revoked). */
  auth: 3,
  /** The server could not be reached. */
  unreachable: 4,
  /** The login or action was denied. */
  denied: 5,
} as const;

/** The flags every server-side command accepts, mapped to their OPS_* variables. */
export const SERVER_FLAGS: Record<string, FlagSpec> = {
  "data-dir": { type: "string", value: "DIR", env: "OPS_DATA_DIR", description: "Data directory (default ./ops-data)" },
  listen: { type: "string", value: "HOST:PORT", env: "OPS_LISTEN", description: "Address to bind (default 127.0.0.1:8080)" },
  "public-url": { type: "string", value: "URL", env: "OPS_PUBLIC_URL", description: "Base URL clients use to reach this server" },
};

/** OPS_* overrides from a command's flags. */
export function envOverrides(flags: CommandContext["flags"], specs: Record<string, FlagSpec>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const v = flags[name];
    if (spec.env && typeof v === "string") out[spec.env] = v;
  }
  return out;
}

/**
 * The data directory an offline `ops admin` command works on, or null after telling the person
 * why not: a directory that does not exist is refused rather than created, since a mistyped path
 * (or a missing --data-dir) would otherwise start a new, empty estate and report success. The
 * directory used is printed to stderr so the person sees which estate changed (docs/decisions/0361).
 */
export function adminDataDir(ctx: CommandContext, command: string, dataDir: string): string | null {
  let isDir = false;
  try {
    isDir = statSync(dataDir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) {
    ctx.stderr(`ops ${command}: no data directory at ${dataDir}. Give the server's with --data-dir DIR or OPS_DATA_DIR (it is printed when 'ops serve' starts).\n`);
    return null;
  }
  ctx.stderr(`ops ${command}: data directory ${dataDir}\n`);
  return dataDir;
}
