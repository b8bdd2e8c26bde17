/**
 * `ops deploy`, `ops rollback` and `ops logs` through the command table (what the binary runs),
 * against a server whose scheduler runs: a deploy followed to `healthy` (exit 0), a rollback, a
 * deploy whose health check fails followed to `rolled_back` (exit 1), usage errors (exit 2), the
 * server's refusals (exit 1), and the service's own output read back with `ops logs`. The tail's
 * paging (oldest first, nothing printed twice) is checked on its own.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken } from "./fixtures";
import { defaultHostOf, listenIngress, pushApp, viaIngress } from "./deploy-fixtures";
import { WallClock } from "./chromium";
import { runCli } from "../src/main";
import { tailLogs } from "../src/cli/delivery";

setDefaultTimeout(120_000);

let t: TestApp;
let slug: string;
let token: string;
let home: string;
const digests: Record<string, string> = {};

async function ops(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runCli(argv, { stdout: (s) => void (out += s), stderr: (s) => void (err += s), env: { HOME: home, OPS_SERVER: t.url, OPS_TOKEN: token }, cwd: home });
  return { code, out, err };
}

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock(), env: { OPS_SCHEDULER_TICK_MS: "100", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "4" } });
  home = tempDir("ops-cli-home-");
  slug = makeProject(t, "tea-house").slug;
  const dev = await makePerson(t, [{ role: "developer", project: slug }]);
  token = mintToken(t, dev.principal, { role: "developer", project: slug });
  for (const v of ["v1", "v2"]) digests[v] = await pushApp(t, slug, "web", { version: v });
  digests.v3 = await pushApp(t, slug, "web", { version: "v3", health: "fail" });
  await expectStatus(await t.request("POST", `/api/v1/projects/${slug}/resources/service`, { token: dev.session, body: { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz" } } }), 201);
  t.core.scheduler.start();
});

afterAll(async () => {
  await t?.core.scheduler.stop(5000);
  await t?.close();
});

describe("ops deploy and ops rollback", () => {
  test("a deploy is followed to healthy, a line per state; the project comes from the token's pin", async () => {
    const r = await ops("deploy", "web", "--digest", digests.v1);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\d+ healthy\n$/);
    expect(r.err).toContain(`web in production of ${slug} to ${digests.v1}`);
    expect(r.err).toMatch(/ {2}healthy: /);
    const v2 = await ops("deploy", "web", "--digest", digests.v2, "--project", slug, "--environment", "production");
    expect(v2.code).toBe(0);
  });

  test("rollback goes back to the newest healthy image that is not current", async () => {
    const r = await ops("rollback", "web");
    expect(r.code).toBe(0);
    expect(r.err).toContain(digests.v1);
    const svc = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/resources/service/web`, { token }), 200);
    expect(svc.status.detail.digest).toBe(digests.v1);
  });

  test("a rollout whose health check fails ends rolled_back: exit 1, and the old version keeps running", async () => {
    const r = await ops("deploy", "web", "--digest", digests.v3);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^\d+ rolled_back\n$/);
    expect(r.err).toContain("rolled_back");
    // Each probe result is streamed while the rollout waits, not only the verdict (issue 27).
    expect(r.err).toMatch(/^  probing: Deploying: \S+: \/healthz answered HTTP 500 \(\d+ s left\)$/m);
    const svc = await expectStatus(await t.request("GET", `/api/v1/projects/${slug}/resources/service/web`, { token }), 200);
    expect(svc.status.detail.digest).toBe(digests.v1);
    const probes = await ops("logs", "web", "--grep", "probe of");
    expect(probes.out).toMatch(/\] deployment \d+ probe of \S+: \/healthz answered HTTP 500$/m);
    // The rollback writes an error line to the service's log (issue 27), naming the deployment.
    const id = r.out.split(" ")[0];
    let errors = await ops("logs", "web", "--level", "error");
    for (let i = 0; i < 50 && !errors.out.includes(`deployment ${id} rolled back`); i++) {
      await Bun.sleep(100);
      errors = await ops("logs", "web", "--level", "error");
    }
    expect(errors.out).toMatch(new RegExp(`^\\S+Z ERROR web\\[production\\] deployment ${id} rolled back: the new replicas were not healthy: .*HTTP 500`, "m"));
  });

  test("--no-wait prints the deployment's id; usage errors exit 2; the server's refusals exit 1 with its message", async () => {
    expect((await ops("deploy", "web")).code).toBe(2);
    expect((await ops("deploy", "web", "--digest", digests.v1, "--build", "3")).code).toBe(2);
    expect((await ops("deploy", "web", "--build", "seven")).code).toBe(2);
    expect((await ops("deploy", "--digest", digests.v1)).code).toBe(2);
    const missing = await ops("deploy", "api", "--digest", digests.v1);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("api");
    const unsigned = await ops("deploy", "web", "--digest", `sha256:${"0".repeat(64)}`);
    expect(unsigned.code).toBe(1);
    const quick = await ops("deploy", "web", "--digest", digests.v2, "--no-wait");
    expect(quick.code).toBe(0);
    expect(quick.out).toMatch(/^\d+\n$/);
  });
});

describe("ops logs", () => {
  test("the service's output, oldest first; --grep filters; --json is an array; bad flags exit 2", async () => {
    // Service output reaches the log store in batches.
    let r = await ops("logs", "web");
    for (let i = 0; i < 50 && !r.out.includes("listening on"); i++) {
      await Bun.sleep(100);
      r = await ops("logs", "web");
    }
    expect(r.code).toBe(0);
    const lines = r.out.trim().split("\n");
    // Each line names the replica that wrote it.
    expect(lines.some((l) => /^\S+Z (INFO|WARN) +web\[production \S+\] listening on \d+$/.test(l))).toBe(true);
    const stamps = lines.map((l) => l.split(" ")[0]);
    expect([...stamps].sort()).toEqual(stamps);
    const grep = await ops("logs", "web", "--grep", "LISTENING");
    expect(grep.out.trim().split("\n").every((l) => l.includes("listening"))).toBe(true);
    const json = JSON.parse((await ops("logs", "web", "--json", "--limit", "5")).out);
    expect(Array.isArray(json) && json.length > 0 && json.length <= 5).toBe(true);
    expect((await ops("logs", "--limit", "0")).code).toBe(2);
    expect((await ops("logs", "--follow", "--json")).code).toBe(2);
    const none = await ops("logs", "nothing-here");
    expect([none.code, none.out]).toEqual([1, ""]);
    expect(none.err).toBe(`ops logs: no service "nothing-here" in ${slug}. Its services: web.\n`);
    const elsewhere = await ops("logs", "web", "--project", "no-such-project");
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.err).toContain('no project "no-such-project"');
  });

  test("a line a visitor made the app log cannot drive the reader's terminal: control characters come out escaped", async () => {
    const ingress = listenIngress(t);
    // OSC 52 (write the clipboard), a title change, a carriage return that would hide the start of the line, a bidi override.
    const hostile = "\u001b]52;c;ZXZpbA==\u0007\u001b]0;owned\u0007ok\rspoof \u202emoc.live\u009b";
    expect((await viaIngress(ingress, defaultHostOf(slug, "web"), `/say?text=${encodeURIComponent(hostile)}`)).status).toBe(200);
    let r = await ops("logs", "web", "--grep", "visitor said");
    for (let i = 0; i < 50 && !r.out.includes("visitor said"); i++) {
      await Bun.sleep(100);
      r = await ops("logs", "web", "--grep", "visitor said");
    }
    expect(r.out).toContain("visitor said \\u001b]52;c;ZXZpbA==\\u0007\\u001b]0;owned\\u0007ok\\u000dspoof \\u202emoc.live\\u009b");
    expect(r.out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
    // --json keeps the text itself (JSON escapes it), parseable.
    const json = JSON.parse((await ops("logs", "web", "--grep", "visitor said", "--json")).out) as Array<{ message: string }>;
    expect(json.some((e) => e.message === `visitor said ${hostile}`)).toBe(true);
  });

  test("--follow prints new lines as they come, each once, oldest first", async () => {
    const line = (ts: string, message: string) => ({ timestamp: ts, level: "info", service: "web", environment: "production", project: "p", host: "h", target: "stdout", message });
    const pages = [
      [line("2026-01-01T00:00:02.000Z", "b"), line("2026-01-01T00:00:01.000Z", "a")],
      [line("2026-01-01T00:00:02.000Z", "c"), line("2026-01-01T00:00:02.000Z", "b")],
      [line("2026-01-01T00:00:03.000Z", "d"), line("2026-01-01T00:00:02.000Z", "c"), line("2026-01-01T00:00:02.000Z", "b")],
    ];
    const froms: Array<string | undefined> = [];
    const printed: string[] = [];
    let polls = 0;
    await tailLogs(
      async (from) => {
        froms.push(from);
        return pages[Math.min(polls++, pages.length - 1)];
      },
      (l) => printed.push(l.trim().split(" ").at(-1)!),
      { since: "15m", follow: true, intervalMs: 1 },
      { sleep: async () => undefined, stopped: () => polls >= 3 },
    );
    expect(printed).toEqual(["a", "b", "c", "d"]);
    expect(froms).toEqual(["15m", "2026-01-01T00:00:02.000Z", "2026-01-01T00:00:02.000Z"]);
  });
});
