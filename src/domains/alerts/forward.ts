/**
 * The existing notification kinds on outbound channels: a channel lists the kinds it takes
 * (`notice_kinds`), and every notice of such a kind in its project becomes a delivery, made in the
 * notice's own transaction (the forwarder the notifications domain calls).
 */
import { eq } from "drizzle-orm";
import type { Core } from "../../core/core";
import { iso } from "../../core/clock";
import { installNoticeForwarder } from "../notifications/service";
import { alertChannels } from "./tables";
import { enqueueDeliveries } from "./deliveries";

export function installForwarder(core: Core): void {
  installNoticeForwarder(core, (t, n) => {
    const channels = t
      .select({ id: alertChannels.id, kinds: alertChannels.noticeKinds })
      .from(alertChannels)
      .where(eq(alertChannels.projectId, n.projectId))
      .all()
      .filter((c) => (JSON.parse(c.kinds) as string[]).includes(n.kind))
      .map((c) => c.id);
    if (channels.length === 0) return;
    const slug = String(n.params.project);
    const text = Object.entries(n.params)
      .filter(([k]) => k !== "project")
      .map(([k, v]) => `${k}: ${String(v)}`)
      .join(", ");
    enqueueDeliveries(core, t, n.projectId, channels, null, {
      event: n.kind,
      project: slug,
      title: `${n.kind} in ${slug}`,
      text: text || n.kind,
      url: n.link ? `${core.config.publicUrl}${n.link}` : null,
      at: iso(core.clock.now()),
      params: n.params,
    });
  });
}
