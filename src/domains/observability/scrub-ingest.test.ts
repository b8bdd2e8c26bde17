/**
 * Every string field ops stores from telemetry passes the shared secret rule set, checked in the
 * bytes of telemetry.db and its WAL: the shapes the audit found in stored logs (an AWS access key
 * id, `aws_secret_access_key=…`, a bare JWT, a database URL's password, `db_password_prod=…`, a
 * GitHub token) in log bodies, and secrets in the fields that were stored verbatim (severity text,
 * a log's and a span's HTTP status, metric name, unit and label keys), plus resource attributes.
 * Logs and spans go through the real exporters; the metrics request is built by hand, because the
 * SDK refuses such metric names and a hostile sender does not use the SDK.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeProject, makeMachine } from "../../../test/fixtures";
import { makeLogs, exportLogs, makeSpans, exportSpans, SeverityNumber } from "../../../test/obs-clients";
import { fakeChars } from "../../../test/fake-tokens";
import { existingWriter } from "./writer";

let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await createTestApp();
  t.clock.set(Date.now());
  makeProject(t, "shop");
  token = (await makeMachine(t, [{ role: "developer", project: "shop" }])).token;
});
afterAll(() => t.close());

const fake = fakeChars(11);
const b64url = (s: string) => Buffer.from(s).toString("base64url");
const secrets = {
  awsKeyId: `AKIA${fake(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")}`,
  awsSecret: fake(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
  jwt: `${b64url('{"alg":"HS256"}')}.${b64url('{"sub":"42","role":"admin"}')}.${fake(43)}`,
  dbUrlPassword: `Pg${fake(18)}`,
  dbPasswordProd: `prod-${fake(16)}`,
  github: `ghp_${fake(36)}`,
  severity: `sev${fake(12)}`,
  logStatus: `ls${fake(14)}`,
  spanStatus: `ss${fake(14)}`,
  metricName: `ghp_${fake(36)}`,
  unit: `un${fake(14)}`,
  labelKey: `lk${fake(14)}`,
  labelValue: `glpat-${fake(20)}`,
  host: `xoxb-${fake(10, "0123456789")}-${fake(24)}`,
};

const get = async <T = any>(p: string) => expectStatus<T>(await t.request("GET", p, { token }), 200);

describe("every stored string field is scrubbed", () => {
  test("logs, spans and metrics: no secret reaches telemetry.db or its WAL", async () => {
    const body = [
      `key id ${secrets.awsKeyId}`,
      `aws_secret_access_key=${secrets.awsSecret}`,
      secrets.jwt,
      `connecting to postgres://app:${secrets.dbUrlPassword}@db.internal:5432/app`,
      `db_password_prod=${secrets.dbPasswordProd}`,
      `pushed with ${secrets.github}`,
    ].join("; ");
    const logs = makeLogs({ "service.name": "leaky", "host.name": secrets.host }, [
      { body, severityNumber: SeverityNumber.INFO, severityText: `token=${secrets.severity}`, attributes: { "http.response.status_code": `password=${secrets.logStatus}` } },
    ]);
    for (const encoding of ["proto", "json"] as const) expect((await exportLogs(t.url, logs, { encoding, token })).ok).toBe(true);
    const { spans } = makeSpans({ "service.name": "leaky" }, [{ name: "GET /reset", attributes: { "http.response.status_code": `secret=${secrets.spanStatus}` } }]);
    expect((await exportSpans(t.url, spans, { encoding: "proto", token })).ok).toBe(true);
    const metrics = {
      resourceMetrics: [
        {
          resource: { attributes: [{ key: "service.name", value: { stringValue: "leaky" } }] },
          scopeMetrics: [
            {
              metrics: [
                {
                  name: secrets.metricName,
                  unit: `api_key=${secrets.unit}`,
                  gauge: { dataPoints: [{ asDouble: 1, timeUnixNano: `${Date.now()}000000`, attributes: [{ key: `db_password=${secrets.labelKey}`, value: { stringValue: secrets.labelValue } }] }] },
                },
              ],
            },
          ],
        },
      ],
    };
    const res = await t.request("POST", "/otlp/v1/metrics", { token, raw: JSON.stringify(metrics), headers: { "content-type": "application/json" } });
    expect(await expectStatus(res, 200)).toEqual({});

    const [entry] = await get("/api/v1/obs/logs?service=leaky&limit=1");
    expect(entry.message).toBe("key id [redacted]; aws_secret_access_key=[redacted]; [redacted]; connecting to postgres://app:[redacted]@db.internal:5432/app; db_password_prod=[redacted]; pushed with [redacted]");
    expect(entry.level).toBe("token=[redacted]");
    expect(entry.status).toBe("password=[redacted]");
    expect(entry.host).toBe("[redacted]");
    const [root] = await get("/api/v1/obs/traces?service=leaky");
    expect(root.http_status).toBe("secret=[redacted]");
    const names = await get<Array<{ name: string }>>("/api/v1/obs/metrics/names");
    expect(names.map((n) => n.name)).toContain("[redacted]");

    await existingWriter(t.core)?.flush();
    const files = readdirSync(t.dataDir).filter((f) => f.startsWith("telemetry.db"));
    expect(files).toContain("telemetry.db-wal");
    for (const f of files) {
      const bytes = readFileSync(path.join(t.dataDir, f)).toString("latin1");
      for (const [what, value] of Object.entries(secrets)) expect(bytes.includes(value), `${what} in ${f}`).toBe(false);
    }
  });
});
