/**
 * `POST /api/v1/host/webhook` with the GitHub App host: deliveries signed as GitHub signs them
 * (X-Hub-Signature-256 over the raw body), a push reaching the host's push subscribers once per
 * delivery id, refusals for bad signatures and payloads, and the route's answers when the App is
 * not configured or the host is the built-in one. The sources domain mounts the route; here
 * `hostWebhookModule` mounts it the same way (`hostWebhookRoutes`, the host's raw body limit).
 */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { createHmac } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { FakeGithub, hostWebhookModule } from "./fake-github";
import { FixedClock } from "../src/core/clock";
import { auditLog } from "../src/core/tables";
import { DOMAINS } from "../src/domains";
import { codeHostFor } from "../src/adapters/codehost";
import type { HostPush } from "../src/adapters/codehost/types";
import { githubWebhookDeliveries } from "../src/adapters/codehost/github/tables";

// Real git processes and servers on a shared machine: bun's preload timeout only reaches the first file.
setDefaultTimeout(120_000);

const PATH = "/api/v1/host/webhook";

const webhookModule = hostWebhookModule;

describe("the GitHub App webhook", () => {
  let clock: FixedClock;
  let gh: FakeGithub;
  let t: TestApp;
  const pushes: HostPush[] = [];
  let before: string;
  let after: string;
  let url: string;

  beforeAll(async () => {
    clock = new FixedClock();
    gh = FakeGithub.start({ now: () => clock.now() });
    t = await createTestApp({ clock, env: gh.env(), modules: [...DOMAINS, webhookModule] });
    codeHostFor(t.core).onPush((p) => {
      pushes.push(p);
    });
    gh.install("acme");
    const repo = gh.createRepo("acme/shop");
    before = gh.repos.commit(repo, { "a.txt": "1\n" });
    after = gh.repos.commit(repo, { "a.txt": "2\n" });
    url = t.url + PATH;
  });
  afterAll(async () => {
    await t.close();
    gh.stop();
  });

  test("a signed push reaches the push subscribers as the host login's push, audited as host-app", async () => {
    const id = crypto.randomUUID();
    const res = await gh.deliver(url, "push", gh.pushPayload("acme/shop", "refs/heads/main", before, after, "octo-dev"), { id });
    expect(await expectStatus(res, 200)).toEqual({ delivery: id, event: "push", duplicate: false, handled: true });
    expect(pushes.at(-1)).toEqual({ repo: "acme/shop", installationId: gh.repo("acme/shop").installationId, ref: "refs/heads/main", before, after, pusher: "octo-dev", at: clock.now() });
    const rows = t.core.db.select().from(auditLog).where(and(eq(auditLog.action, "host.webhook"), eq(auditLog.target, "repo:acme/shop"))).all();
    expect(rows.length).toBe(1);
    expect(rows[0]).toMatchObject({ actor: "host-app", via: "system", outcome: "allowed" });
    expect(JSON.parse(rows[0]!.context!)).toMatchObject({ delivery: id, event: "push", ref: "refs/heads/main", after });
  });

  test("a redelivered id is acknowledged without a second push", async () => {
    const id = crypto.randomUUID();
    const payload = gh.pushPayload("acme/shop", "refs/heads/main", before, after);
    await expectStatus(await gh.deliver(url, "push", payload, { id }), 200);
    const count = pushes.length;
    clock.advance(60_000);
    expect(await expectStatus(await gh.deliver(url, "push", payload, { id }), 200)).toEqual({ delivery: id, event: "push", duplicate: true, handled: false });
    expect(pushes.length).toBe(count);
    expect(t.core.db.select().from(auditLog).where(eq(auditLog.action, "host.webhook")).all().filter((r) => JSON.parse(r.context!).delivery === id).length).toBe(1);
  });

  test("a bad, missing or foreign signature is 401 and records nothing", async () => {
    const id = crypto.randomUUID();
    const payload = gh.pushPayload("acme/shop", "refs/heads/main", before, after);
    const count = pushes.length;
    await expectStatus(await gh.deliver(url, "push", payload, { id, secret: "not-the-secret" }), 401);
    await expectStatus(await gh.deliver(url, "push", payload, { id, signature: "" }), 401);
    await expectStatus(await gh.deliver(url, "push", payload, { id, signature: `sha1=${"0".repeat(40)}` }), 401);
    await expectStatus(await gh.deliver(url, "push", payload, { id, signature: `sha256=${"0".repeat(64)}` }), 401);
    // A body changed after signing.
    const body = JSON.stringify(payload);
    const sig = `sha256=${createHmac("sha256", gh.webhookSecret).update(body).digest("hex")}`;
    const tampered = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": id, "x-hub-signature-256": sig }, body: body.replace("refs/heads/main", "refs/heads/evil") });
    await expectStatus(tampered, 401);
    expect(pushes.length).toBe(count);
    expect(t.core.db.select().from(githubWebhookDeliveries).where(eq(githubWebhookDeliveries.id, id)).get()).toBeUndefined();
    // The genuine delivery with that id still counts.
    await expectStatus(await gh.deliver(url, "push", payload, { id }), 200);
    expect(pushes.length).toBe(count + 1);
  });

  test("ping is acknowledged; other events are acknowledged and left alone", async () => {
    expect(await expectStatus(await gh.deliver(url, "ping", { zen: "Keep it logically awesome.", hook_id: 1 }), 200)).toMatchObject({ event: "ping", duplicate: false, handled: false });
    expect(await expectStatus(await gh.deliver(url, "issues", { action: "opened" }), 200)).toMatchObject({ event: "issues", handled: false });
  });

  test("an installation event drops the cached installations at once", async () => {
    const host = codeHostFor(t.core);
    const beta = gh.install("beta");
    expect(await host.installationFor("beta", "p")).toBe(beta.id);
    gh.uninstall(beta.id);
    expect(await host.installationFor("beta", "p")).toBe(beta.id); // still cached
    const res = await gh.deliver(url, "installation", { action: "deleted", installation: { id: beta.id, account: { login: "beta" } }, sender: { login: "octo" } });
    expect(await expectStatus(res, 200)).toMatchObject({ event: "installation", handled: true });
    expect(await host.installationFor("beta", "p")).toBeNull();
  });

  test("a form-encoded delivery (payload=…) is read like JSON", async () => {
    const id = crypto.randomUUID();
    const body = new URLSearchParams({ payload: JSON.stringify(gh.pushPayload("acme/shop", "refs/tags/v1", "0".repeat(40), after)) }).toString();
    const sig = `sha256=${createHmac("sha256", gh.webhookSecret).update(body).digest("hex")}`;
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "x-github-event": "push", "x-github-delivery": id, "x-hub-signature-256": sig }, body });
    expect(await expectStatus(res, 200)).toMatchObject({ handled: true });
    expect(pushes.at(-1)).toMatchObject({ ref: "refs/tags/v1", before: "0".repeat(40), after });
  });

  test("a signed delivery that is not JSON, or a push missing its fields, or without a delivery id is 400", async () => {
    const send = (body: string, headers: Record<string, string>) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${createHmac("sha256", gh.webhookSecret).update(body).digest("hex")}`, ...headers }, body });
    await expectStatus(await send("{not json", { "x-github-event": "push", "x-github-delivery": crypto.randomUUID() }), 400);
    await expectStatus(await send(JSON.stringify({ ref: "refs/heads/main" }), { "x-github-event": "push", "x-github-delivery": crypto.randomUUID() }), 400);
    await expectStatus(await send(JSON.stringify({ zen: "x" }), { "x-github-event": "ping" }), 400);
    await expectStatus(await send(JSON.stringify({ zen: "x" }), { "x-github-delivery": crypto.randomUUID() }), 400);
  });

  test("a body over GitHub's 25 MB is 413", async () => {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": `sha256=${"0".repeat(64)}` }, body: new Uint8Array(26 * 1024 * 1024) });
    await expectStatus(res, 413);
  });

  test("delivery ids are kept for the retention, then pruned as new deliveries arrive", async () => {
    const old = crypto.randomUUID();
    await expectStatus(await gh.deliver(url, "ping", { zen: "x" }, { id: old }), 200);
    clock.advance(15 * 24 * 3_600_000);
    await expectStatus(await gh.deliver(url, "ping", { zen: "y" }), 200);
    expect(t.core.db.select().from(githubWebhookDeliveries).where(eq(githubWebhookDeliveries.id, old)).get()).toBeUndefined();
  });

  test("the route is public, in OpenAPI, with its answers", async () => {
    const doc = await expectStatus<any>(await fetch(`${t.url}/api/docs/json`), 200);
    const op = doc.paths[PATH].post;
    expect(Object.keys(op.responses).sort()).toEqual(["200", "400", "401", "404", "413", "503"]);
    expect(op["x-public"]).toBe(true);
  });
});

describe("the webhook route on other hosts", () => {
  test("503 when the GitHub App is chosen but not configured", async () => {
    const t = await createTestApp({ env: { OPS_CODE_HOST: "github" }, modules: [...DOMAINS, webhookModule] });
    try {
      const res = await t.request("POST", PATH, { body: { zen: "x" }, headers: { "x-github-event": "ping", "x-github-delivery": "1", "x-hub-signature-256": `sha256=${"0".repeat(64)}` } });
      expect((await expectStatus(res, 503)).error).toBe("unavailable");
    } finally {
      await t.close();
    }
  });

  test("404 on the built-in git host, which takes no webhooks", async () => {
    const t = await createTestApp({ env: { OPS_CODE_HOST: "builtin" }, modules: [...DOMAINS, webhookModule] });
    try {
      const res = await t.request("POST", PATH, { body: { zen: "x" }, headers: { "x-github-event": "ping", "x-github-delivery": "1" } });
      expect((await expectStatus(res, 404)).error).toBe("not_found");
    } finally {
      await t.close();
    }
  });
});
