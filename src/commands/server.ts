/** Server-side commands of the kernel: serve, migrate, version. */
import path from "node:path";
import { loadConfig, ConfigError } from "../core/config";
import { openDatabase, closeDatabase } from "../core/db/client";
import { runMigrations } from "../core/db/migrate";
import { mkdirSync } from "node:fs";
import { VERSION } from "../version";
import { backupBeforeMigrating } from "../domains/backups/service";
import { EXIT, SERVER_FLAGS, envOverrides, type Command } from "./types";

export const serveCommand: Command = {
  name: "serve",
  side: "server",
  summary: "Run the ops server (API, registries, console, scheduler)",
  usage: "[--data-dir DIR] [--listen HOST:PORT] [--public-url URL]",
  description:
    "Starts ops on one port with its state in the data directory. On an empty data directory it migrates the databases and creates the estate owner (OPS_BOOTSTRAP_EMAIL / OPS_BOOTSTRAP_PASSWORD, or a generated password printed once). SIGTERM or SIGINT drains in-flight requests and exits 0.",
  flags: SERVER_FLAGS,
  async run(ctx) {
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    const { startServer } = await import("../serve");
    await startServer(config, { installSignals: true });
    // Keep running until a signal ends the process.
    await new Promise(() => {});
    return EXIT.ok;
  },
};

export const migrateCommand: Command = {
  name: "migrate",
  side: "server",
  summary: "Apply pending database migrations and exit",
  usage: "[--data-dir DIR]",
  flags: { "data-dir": SERVER_FLAGS["data-dir"] },
  async run(ctx) {
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    mkdirSync(config.dataDir, { recursive: true });
    const pre = await backupBeforeMigrating(config.dataDir, VERSION);
    if (pre) ctx.stdout(`backed up the data dir before migrating: ${path.join(config.dataDir, "backups", `pre-${VERSION}`)} (${pre.stats.files} files)\n`);
    for (const [name, durability] of [["ops", "state"], ["telemetry", "telemetry"]] as const) {
      const { sqlite } = openDatabase(path.join(config.dataDir, `${name}.db`), durability);
      try {
        const done = runMigrations(sqlite, name, Date.now());
        ctx.stdout(done.length ? `${name}.db: applied ${done.join(", ")}\n` : `${name}.db: up to date\n`);
      } finally {
        closeDatabase(sqlite);
      }
    }
    return EXIT.ok;
  },
};

export const versionCommand: Command = {
  name: "version",
  side: "local",
  summary: "Print the version of this ops binary",
  async run(ctx) {
    ctx.stdout(`ops ${VERSION}\n`);
    return EXIT.ok;
  },
};

export { ConfigError };
