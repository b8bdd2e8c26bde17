/**
 * Email delivery: one scheduler item per outbox row (`notifications.deliver-email`), enqueued in
 * the event's transaction. A failed send is retried with exponential backoff (30 s, 1 min, 2 min …
 * capped at 1 h, 8 attempts); the outbox row keeps the attempt count and last error, then ends
 * `sent`, `failed`, or `dropped` (recipient gone, suspended, or email switched off since).
 */
import { eq } from "drizzle-orm";
import { coreLocal, type Core } from "../../core/core";
import { smtpMailer, type Mailer } from "../../adapters/mail/smtp";
import { findOperator } from "../access/service";
import { mailOutbox } from "./tables";
import { labelOf } from "./kinds";
import { DELIVER_EMAIL } from "./notices";

export const MAIL_ATTEMPTS = 8;
export const mailBackoffMs = (attempt: number) => Math.min(30_000 * 2 ** (attempt - 1), 3_600_000);

function mailer(core: Core): Mailer | null {
  if (core.config.smtpUrl === null) return null;
  const smtpUrl = core.config.smtpUrl;
  return coreLocal<Mailer>(core, "notifications.mailer", () => {
    const m = smtpMailer(smtpUrl, core.config.mailFrom);
    core.onClose.push(() => m.close());
    return m;
  });
}

/** The text of a notice email: what happened, the params, the console link. No personal data. */
export function renderMail(core: Core, row: typeof mailOutbox.$inferSelect): { subject: string; text: string } {
  const label = labelOf(row.kind);
  const params = JSON.parse(row.params) as Record<string, unknown>;
  const lines = Object.entries(params).map(([k, v]) => `  ${k}: ${String(v)}`);
  const link = row.link ? `\n${core.config.publicUrl}${row.link}\n` : "";
  if (row.project === "") {
    return {
      subject: `[ops] estate: ${label}`,
      text: `${label} (${row.kind}).\n\n${lines.join("\n")}\n${link}\nEstate notices go to everyone who manages the estate.\n`,
    };
  }
  return {
    subject: `[ops] ${row.project}: ${label}`,
    text: `${label} (${row.kind}) in project ${row.project}.\n\n${lines.join("\n")}\n${link}\nChange which notices reach you by email in the project's notification settings.\n`,
  };
}

async function deliver(core: Core, payload: unknown, attempt: number): Promise<void> {
  const id = (payload as { outbox?: string })?.outbox;
  if (!id) return;
  const row = core.db.select().from(mailOutbox).where(eq(mailOutbox.id, id)).get();
  if (!row || row.state !== "pending") return;
  const to = findOperator(core.db, row.operatorId);
  const m = mailer(core);
  if (!to || !to.email || to.suspendedAt !== null || !m) {
    core.db.update(mailOutbox).set({ state: "dropped", attempts: attempt }).where(eq(mailOutbox.id, id)).run();
    return;
  }
  const { subject, text } = renderMail(core, row);
  try {
    await m.send({ to: to.email, subject, text });
  } catch (e) {
    const message = ((e as Error)?.message ?? String(e)).slice(0, 300);
    core.db
      .update(mailOutbox)
      .set({ attempts: attempt, lastError: message, state: attempt >= MAIL_ATTEMPTS ? "failed" : "pending" })
      .where(eq(mailOutbox.id, id))
      .run();
    throw new Error(`mail delivery failed: ${message}`);
  }
  core.db.update(mailOutbox).set({ state: "sent", attempts: attempt, sentAt: core.clock.now(), lastError: null }).where(eq(mailOutbox.id, id)).run();
}

export function defineNotificationJobs(core: Core): void {
  core.scheduler.defineItem(DELIVER_EMAIL, (payload, item) => deliver(core, payload, item.attempt), { maxAttempts: MAIL_ATTEMPTS, backoffMs: mailBackoffMs });
}
