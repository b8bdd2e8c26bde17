/**
 * The CLI domain module: releases of the ops binary, install codes, the installer. Release
 * uploads may be as large as OPS_MAX_RELEASE_BYTES.
 * Decisions: docs/decisions/0403-device-login-cli-status.md.
 */
import type { DomainModule } from "../../core/core";
import { lt } from "drizzle-orm";
import { cliRoutes } from "./routes";
import { installCodes } from "./tables";
import { publishOwnBinary } from "./self-publish";

const DAY = 86_400_000;

export const cliModule: DomainModule = {
  name: "cli",
  install(core) {
    // Install codes are dead after 600 s; keep them a day for the audit trail's sake, then drop them.
    core.scheduler.defineTask("cli.sweep-install-codes", "17 * * * *", () => {
      core.db.delete(installCodes).where(lt(installCodes.expiresAt, core.clock.now() - DAY)).run();
    });
  },
  async onServe(core) {
    try {
      await publishOwnBinary(core);
    } catch (e) {
      // The server runs without it; the install line answers 503 until a release is published.
      core.log.warn("could not publish this ops binary as the CLI release", { err: e });
    }
  },
  routes: cliRoutes,
  bodyLimits: (core) => [{ prefix: "/api/v1/cli/releases", bytes: core.config.maxReleaseBytes }],
};
