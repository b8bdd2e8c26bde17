/**
 * The secrets domain module: secret-group values and renders, secrets per deploy unit, and the
 * store's seal/unseal routes. It extends the resources domain's `secret-group` type and gives it
 * the values it needs (job environments, connection strings), so it installs after resources.
 * Decisions: docs/decisions/0404-resources-and-secrets.md.
 */
import type { DomainModule } from "../../core/core";
import { installSecretValues } from "./bridge";
import { secretsRoutes } from "./routes";

export const secretsModule: DomainModule = {
  name: "secrets",
  install(core) {
    installSecretValues(core);
  },
  routes: secretsRoutes,
};
