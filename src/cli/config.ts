/**
 * The client's configuration: `~/.config/ops/config.json` (or `$XDG_CONFIG_HOME/ops/config.json`),
 * mode 0600 in a 0700 folder, holding the server's URL and the token. No keyring: ops runs on
 * headless hosts. `OPS_SERVER` and `OPS_TOKEN` override the file (CI, scripts).
 */
import { mkdirSync, readFileSync, writeFileSync, renameSync, chmodSync, existsSync, unlinkSync } from "node:fs";
import path from "node:path";
import { CliError } from "./http";
import { EXIT } from "../commands/types";

export interface ClientConfigFile {
  server?: string | null;
  token?: string | null;
  project?: string | null;
  /** `ops login --client mcp`'s server and token (kind `mcp`), kept apart from the CLI's own login. */
  mcp_server?: string | null;
  mcp_token?: string | null;
}

type Env = Record<string, string | undefined>;

export function configDir(env: Env): string {
  const xdg = env.XDG_CONFIG_HOME?.trim();
  if (xdg) return path.join(xdg, "ops");
  const home = env.HOME?.trim() || env.USERPROFILE?.trim();
  if (!home) throw new CliError("HOME is not set, so there is nowhere to keep the configuration.", EXIT.failure);
  return path.join(home, ".config", "ops");
}

export function configPath(env: Env): string {
  return path.join(configDir(env), "config.json");
}

/** The file's contents, or {} when there is none. A broken file is an error, not silently ignored. */
export function readConfigFile(env: Env): ClientConfigFile {
  const file = configPath(env);
  if (!existsSync(file)) return {};
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as unknown;
    return parsed && typeof parsed === "object" ? (parsed as ClientConfigFile) : {};
  } catch {
    throw new CliError(`${file} is not valid JSON; fix it or remove it and run 'ops login'.`, EXIT.failure);
  }
}

/** Write the file atomically with mode 0600 (temp file beside it, then rename). */
export function writeConfigFile(env: Env, data: ClientConfigFile): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, "config.json");
  const tmp = path.join(dir, `.config.json.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, JSON.stringify(data, null, 2) + "\n", { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } catch (e) {
    if (existsSync(tmp)) unlinkSync(tmp);
    throw new CliError(`could not write ${file}: ${(e as Error).message}`, EXIT.failure);
  }
  return file;
}

export interface Resolved {
  server: string | null;
  token: string | null;
  /** Where the token came from, for messages. */
  tokenSource: "OPS_TOKEN" | "config" | null;
}

/** Server and token: the environment first, then the file. */
export function resolveClient(env: Env, serverFlag?: string): Resolved {
  const file = readConfigFile(env);
  const server = normaliseServer(serverFlag ?? env.OPS_SERVER ?? file.server ?? null);
  const envToken = env.OPS_TOKEN?.trim() || null;
  const token = envToken ?? file.token ?? null;
  return { server, token, tokenSource: envToken ? "OPS_TOKEN" : token ? "config" : null };
}

export function normaliseServer(raw: string | null | undefined): string | null {
  if (!raw) return null;
  let s = raw.trim();
  if (s === "") return null;
  if (!/^https?:\/\//i.test(s)) s = `https://${s}`;
  try {
    const u = new URL(s);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`;
  } catch {
    throw new CliError(`"${raw}" is not a server URL.`, EXIT.usage);
  }
}

/** Server and token, or a clear error telling the person how to get them. */
export function requireClient(env: Env, serverFlag?: string): { server: string; token: string; tokenSource: Resolved["tokenSource"] } {
  const r = resolveClient(env, serverFlag);
  if (!r.server) throw new CliError("no server configured: run 'ops login --server URL' or set OPS_SERVER.", EXIT.auth);
  if (!r.token) throw new CliError("not signed in: run 'ops login' or set OPS_TOKEN.", EXIT.auth);
  return { server: r.server, token: r.token, tokenSource: r.tokenSource };
}
