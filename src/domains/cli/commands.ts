/**
 * `ops admin publish-cli`: publish a CLI binary offline, on the server's host, through the same
 * service as `POST /api/v1/cli/releases` (blob first, then the row and its audit row).
 */
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../../core/config";
import { EXIT, SERVER_FLAGS, adminDataDir, envOverrides, type Command } from "../../commands/types";
import { hostTarget, publishRelease, KNOWN_TARGETS } from "./service";

export const publishCliCommand: Command = {
  name: "admin publish-cli",
  side: "server",
  summary: "Publish an ops binary as the current CLI release for a target",
  usage: "--file PATH --version V [--target PLATFORM-ARCH] [--data-dir DIR]",
  description: `Stores the binary in the blob store and makes it the current release for its target (the release published last is current, whatever its version). Targets: ${KNOWN_TARGETS.join(", ")}; default: this host's. Works while the server runs. The server publishes its own binary for its own target at start-up when that target has none.`,
  flags: {
    file: { type: "string", value: "PATH", description: "The binary to publish, e.g. dist/ops" },
    version: { type: "string", value: "V", description: "The version number the binary reports, e.g. 0.1.0 (ops version prints \"ops 0.1.0\")" },
    target: { type: "string", value: "PLATFORM-ARCH", description: "Target, e.g. linux-x64 (default: this host)" },
    "data-dir": SERVER_FLAGS["data-dir"],
  },
  async run(ctx) {
    const file = ctx.flags.file;
    const version = ctx.flags.version;
    if (typeof file !== "string" || typeof version !== "string") {
      ctx.stderr("ops admin publish-cli: --file and --version are required. Run 'ops admin publish-cli --help'.\n");
      return EXIT.usage;
    }
    const full = path.resolve(ctx.cwd, file);
    if (!existsSync(full) || !statSync(full).isFile()) {
      ctx.stderr(`ops admin publish-cli: no file at ${full}.\n`);
      return EXIT.failure;
    }
    const target = typeof ctx.flags.target === "string" ? ctx.flags.target : hostTarget();
    const config = loadConfig(ctx.env, envOverrides(ctx.flags, SERVER_FLAGS), ctx.cwd);
    if (!adminDataDir(ctx, "admin publish-cli", config.dataDir)) return EXIT.failure;
    const { createCore, closeCore } = await import("../../app");
    const core = createCore(config);
    try {
      const r = await publishRelease(core, { version, target, body: Bun.file(full).stream() }, { actor: "ops-admin", operatorId: null, via: "system", ip: "", context: { op: "admin.publish-cli" } });
      ctx.stdout(`published ops ${r.version} for ${r.target}: ${r.size_bytes} bytes, sha256 ${r.digest}\n`);
      return EXIT.ok;
    } finally {
      await closeCore(core);
    }
  },
};
