/**
 * A project's outbound channels. The URL is sealed in the secrets store at once and only its
 * scheme and host are ever shown; a webhook gets its own HMAC key, shown once at creation.
 */
import { randomBytes } from "node:crypto";
import { and, desc, eq } from "drizzle-orm";
import type { Core, ProjectRef } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { actorOf } from "../../core/authz/principal";
import { tx } from "../../core/db/client";
import { auditAllowed } from "../../core/audit";
import { iso } from "../../core/clock";
import { uuidv7 } from "../../core/ids";
import { OpsError } from "../../core/errors";
import { isNotificationKind, NOTIFICATION_KINDS } from "../notifications/service";
import { alertChannels } from "./tables";
import { assertReachable, parseChannelUrl, urlHint } from "./targets";
import type { AlertChannelResponse, CreateChannelBody } from "./model";

type ChannelRow = typeof alertChannels.$inferSelect;

export function channelView(r: ChannelRow): AlertChannelResponse {
  return { id: r.id, name: r.name, kind: r.kind, url_hint: r.urlHint, notice_kinds: JSON.parse(r.noticeKinds) as string[], signed: r.signingSealedId !== null, created_at: iso(r.createdAt) };
}

/** The channels of a project, by name. */
export function listChannels(core: Core, project: ProjectRef): AlertChannelResponse[] {
  return core.db.select().from(alertChannels).where(eq(alertChannels.projectId, project.id)).orderBy(alertChannels.name).all().map(channelView);
}

/** One channel of the project by id or name; 404 for another project's (it is not there). */
export function findChannel(core: Core, projectId: string, idOrName: string): ChannelRow {
  const rows = core.db.select().from(alertChannels).where(eq(alertChannels.projectId, projectId)).orderBy(desc(alertChannels.id)).all();
  const row = rows.find((r) => r.id === idOrName || r.name === idOrName);
  if (!row) throw new OpsError("not_found", "No such alert channel in this project.");
  return row;
}

/**
 * Make a channel: the URL's form and target are checked (422 for a private address the estate
 * does not allow), then the URL and, for a webhook, a fresh HMAC key are sealed.
 */
export async function createChannel(core: Core, auth: AuthContext, body: CreateChannelBody): Promise<AlertChannelResponse & { signing_secret: string | null }> {
  const project = auth.project!;
  const url = parseChannelUrl(body.url);
  await assertReachable(core, url);
  const kinds = [...new Set(body.notice_kinds ?? [])];
  for (const k of kinds) {
    if (!isNotificationKind(k)) throw new OpsError("validation_failed", `Unknown notification kind "${k}".`, { fields: [{ path: "notice_kinds", message: `one of ${NOTIFICATION_KINDS.map((n) => n.kind).join(", ")}` }] });
  }
  core.secrets.assertUnsealed();
  const secret = body.kind === "webhook" ? `whsec_${randomBytes(24).toString("base64url")}` : null;
  const now = core.clock.now();
  const id = uuidv7(now);
  const row = tx(core.db, (t) => {
    if (t.select({ id: alertChannels.id }).from(alertChannels).where(and(eq(alertChannels.projectId, project.id), eq(alertChannels.name, body.name))).get()) {
      throw new OpsError("already_exists", `A channel named "${body.name}" exists in this project.`);
    }
    const urlSealedId = core.secrets.put(t, `alert-channel-url:${id}`, url.toString());
    const signingSealedId = secret === null ? null : core.secrets.put(t, `alert-channel-signing:${id}`, secret);
    const values = { id, projectId: project.id, name: body.name, kind: body.kind, urlSealedId, urlHint: urlHint(url), signingSealedId, noticeKinds: JSON.stringify(kinds), createdAt: now };
    t.insert(alertChannels).values(values).run();
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "alerts.channel.create", `alert-channel:${body.name}`, { project: project.slug });
    return values;
  });
  return { ...channelView(row as ChannelRow), signing_secret: secret };
}

/** Delete a channel and its sealed values; rules that named it stop sending there. */
export function deleteChannel(core: Core, auth: AuthContext, idOrName: string): void {
  const project = auth.project!;
  const row = findChannel(core, project.id, idOrName);
  tx(core.db, (t) => {
    t.delete(alertChannels).where(eq(alertChannels.id, row.id)).run();
    core.secrets.delete(t, row.urlSealedId);
    if (row.signingSealedId) core.secrets.delete(t, row.signingSealedId);
    auditAllowed(core, t, actorOf(auth.principal, auth.meta), "alerts.channel.delete", `alert-channel:${row.name}`, { project: project.slug });
  });
}
