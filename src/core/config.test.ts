import { describe, test, expect } from "bun:test";
import path from "node:path";
import { readdirSync, readFileSync } from "node:fs";
import { loadConfig, ConfigError, CONFIG_VARIABLES } from "./config";

const CWD = "/srv/ops";

function bad(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env, {}, CWD);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe("loadConfig", () => {
  test("defaults on an empty environment", () => {
    const c = loadConfig({}, {}, CWD);
    expect(c.dataDir).toBe(path.join(CWD, "ops-data"));
    expect(c.listen).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(c.publicUrl).toBe("http://127.0.0.1:8080");
    expect(c.tokenTtlDays).toBe(90);
    expect(c.registry).toBeNull();
    expect(c.smtpUrl).toBeNull();
    expect(c.mailFrom).toBe("ops@localhost");
    expect(c.secretsKey).toBeNull();
    expect(c.secretsKeyFile).toBeNull();
    expect(c.dbPlaneUrl).toBeNull();
    expect(c.dbPlanePitr).toBe(false);
    expect(c.npmScope).toBe("@ops");
    expect(c.bootstrapEmail).toBeNull();
    expect(c.bootstrapPassword).toBeNull();
    expect(c.auditReads).toBe(false);
    expect(c.maxBodyBytes).toBe(1024 * 1024);
    expect(c.maxPublishBytes).toBe(64 * 1024 * 1024);
    expect(c.maxReleaseBytes).toBe(256 * 1024 * 1024);
    expect(c.shutdownGraceMs).toBe(10_000);
    expect(c.schedulerTickMs).toBe(1000);
    expect(c.logLevel).toBe("info");
    expect(c.hostApp).toEqual({
      id: null,
      slug: null,
      privateKeyFile: null,
      webhookSecret: null,
      apiUrl: "https://api.github.com",
      webUrl: "https://github.com",
    });
  });

  test("every variable is parsed", () => {
    const c = loadConfig(
      {
        OPS_DATA_DIR: "state",
        OPS_LISTEN: "0.0.0.0:9000",
        OPS_PUBLIC_URL: "https://ops.example.com/",
        OPS_TOKEN_TTL_DAYS: "0",
        OPS_REGISTRY: "registry.example.com:5000",
        OPS_SMTP_URL: "smtps://mail:pw@smtp.example.com:465",
        OPS_MAIL_FROM: "noreply@example.com",
        OPS_SECRETS_KEY: "a".repeat(64),
        OPS_SECRETS_KEY_FILE: "keys/master.key",
        OPS_DB_PLANE_URL: "postgres://ops@127.0.0.1:5432/ops",
        OPS_DB_PLANE_PITR: "yes",
        OPS_NPM_SCOPE: "@acme",
        OPS_BOOTSTRAP_EMAIL: "owner@example.com",
        OPS_BOOTSTRAP_PASSWORD: "a-long-enough-password",
        OPS_AUDIT_READS: "1",
        OPS_MAX_BODY_BYTES: "2048",
        OPS_MAX_PUBLISH_BYTES: "4096",
        OPS_MAX_RELEASE_BYTES: "8192",
        OPS_SHUTDOWN_GRACE_MS: "2500",
        OPS_SCHEDULER_TICK_MS: "50",
        OPS_LOG_LEVEL: "DEBUG",
        OPS_GITHUB_APP_ID: "12345",
        OPS_GITHUB_APP_SLUG: "ops-app",
        OPS_GITHUB_APP_PRIVATE_KEY_FILE: "/etc/ops/app.pem",
        OPS_GITHUB_WEBHOOK_SECRET: "hook-secret",
        OPS_GITHUB_API_URL: "https://ghe.example.com/api/v3/",
        OPS_GITHUB_URL: "https://ghe.example.com/",
      },
      {},
      CWD,
    );
    expect(c.dataDir).toBe(path.join(CWD, "state"));
    expect(c.listen).toEqual({ host: "0.0.0.0", port: 9000 });
    expect(c.publicUrl).toBe("https://ops.example.com");
    expect(c.tokenTtlDays).toBe(0);
    expect(c.registry).toBe("registry.example.com:5000");
    expect(c.smtpUrl).toBe("smtps://mail:pw@smtp.example.com:465");
    expect(c.mailFrom).toBe("noreply@example.com");
    expect(c.secretsKey).toBe("a".repeat(64));
    expect(c.secretsKeyFile).toBe(path.join(CWD, "keys/master.key"));
    expect(c.dbPlaneUrl).toBe("postgres://ops@127.0.0.1:5432/ops");
    expect(c.dbPlanePitr).toBe(true);
    expect(c.npmScope).toBe("@acme");
    expect(c.bootstrapEmail).toBe("owner@example.com");
    expect(c.bootstrapPassword).toBe("a-long-enough-password");
    expect(c.auditReads).toBe(true);
    expect(c.maxBodyBytes).toBe(2048);
    expect(c.maxPublishBytes).toBe(4096);
    expect(c.maxReleaseBytes).toBe(8192);
    expect(c.shutdownGraceMs).toBe(2500);
    expect(c.schedulerTickMs).toBe(50);
    expect(c.logLevel).toBe("debug");
    expect(c.hostApp).toEqual({
      id: "12345",
      slug: "ops-app",
      privateKeyFile: "/etc/ops/app.pem",
      webhookSecret: "hook-secret",
      apiUrl: "https://ghe.example.com/api/v3",
      webUrl: "https://ghe.example.com",
    });
  });

  test("the public URL defaults to the listen address, 0.0.0.0 shown as loopback, IPv6 bracketed", () => {
    expect(loadConfig({ OPS_LISTEN: "0.0.0.0:8081" }, {}, CWD).publicUrl).toBe("http://127.0.0.1:8081");
    const v6 = loadConfig({ OPS_LISTEN: "[::1]:8082" }, {}, CWD);
    expect(v6.listen).toEqual({ host: "::1", port: 8082 });
    expect(v6.publicUrl).toBe("http://[::1]:8082");
    expect(loadConfig({ OPS_LISTEN: ":9001" }, {}, CWD).listen).toEqual({ host: "127.0.0.1", port: 9001 });
  });

  test("flags (overrides) win over the environment; blank values count as unset", () => {
    const c = loadConfig({ OPS_DATA_DIR: "/from/env", OPS_LISTEN: "127.0.0.1:1" }, { OPS_DATA_DIR: "/from/flag", OPS_LISTEN: undefined }, CWD);
    expect(c.dataDir).toBe("/from/flag");
    expect(c.listen.port).toBe(1);
    expect(loadConfig({ OPS_TOKEN_TTL_DAYS: "  " }, {}, CWD).tokenTtlDays).toBe(90);
  });

  test.each([
    ["OPS_LISTEN", "nonsense host"],
    ["OPS_LISTEN", "127.0.0.1:70000"],
    ["OPS_PUBLIC_URL", "not a url"],
    ["OPS_PUBLIC_URL", "ftp://ops.example.com"],
    ["OPS_TOKEN_TTL_DAYS", "ninety"],
    ["OPS_TOKEN_TTL_DAYS", "-1"],
    ["OPS_REGISTRY", "https://registry.example.com"],
    ["OPS_SMTP_URL", "http://mail.example.com"],
    ["OPS_DB_PLANE_URL", "mysql://db"],
    ["OPS_DB_PLANE_PITR", "maybe"],
    ["OPS_NPM_SCOPE", "acme"],
    ["OPS_BOOTSTRAP_EMAIL", "not-an-email"],
    ["OPS_BOOTSTRAP_PASSWORD", "short"],
    ["OPS_AUDIT_READS", "2"],
    ["OPS_MAX_BODY_BYTES", "12"],
    ["OPS_MAX_PUBLISH_BYTES", "1.5"],
    ["OPS_MAX_RELEASE_BYTES", "lots"],
    ["OPS_SHUTDOWN_GRACE_MS", "999999999"],
    ["OPS_SCHEDULER_TICK_MS", "1"],
    ["OPS_LOG_LEVEL", "verbose"],
    ["OPS_GITHUB_API_URL", "api.github.com"],
    ["OPS_GITHUB_URL", "git://github.com"],
  ])("a bad %s (%p) throws a ConfigError naming it", (name, value) => {
    const e = bad({ [name]: value });
    expect(e.variable).toBe(name);
    expect(e.message.startsWith(`${name}:`)).toBe(true);
  });

  test("a password in a bad URL is not echoed in the error", () => {
    const e = bad({ OPS_SMTP_URL: "smtp//user:hunter2@host" });
    expect(e.message).not.toContain("hunter2");
    const e2 = bad({ OPS_DB_PLANE_URL: "mysql://root:hunter2@db/x" });
    expect(e2.message).not.toContain("hunter2");
  });

  test("the result is deeply frozen", () => {
    const c = loadConfig({}, {}, CWD);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.listen)).toBe(true);
    expect(Object.isFrozen(c.hostApp)).toBe(true);
    expect(() => {
      (c as { tokenTtlDays: number }).tokenTtlDays = 1;
    }).toThrow();
    expect(() => {
      (c.listen as { port: number }).port = 1;
    }).toThrow();
  });

  test("CONFIG_VARIABLES names every variable loadConfig reads, once", () => {
    const names = CONFIG_VARIABLES.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    // config.ts and the parts it keeps apart (config-engine.ts, config-images.ts …).
    const parts = readdirSync(import.meta.dir).filter((f) => /^config(-[a-z]+)?\.ts$/.test(f) && f !== "config-values.ts");
    const source = parts.map((f) => readFileSync(path.join(import.meta.dir, f), "utf8")).join("\n");
    const read = new Set([...source.matchAll(/"(OPS_[A-Z0-9_]+)"/g)].map((m) => m[1]));
    for (const name of read) expect(names).toContain(name);
    for (const name of names) expect(read.has(name)).toBe(true);
  });
});

describe("the ingress's limits and trusted proxies", () => {
  test("defaults, settings, and refusals", () => {
    const d = loadConfig({}, {}, CWD);
    expect(d.ingressLimits).toEqual({ headerTimeoutSecs: 10, idleTimeoutSecs: 75, bodyTimeoutSecs: 60, sendTimeoutSecs: 60, maxConnPerIp: 256, maxConnections: 10_000 });
    expect(d.trustedProxies).toEqual([]);
    const c = loadConfig({ OPS_INGRESS_HEADER_TIMEOUT: "5", OPS_INGRESS_SEND_TIMEOUT: "1", OPS_INGRESS_MAX_CONN_PER_IP: "16", OPS_TRUSTED_PROXIES: "10.0.0.0/8, 192.168.1.7,fd00::/8" }, {}, CWD);
    expect([c.ingressLimits.headerTimeoutSecs, c.ingressLimits.sendTimeoutSecs, c.ingressLimits.maxConnPerIp, c.trustedProxies]).toEqual([5, 1, 16, ["10.0.0.0/8", "192.168.1.7", "fd00::/8"]]);
    for (const v of ["10.0.0.0/33", "example.com", "10.0.0.0/8/1", "::1/129"]) expect(bad({ OPS_TRUSTED_PROXIES: v }).message).toContain("OPS_TRUSTED_PROXIES");
    expect(bad({ OPS_INGRESS_HEADER_TIMEOUT: "0" }).message).toContain("OPS_INGRESS_HEADER_TIMEOUT");
  });
});
