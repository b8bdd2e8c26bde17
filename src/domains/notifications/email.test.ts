/**
 * The email channel against a real SMTP server (smtp-server) started by the test, through the
 * real client (nodemailer), with authentication, a refusal, and the scheduler's retry.
 */
import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { SMTPServer } from "smtp-server";
import { eq } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makePerson, makeProject } from "../../../test/fixtures";
import { tx } from "../../core/db/client";
import { notify } from "./service";
import { mailOutbox } from "./tables";

interface Received {
  from: string;
  to: string[];
  data: string;
}

const received: Received[] = [];
let refuseNext = 0;
let server: SMTPServer;
let port = 0;
let t: TestApp;

beforeAll(async () => {
  server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    onAuth(auth, _session, cb) {
      if (auth.username === "mailer" && auth.password === "smtp-pass-for-tests") return cb(null, { user: "mailer" });
      cb(new Error("bad credentials"));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        if (refuseNext > 0) {
          refuseNext--;
          const err = new Error("mailbox busy, try later") as Error & { responseCode: number };
          err.responseCode = 451;
          return cb(err);
        }
        received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "", to: session.envelope.rcptTo.map((r) => r.address), data: Buffer.concat(chunks).toString("utf8") });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  port = (server.server.address() as { port: number }).port;
  t = await createTestApp({ env: { OPS_SMTP_URL: `smtp://mailer:smtp-pass-for-tests@127.0.0.1:${port}`, OPS_MAIL_FROM: "ops@ops.test" } });
});

afterAll(async () => {
  await t.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe("email channel", () => {
  test("email on: an outbox row per person, delivered over SMTP by the scheduler; email off (default): none", async () => {
    const a = makeProject(t);
    const wants = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    const quiet = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/notification-settings`, { token: wants.session, body: { settings: [{ kind: "deployment.refused", in_app: false, email: true }] } }), 204);
    tx(t.core.db, (q) => notify(t.core, q, { kind: "deployment.refused", projectId: a.id, params: { project: a.slug, service: "web", reason: "unsigned image" }, link: `/projects/${a.slug}/deployments` }));
    const rows = t.core.db.select().from(mailOutbox).where(eq(mailOutbox.project, a.slug)).all();
    expect(rows).toHaveLength(1);
    expect(rows[0].operatorId).toBe(wants.operator.id);
    await t.core.scheduler.runDue();
    expect(received).toHaveLength(1);
    expect(received[0].to).toEqual([wants.email]);
    expect(received[0].from).toBe("ops@ops.test");
    expect(received[0].data).toContain(`Subject: [ops] ${a.slug}: A deployment was refused`);
    expect(received[0].data).toContain(`${t.url}/projects/${a.slug}/deployments`);
    expect(received[0].data).not.toContain(quiet.email);
    expect(t.core.db.select().from(mailOutbox).where(eq(mailOutbox.id, rows[0].id)).get()?.state).toBe("sent");
    // in_app was off for that person: no notice, only the email
    expect(await expectStatus(await t.request("GET", "/api/v1/notifications", { token: wants.session }), 200)).toHaveLength(0);
    expect(await expectStatus(await t.request("GET", "/api/v1/notifications", { token: quiet.session }), 200)).toHaveLength(1);
  });

  test("a refused send is retried with backoff and then delivered", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "developer", project: a.slug }]);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session, body: { settings: [{ kind: "probe.down", in_app: true, email: true }] } }), 204);
    const before = received.length;
    refuseNext = 2;
    tx(t.core.db, (q) => notify(t.core, q, { kind: "probe.down", projectId: a.id, params: { project: a.slug, service: "api" } }));
    await t.core.scheduler.runDue();
    expect(received.length).toBe(before);
    const row = t.core.db.select().from(mailOutbox).where(eq(mailOutbox.project, a.slug)).get()!;
    expect(row).toMatchObject({ state: "pending", attempts: 1 });
    expect(row.lastError).toContain("451");
    await t.core.scheduler.runDue(); // not due yet: backoff
    expect(t.core.db.select().from(mailOutbox).where(eq(mailOutbox.id, row.id)).get()?.attempts).toBe(1);
    t.clock.advance(30_000);
    await t.core.scheduler.runDue();
    expect(t.core.db.select().from(mailOutbox).where(eq(mailOutbox.id, row.id)).get()?.attempts).toBe(2);
    t.clock.advance(60_000);
    await t.core.scheduler.runDue();
    expect(received.length).toBe(before + 1);
    expect(t.core.db.select().from(mailOutbox).where(eq(mailOutbox.id, row.id)).get()).toMatchObject({ state: "sent", attempts: 3, lastError: null });
  });

  test("a suspended recipient's mail is dropped, not sent", async () => {
    const a = makeProject(t);
    const p = await makePerson(t, [{ role: "viewer", project: a.slug }]);
    await expectStatus(await t.request("PUT", `/api/v1/projects/${a.slug}/notification-settings`, { token: p.session, body: { settings: [{ kind: "quota.high", in_app: true, email: true }] } }), 204);
    tx(t.core.db, (q) => notify(t.core, q, { kind: "quota.high", projectId: a.id, params: { project: a.slug, quota: "storage", percent: 91 } }));
    t.core.sqlite.query("UPDATE operators SET suspended_at = 1 WHERE id = ?").run(p.operator.id);
    const before = received.length;
    await t.core.scheduler.runDue();
    expect(received.length).toBe(before);
    expect(t.core.db.select().from(mailOutbox).where(eq(mailOutbox.project, a.slug)).get()?.state).toBe("dropped");
  });
});
