/** `GET /api/v1/backups`: the estate's backup status (estate.manage). */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin } from "../../core/authz/plugin";
import { errors, ErrorBody } from "../../core/http-schemas";
import { BackupStatusResponse } from "./model";
import { watchBackups } from "./jobs";

export function backupsRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1/backups", tags: ["backups"] })
    .use(authzPlugin(core))
    .model({ BackupStatusResponse, ErrorBody })
    .get("", () => watchBackups(core), {
      permission: "estate.manage",
      detail: { summary: "The scheduled backups: where, when, the newest good backup, whether they are failing" },
      response: { 200: t.Ref("BackupStatusResponse"), ...errors(401, 403) },
    });
}
