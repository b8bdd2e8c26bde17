/**
 * The sources domain: repositories connected to projects on the Core's code host, the studio
 * (tree, file, saves as pull requests, merge), scans (Dockerfiles inline, `ops.toml` queued and
 * reconciled into resources) and the push event builds consume. The code host's own HTTP routes
 * (the built-in host's `/git/`) are mounted here, whatever host it is.
 * Decisions: docs/decisions/0411-sources-builtin-git-host.md and 0412-sources-github-app-host.md.
 */
import { Elysia } from "elysia";
import type { DomainModule } from "../../core/core";
import { codeHostFor } from "../../adapters/codehost";
import { recordPush } from "./connections";
import { tellScanDue } from "./push-notes";
import { sourcesRoutes } from "./routes";
import { hostWebhookRoutes } from "./webhook";
import { defineSourceJobs } from "./jobs";

const SAVES_PATH = /^\/api\/v1\/projects\/[^/]+\/sources\/[^/]+\/saves$/;
const SAVE_BODY_BYTES = 24 * 1024 * 1024;

export const sourcesModule: DomainModule = {
  name: "sources",
  install(core) {
    codeHostFor(core).onPush(async (push) => {
      await recordPush(core, push);
      await tellScanDue(core, push);
    });
    defineSourceJobs(core);
  },
  routes(core) {
    const host = codeHostFor(core);
    const app = new Elysia({ name: "sources" }).use(sourcesRoutes(core)).use(hostWebhookRoutes(core));
    return host.routes ? app.use(host.routes()) : app;
  },
  bodyLimits(core) {
    // A save carries up to 8 MiB of content, base64 or JSON-escaped: room for the encoding.
    return [{ prefix: "/api/v1/projects/", pattern: SAVES_PATH, bytes: SAVE_BODY_BYTES }, ...(codeHostFor(core).bodyLimits?.() ?? [])];
  },
  errorStyles(core) {
    return codeHostFor(core).errorStyles?.() ?? [];
  },
};
