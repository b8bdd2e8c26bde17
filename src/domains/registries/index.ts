/**
 * The registries domain: npm (`/npm/`), cargo (`/cargo/`) and OCI distribution (`/v2/`) on one
 * package model (shared/), with name claims and package reads under `/api/v1`.
 * Decisions: docs/decisions/0407-registries.md.
 */
import { mkdirSync } from "node:fs";
import { Elysia } from "elysia";
import type { DomainModule } from "../../core/core";
import { packageRoutes } from "./shared/routes";
import { npmRoutes } from "./npm/routes";
import { cargoRoutes } from "./cargo/routes";
import { ociRoutes } from "./oci/routes";
import { ensureIssuerKey } from "./oci/keys";
import { uploadsDir } from "./oci/uploads";
import { collectGarbage, GC_TASK } from "./shared/gc";
import { registryErrorStyles } from "./errors";

export const registriesModule: DomainModule = {
  name: "registries",
  install(core) {
    mkdirSync(uploadsDir(core), { recursive: true, mode: 0o700 });
    ensureIssuerKey(core);
    core.scheduler.defineTask(GC_TASK, "17 * * * *", async () => {
      await collectGarbage(core);
    });
  },
  routes(core) {
    return new Elysia({ name: "registries" }).use(packageRoutes(core)).use(npmRoutes(core)).use(cargoRoutes(core)).use(ociRoutes(core));
  },
  bodyLimits(core) {
    return [
      { prefix: "/npm/", bytes: core.config.maxPublishBytes },
      { prefix: "/cargo/", bytes: core.config.maxPublishBytes, raw: true },
      { prefix: "/v2/", bytes: core.config.maxBlobBytes, raw: true },
    ];
  },
  errorStyles: registryErrorStyles,
};
