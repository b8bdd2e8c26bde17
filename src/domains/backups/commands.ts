/**
 * `ops backup create`, `ops backup verify` and `ops restore`: offline commands on the server's
 * host. `backup create` reads the data dir directly and works while the server runs (it never
 * migrates nor writes there except its scratch files under `run/`).
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../../core/config";
import { EXIT, SERVER_FLAGS, envOverrides, type Command, type CommandContext } from "../../commands/types";
import { VERSION } from "../../version";
import { passphraseFrom } from "./crypt";
import { createBackup } from "./create";
import { resolveManifest, restoreBackup, verifyBackup } from "./restore";
import { openTarget } from "./target";

const PASSPHRASE_FLAG = { type: "string" as const, value: "FILE", description: "File holding the passphrase the backup is (to be) encrypted with" };

function passphraseOf(ctx: CommandContext): string | null {
  const f = ctx.flags["passphrase-file"];
  if (typeof f !== "string") return null;
  return passphraseFrom(readFileSync(path.resolve(ctx.cwd, f), "utf8"));
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export const backupCreateCommand: Command = {
  name: "backup create",
  side: "server",
  summary: "Back up the data dir to a directory or s3://bucket/prefix",
  usage: "--to DIR|s3://BUCKET/PREFIX [--passphrase-file FILE] [--data-dir DIR]",
  description:
    "Takes a consistent snapshot of ops.db and telemetry.db (VACUUM INTO), the git repositories (at a snapshot of their refs), the keys, the blobs and local buckets, and stores them content-addressed: a later backup to the same place stores only what is new. A manifest names every file with its SHA-256. Works while the server runs. S3 places use OPS_BACKUP_S3_ENDPOINT and its credentials.",
  flags: { to: { type: "string", value: "PLACE", description: "Directory or s3://bucket/prefix" }, "passphrase-file": PASSPHRASE_FLAG, "data-dir": SERVER_FLAGS["data-dir"] },
  async run(ctx) {
    const to = ctx.flags.to;
    if (typeof to !== "string" || to === "") {
      ctx.stderr("ops backup create: --to is required. Run 'ops backup create --help'.\n");
      return EXIT.usage;
    }
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    const target = openTarget(to, config.backup.s3, ctx.cwd);
    const m = await createBackup(config.dataDir, target, { passphrase: passphraseOf(ctx), version: VERSION });
    ctx.stdout(
      `backup ${m.id} at ${target.label}: ${m.stats.files} files, ${mib(m.stats.bytes)}; stored ${m.stats.new_objects} new objects, ${mib(m.stats.new_bytes)}, in ${(m.stats.ms / 1000).toFixed(1)} s\n` +
        `manifest: ${target.label.replace(/\/?$/, "/")}manifests/${m.id}.json\n`,
    );
    return EXIT.ok;
  },
};

export const backupVerifyCommand: Command = {
  name: "backup verify",
  side: "server",
  summary: "Restore a backup into a temporary dir and check it whole",
  usage: "FILE [--passphrase-file FILE]",
  description:
    "FILE is a manifest (…/manifests/<id>.json, a path or s3:// URL) or a backup place (its newest backup). Checks every file's SHA-256, PRAGMA integrity_check of each database, git fsck of each repository, and that the keys open every secret (OPS_SECRETS_KEY or OPS_SECRETS_KEY_FILE when the key is kept outside the data dir).",
  flags: { "passphrase-file": PASSPHRASE_FLAG },
  maxArgs: 1,
  async run(ctx) {
    const spec = ctx.args[0];
    if (!spec) {
      ctx.stderr("ops backup verify: name the backup (FILE). Run 'ops backup verify --help'.\n");
      return EXIT.usage;
    }
    const config = loadConfig(ctx.env, {}, ctx.cwd);
    const ref = await resolveManifest(spec, config.backup.s3, ctx.cwd);
    const r = await verifyBackup(ref, passphraseOf(ctx), config);
    ctx.stdout(`backup ${r.id} is good: ${r.files} files (${mib(r.bytes)}) match their SHA-256; ${r.databases.join(", ")} pass integrity_check; ${r.repos} repositories pass git fsck; ${r.secrets.opened} of ${r.secrets.values} secrets open\n`);
    return EXIT.ok;
  },
};

export const restoreCommand: Command = {
  name: "restore",
  side: "server",
  summary: "Restore a backup into a new, empty data dir",
  usage: "FILE --data-dir DIR [--passphrase-file FILE]",
  description: "FILE is a manifest or a backup place (its newest backup), as for 'ops backup verify'. DIR must be missing or empty: a restore never writes over a data dir. Start ops on DIR afterwards.",
  flags: { "data-dir": { type: "string", value: "DIR", description: "The new data dir (missing or empty)" }, "passphrase-file": PASSPHRASE_FLAG },
  maxArgs: 1,
  async run(ctx) {
    const spec = ctx.args[0];
    const dir = ctx.flags["data-dir"];
    if (!spec || typeof dir !== "string") {
      ctx.stderr("ops restore: name the backup (FILE) and --data-dir. Run 'ops restore --help'.\n");
      return EXIT.usage;
    }
    const config = loadConfig(ctx.env, {}, ctx.cwd);
    const dataDir = path.resolve(ctx.cwd, dir);
    const ref = await resolveManifest(spec, config.backup.s3, ctx.cwd);
    const r = await restoreBackup(ref, dataDir, passphraseOf(ctx));
    ctx.stdout(`restored backup ${r.manifest.id} (ops ${r.manifest.ops_version}) into ${dataDir}: ${r.files} files, ${mib(r.bytes)}${existsSync(path.join(dataDir, "keys", "secrets.key")) ? "" : "; the secrets key was not in the data dir: give the server OPS_SECRETS_KEY or OPS_SECRETS_KEY_FILE"}\n`);
    return EXIT.ok;
  },
};

export const BACKUP_COMMANDS: readonly Command[] = [backupCreateCommand, backupVerifyCommand, restoreCommand];
