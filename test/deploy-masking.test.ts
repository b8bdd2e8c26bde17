/**
 * Secrets an app prints never reach Logs in clear (issue 32 item 8, DESIGN §6 "Secrets in
 * output"): a deployed service whose env group holds a secret (and a text variable) and which has
 * a unit secret prints both, plain, base64, hex, percent-encoded with every byte escaped and split
 * by an ANSI escape, from its replica, from a pre-deploy release step and from a job run on the same
 * env group. The log store (what `ops logs` and the Logs page read), `ops logs` itself, the
 * in-memory ring, the job run's own log and a failed rollout's note (which quotes a failing step's
 * last line) show each form masked and the text variable as it is.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { makePerson, makeProject, mintToken } from "./fixtures";
import { pushApp } from "./deploy-fixtures";
import { commitFiles } from "./sources-fixtures";
import { expectMasked, printCommand } from "./support/secret-printer";
import { serviceLogLines } from "../src/domains/deployments/service";
import { flushServiceLogs } from "../src/domains/deployments/logs";
import { existingWriter } from "../src/domains/observability/writer";
import { runCli } from "../src/main";

const API_KEY = "api-key-Zq7Wv3Xk9Lm2Np4R";
const UNIT_TOKEN = "unit-token-4c5d6e7f8a9b";
const REGION = "eu-west-1";
const NAMES = ["API_KEY", "UNIT_TOKEN", "REGION"];

let t: TestApp;
let slug: string;
let session: string;
let token: string;

const P = () => `/api/v1/projects/${slug}`;
const req = (method: string, p: string, body?: unknown) => t.request(method, `${P()}${p}`, { token: session, body });

const opsToml = (pre: string) => `[services.web]
start = "node wrap.js"
health = "/healthz"

[steps.leak]
service = "web"
command = '${printCommand("release", NAMES)}'

[steps.broken]
service = "web"
command = 'echo "$API_KEY" >&2; exit 4'

[hooks]
pre-deploy = ["${pre}"]
`;

/** Every message the log store holds for `service` whose text holds `q`. */
async function stored(service: string, q: string): Promise<string[]> {
  await flushServiceLogs(t.core);
  await existingWriter(t.core)?.flush();
  const rows = await expectStatus<Array<{ message: string }>>(await t.request("GET", `/api/v1/obs/logs?project=${slug}&service=${service}&environment=production&q=${encodeURIComponent(q)}&limit=500`, { token: session }), 200);
  return rows.map((r) => r.message);
}

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "10" } });
  slug = makeProject(t).slug;
  const owner = await makePerson(t, [{ role: "owner", project: slug }]);
  session = owner.session;
  token = mintToken(t, owner.principal, { role: "developer", project: slug });
  await expectStatus(await req("POST", "/sources", { repo: `${slug}/app` }), 201);
  await expectStatus(await req("POST", "/resources/secret-group", { name: "web-env", spec: { variables: [{ name: "API_KEY", kind: "secret" }, { name: "REGION", kind: "text" }] } }), 201);
  await expectStatus(await req("PUT", "/resources/secret-group/web-env/variables/API_KEY", { value: API_KEY, kind: "secret" }), 200);
  await expectStatus(await req("PUT", "/resources/secret-group/web-env/variables/REGION", { value: REGION, kind: "text" }), 200);
  await expectStatus(await req("POST", "/resources/service", { name: "web", spec: { source: { repo: `${slug}/app` }, health_check_path: "/healthz", env_group: "web-env" } }), 201);
  await expectStatus(await req("PUT", "/secrets/web/UNIT_TOKEN", { value: UNIT_TOKEN }), 204);
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe("a service that prints its secrets", () => {
  test("its replica's and its release step's output is masked in the log store and the ring", async () => {
    const commit = await commitFiles(t, `${slug}/app`, { "ops.toml": opsToml("leak") });
    const digest = await pushApp(t, slug, "web", { version: "v1", commit, start: `${printCommand("replica", NAMES)}; APP_VERSION=v1 HEALTH=ok exec node wrap.js` });
    await expectStatus(await req("POST", "/resources/service/web/deploy", { digest }), 201);
    await t.core.scheduler.runDue();
    const [row] = await expectStatus<any[]>(await req("GET", "/deployments"), 200);
    expect(row, JSON.stringify(row)).toMatchObject({ state: "healthy" });

    const ring = serviceLogLines(t.core, { project: slug, environment: "production", service: "web" }).map((l) => l.line);
    expectMasked(ring, "replica", { API_KEY, UNIT_TOKEN }, { REGION });
    expectMasked(ring, "release", { API_KEY, UNIT_TOKEN }, { REGION });
    expectMasked(await stored("web", "replica"), "replica", { API_KEY, UNIT_TOKEN }, { REGION });
    expectMasked(await stored("web", "release"), "release", { API_KEY, UNIT_TOKEN }, { REGION });
  }, 90_000);

  test("ops logs shows them masked", async () => {
    let out = "";
    const home = tempDir("ops-cli-home-");
    const code = await runCli(["logs", "web", "--project", slug, "--limit", "500"], { stdout: (s) => void (out += s), stderr: () => undefined, env: { HOME: home, OPS_SERVER: t.url, OPS_TOKEN: token }, cwd: home });
    expect(code).toBe(0);
    const lines = out.split("\n");
    expectMasked(lines, "replica", { API_KEY, UNIT_TOKEN }, { REGION });
    expectMasked(lines, "release", { API_KEY, UNIT_TOKEN }, { REGION });
  }, 60_000);

  test("a failing release step's last line is masked in the rollout's note", async () => {
    const commit = await commitFiles(t, `${slug}/app`, { "ops.toml": opsToml("broken") });
    const digest = await pushApp(t, slug, "web", { version: "v2", commit });
    await expectStatus(await req("POST", "/resources/service/web/deploy", { digest }), 201);
    await t.core.scheduler.runDue();
    const [row] = await expectStatus<any[]>(await req("GET", "/deployments"), 200);
    expect(row).toMatchObject({ state: "failed", failure_kind: "deploy" });
    expect(row.state_text).toBe("Failed: release step broken exited with code 4: ***");
  }, 90_000);

  test("a job run on the same env group: its log and the log store's copy are masked", async () => {
    await expectStatus(await req("PUT", "/resources/job/leaky", { spec: { command: printCommand("job", NAMES), env_group: "web-env" } }), 201);
    const run = await expectStatus<{ id: number }>(await req("POST", "/resources/job/leaky/run"), 202);
    await t.core.scheduler.runDue();
    const log = await expectStatus<{ lines: Array<{ line: string }> }>(await req("GET", `/resources/job/leaky/runs/${run.id}/log?limit=1000`), 200);
    const lines = log.lines.map((l) => l.line);
    expect(lines).toContain("job done");
    expectMasked(lines, "job", { API_KEY }, { REGION });
    expectMasked(await stored("leaky", "job"), "job", { API_KEY }, { REGION });
  }, 90_000);
});
