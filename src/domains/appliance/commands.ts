/** `ops self-update`: replace this compiled binary with the signed release at OPS_UPDATE_URL, then restart a running server. */
import { existsSync } from "node:fs";
import { loadConfig } from "../../core/config";
import { EXIT, SERVER_FLAGS, envOverrides, type Command } from "../../commands/types";
import { readPidFile, restartServer } from "../../commands/restart";
import { compiledSelf } from "../../reexec";
import { VERSION } from "../../version";
import { hostTarget } from "../cli/service";
import { pinnedReleaseKeys, selfUpdate } from "./self-update";

export const selfUpdateCommand: Command = {
  name: "self-update",
  side: "server",
  summary: "Update this ops binary from OPS_UPDATE_URL (signature and SHA-256 checked), then restart the server",
  usage: "[--allow-downgrade] [--no-restart] [--data-dir DIR]",
  description:
    "Reads the release manifest at OPS_UPDATE_URL, checks its entry for this platform against the release key compiled into this binary and the binary against the signed SHA-256, and renames it over this one. A running ops serve of the data dir then re-executes it (as 'ops restart'). Refuses a release older than this one unless --allow-downgrade.",
  flags: {
    "allow-downgrade": { type: "boolean", description: "Accept a release older than this binary" },
    "no-restart": { type: "boolean", description: "Replace the binary only" },
    "data-dir": SERVER_FLAGS["data-dir"],
    listen: SERVER_FLAGS.listen,
  },
  async run(ctx) {
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    if (config.updateUrl === null) {
      ctx.stderr("ops self-update: OPS_UPDATE_URL is not set.\n");
      return EXIT.usage;
    }
    const binary = compiledSelf();
    if (binary === null) {
      ctx.stderr("ops self-update: this ops runs from a checkout; update the checkout instead.\n");
      return EXIT.failure;
    }
    const r = await selfUpdate({ manifestUrl: config.updateUrl, keys: pinnedReleaseKeys(), currentVersion: VERSION, target: hostTarget(), binaryPath: binary, allowDowngrade: ctx.flags["allow-downgrade"] === true });
    if (!r.updated) {
      ctx.stdout(`${r.reason}\n`);
      return EXIT.ok;
    }
    ctx.stdout(`updated ${binary}: ops ${r.from} → ${r.version} (sha256 ${r.sha256}, signature checked)\n`);
    if (ctx.flags["no-restart"] !== true && existsSync(config.dataDir) && readPidFile(config.dataDir)) {
      const host = config.listen.host === "0.0.0.0" ? "127.0.0.1" : config.listen.host;
      const rr = await restartServer(config.dataDir, `http://${host}:${config.listen.port}/readyz`);
      ctx.stdout(`ops serve (pid ${rr.pid}) restarted on ops ${r.version} in ${rr.ms} ms\n`);
    }
    return EXIT.ok;
  },
};
