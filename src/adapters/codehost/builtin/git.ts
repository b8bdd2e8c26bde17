/**
 * Running the system `git` for the built-in host. Every child gets an explicit environment —
 * nothing of the server's own (OPS_SECRETS_KEY never reaches git or a hook) — with the user's and
 * the system's git configuration switched off, so only what ops sets applies: hooks from ops's own
 * hooks directory, pushes capped at `OPS_GIT_MAX_PUSH_BYTES`, objects checked on receive.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { OpsError } from "../../../core/errors";

/** A PATH that does not depend on the server's own environment. */
const PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export interface GitEnvOptions {
  /** `<dataDir>/git`. */
  root: string;
  maxPushBytes: number;
  /** Extra variables (CGI variables, a temporary index …). */
  extra?: Record<string, string>;
  /** Which of ops's hooks run (`hooksDir`); default all. */
  hooks?: HookSet;
}

/** The environment of every git child ops starts. */
export function gitEnv(opts: GitEnvOptions): Record<string, string> {
  const config: Array<[string, string]> = [
    ["core.hooksPath", hooksDir(opts.root, opts.hooks)],
    ["receive.maxInputSize", String(opts.maxPushBytes)],
    ["receive.fsckObjects", "true"],
    ["http.receivepack", "true"],
    ["http.uploadpack", "true"],
    ["uploadpack.allowFilter", "true"],
    ["core.logAllRefUpdates", "false"],
    ["gc.auto", "0"],
    // With gc.auto 0 the `git gc --auto` receive-pack starts after every push does nothing: not started.
    ["receive.autogc", "false"],
    // receive-pack's connectivity check lists the refs of the object stores it borrows from with
    // a `git for-each-ref` each. A repository of ops borrows only from itself, while a push is
    // quarantined (its own refs, which `--all` already names): that process lists nothing new.
    ["core.alternateRefsCommand", "true"],
  ];
  const env: Record<string, string> = {
    PATH,
    HOME: opts.root,
    LANG: "C",
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return { ...env, ...opts.extra };
}

/**
 * The hooks a git child runs: `all` (post-receive and the update hook that refuses release tags),
 * or `push-log` (post-receive only), for a push whose update hook would pass every ref anyway
 * (the pusher may publish packages): one shell less per updated ref.
 */
export type HookSet = "all" | "push-log";

let backendArgv: string[] | null = null;

/**
 * The argv of git's CGI program: `git-http-backend` from git's exec path, which is what
 * `git http-backend` starts as a child of its own (one process less per request), else
 * `git http-backend` when the exec path has no such file.
 */
export function httpBackendArgv(): string[] {
  if (backendArgv) return backendArgv;
  const r = Bun.spawnSync(["git", "--exec-path"], { env: { PATH, LANG: "C", LC_ALL: "C" }, stdout: "pipe", stderr: "ignore" });
  const file = r.exitCode === 0 ? path.join(r.stdout.toString().trim(), "git-http-backend") : "";
  backendArgv = file && existsSync(file) ? [file] : ["git", "http-backend"];
  return backendArgv;
}

/** Where ops keeps the hooks every built-in repository runs (installHooks writes both sets). */
export function hooksDir(root: string, set: HookSet = "all"): string {
  return path.join(root, set === "all" ? ".hooks" : ".hooks-push-log");
}

export interface GitResult {
  stdout: Uint8Array;
  stderr: string;
  exitCode: number;
}

/** The output of one git command as text. */
export function text(r: GitResult): string {
  return Buffer.from(r.stdout).toString("utf8");
}

/**
 * Run `git <args>` against `gitDir` (a bare repository) and collect its output. `okCodes` are
 * the exit codes that are answers, not failures (merge-tree's 1 = conflicts); any other code is an
 * internal error carrying git's message in the log only.
 */
export async function git(
  env: Record<string, string>,
  gitDir: string,
  args: string[],
  opts: { input?: Uint8Array | string; okCodes?: number[]; cwd?: string } = {},
): Promise<GitResult> {
  const proc = Bun.spawn(["git", `--git-dir=${gitDir}`, ...args], {
    env,
    cwd: opts.cwd ?? gitDir,
    stdin: opts.input === undefined ? "ignore" : typeof opts.input === "string" ? Buffer.from(opts.input) : opts.input,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).bytes(), new Response(proc.stderr).text(), proc.exited]);
  if (!(opts.okCodes ?? [0]).includes(exitCode)) {
    throw new OpsError("internal", "The git host could not complete the operation.", undefined, {
      cause: new Error(`git ${args.join(" ")} exited ${exitCode}: ${stderr.trim().slice(0, 2000)}`),
    });
  }
  return { stdout, stderr, exitCode };
}
