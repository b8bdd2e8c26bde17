/**
 * The observability domain: OTLP/HTTP ingest of logs, traces and metrics into telemetry.db (written
 * by its own thread), log search, traces, metric series with rollups, retention and the size
 * budget, and `appendPlatformLogs` for the lines ops itself writes for a project (service.ts).
 * Decisions: docs/decisions/0415-observability.md, 0651-otel-wired-into-replicas.md (a replica's own
 * ingest credential).
 */
import { Elysia } from "elysia";
import type { DomainModule } from "../../core/core";
import { defineObservabilityJobs } from "./jobs";
import { otlpRoutes, readRoutes } from "./routes";
import { otlpErrorStyle, readsErrorStyle } from "./otlp";
import { existingWriter } from "./writer";

export const observabilityModule: DomainModule = {
  name: "observability",
  install(core) {
    defineObservabilityJobs(core);
    core.onClose.push(async () => {
      await existingWriter(core)?.close();
    });
  },
  routes(core) {
    return new Elysia({ name: "observability" }).use(readRoutes(core)).use(otlpRoutes(core));
  },
  bodyLimits(core) {
    return [{ prefix: "/otlp/", bytes: core.config.otlpMaxDecodedBytes, raw: true }];
  },
  errorStyles() {
    return [otlpErrorStyle, readsErrorStyle];
  },
};
