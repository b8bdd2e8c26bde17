/**
 * Secrets store commands:
 *
 * - `ops admin rotate-secrets-key` (offline, on the data dir): a new master key rewraps every data
 *   key in one transaction. The new key goes where the old one came from: `keys/secrets.key` is
 *   replaced (written to `secrets.key.new` first, so a crash never loses it); a key given by
 *   OPS_SECRETS_KEY or OPS_SECRETS_KEY_FILE is printed once for the operator to store. Refused while a
 *   server answers at the configured address (a running server holds the old key).
 * - `ops admin seal` / `ops admin unseal` talk to a running server (`/api/v1/admin/secrets/…`,
 *   estate.manage) with a bearer token; unseal reads the key from --key-file or standard input,
 *   never from a flag (flags end up in shell history and process lists).
 */
import { existsSync, readFileSync, renameSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../core/config";
import { generateMasterKeyText, writeKeyFile } from "../core/secrets";
import { EXIT, SERVER_FLAGS, envOverrides, type Command, type CommandContext, type FlagSpec } from "./types";

const CLIENT_FLAGS: Record<string, FlagSpec> = {
  server: { type: "string", value: "URL", description: "Server base URL (default: OPS_PUBLIC_URL, else http://OPS_LISTEN)" },
  token: { type: "string", value: "TOKEN", description: "Bearer token with estate.manage (default: $OPS_TOKEN)" },
};

async function serverAnswers(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1500) });
    if (!res.ok) return false;
    const body = (await res.json()) as { status?: string };
    return body.status === "ok";
  } catch {
    return false;
  }
}

export const rotateSecretsKeyCommand: Command = {
  name: "admin rotate-secrets-key",
  side: "server",
  summary: "Rotate the secrets store's master key (offline)",
  usage: "[--data-dir DIR] [--force]",
  description:
    "Generates a new master key and rewraps every stored value's data key with it, in one transaction. With the key in keys/secrets.key, the file is replaced. With OPS_SECRETS_KEY or OPS_SECRETS_KEY_FILE, the new key is printed once: store it there before the next start, the old key no longer opens the store. Stop the server first.",
  flags: { "data-dir": SERVER_FLAGS["data-dir"], force: { type: "boolean", description: "Rotate even though a server answers at the configured address" } },
  async run(ctx) {
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    if (!ctx.flags.force && (await serverAnswers(config.publicUrl))) {
      ctx.stderr(`ops admin rotate-secrets-key: a server answers at ${config.publicUrl}; stop it first (it holds the old key), or pass --force if it serves another data dir.\n`);
      return EXIT.failure;
    }
    const { createCore, closeCore } = await import("../app");
    const core = createCore(config, { modules: [], logSink: () => {} });
    try {
      const status = core.secrets.status();
      if (status.sealed) {
        ctx.stderr(`ops admin rotate-secrets-key: the store is sealed (${status.reason}); it can only be rotated with its current key.\n`);
        return EXIT.failure;
      }
      const newKey = generateMasterKeyText();
      if (config.secretsKey === null && config.secretsKeyFile === null) {
        const file = core.secrets.defaultKeyFile;
        const staged = `${file}.new`;
        writeKeyFile(staged, newKey);
        const { keyId, rewrapped } = core.secrets.rotate(newKey);
        renameSync(staged, file);
        ctx.stdout(`Rotated the secrets master key (new key id ${keyId}); rewrapped ${rewrapped} value${rewrapped === 1 ? "" : "s"}. The new key is in ${path.relative(ctx.cwd, file) || file}.\n`);
      } else {
        const { keyId, rewrapped } = core.secrets.rotate(newKey);
        const where = config.secretsKey !== null ? "OPS_SECRETS_KEY" : `the file OPS_SECRETS_KEY_FILE names (${config.secretsKeyFile})`;
        ctx.stdout(`Rotated the secrets master key (new key id ${keyId}); rewrapped ${rewrapped} value${rewrapped === 1 ? "" : "s"}.\nStore this new key in ${where} before the next start; it is shown only now and the old key no longer opens the store:\n${newKey}\n`);
      }
      return EXIT.ok;
    } finally {
      await closeCore(core);
    }
  },
};

function clientTarget(ctx: CommandContext): { server: string; token: string } | null {
  const token = (typeof ctx.flags.token === "string" ? ctx.flags.token : ctx.env.OPS_TOKEN) ?? "";
  let server = typeof ctx.flags.server === "string" ? ctx.flags.server : "";
  if (!server) server = loadConfig(ctx.env, {}, ctx.cwd).publicUrl;
  if (!token) {
    ctx.stderr(`ops ${ctx.args[0] ?? "admin"}: no token: pass --token or set OPS_TOKEN (a token with estate.manage).\n`);
    return null;
  }
  return { server: server.replace(/\/+$/, ""), token };
}

async function callAdmin(ctx: CommandContext, name: string, pathName: string, body?: unknown): Promise<number> {
  const target = clientTarget(ctx);
  if (!target) return EXIT.auth;
  let res: Response;
  try {
    res = await fetch(`${target.server}/api/v1/admin/secrets/${pathName}`, {
      method: "POST",
      headers: { authorization: `Bearer ${target.token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch {
    ctx.stderr(`ops ${name}: the server at ${target.server} could not be reached.\n`);
    return EXIT.unreachable;
  }
  if (res.status === 204) {
    ctx.stdout(pathName === "seal" ? "The secrets store is sealed: secret routes answer 503 until an unseal or a restart.\n" : "The secrets store is unsealed.\n");
    return EXIT.ok;
  }
  const err = (await res.json().catch(() => ({}))) as { message?: string };
  ctx.stderr(`ops ${name}: ${err.message ?? `HTTP ${res.status}`}\n`);
  return res.status === 401 ? EXIT.auth : res.status === 403 ? EXIT.denied : EXIT.failure;
}

export const sealCommand: Command = {
  name: "admin seal",
  side: "client",
  summary: "Seal a running server's secrets store",
  usage: "[--server URL] [--token TOKEN]",
  description: "Secret routes answer 503 sealed until 'ops admin unseal' or a restart; everything else keeps working.",
  flags: CLIENT_FLAGS,
  run: (ctx) => callAdmin(ctx, "admin seal", "seal"),
};

export const unsealCommand: Command = {
  name: "admin unseal",
  side: "client",
  summary: "Unseal a running server's secrets store with its master key",
  usage: "[--server URL] [--token TOKEN] [--key-file FILE]",
  description: "Reads the master key from --key-file, else from standard input.",
  flags: { ...CLIENT_FLAGS, "key-file": { type: "string", value: "FILE", description: "File holding the master key (default: standard input)" } },
  async run(ctx) {
    let key: string;
    if (typeof ctx.flags["key-file"] === "string") {
      const file = path.resolve(ctx.cwd, ctx.flags["key-file"]);
      if (!existsSync(file)) {
        ctx.stderr(`ops admin unseal: no such file: ${file}\n`);
        return EXIT.usage;
      }
      key = readFileSync(file, "utf8").trim();
    } else {
      key = (await new Response(Bun.stdin.stream()).text()).trim();
    }
    if (!key) {
      ctx.stderr("ops admin unseal: no key given (use --key-file or standard input).\n");
      return EXIT.usage;
    }
    return callAdmin(ctx, "admin unseal", "unseal", { key });
  },
};
