import { describe, test, expect } from "bun:test";
import { mkdtempSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pollForToken } from "./login";
import { CliError } from "./http";
import { configPath, readConfigFile, resolveClient, writeConfigFile, normaliseServer } from "./config";
import { EXIT } from "../commands/types";

function fakePoll(answers: Array<Record<string, unknown> | Error>) {
  const sleeps: number[] = [];
  let clock = 0;
  let i = 0;
  return {
    sleeps,
    deps: {
      sleep: async (ms: number) => {
        sleeps.push(ms);
        clock += ms;
      },
      now: () => clock,
      poll: async () => {
        const a = answers[i++];
        if (a instanceof Error) throw a;
        return a;
      },
    },
  };
}

const TOKEN = { access_token: "opst_x", operator: "a@b", role: "Developer", scope: "project.read", token_type: "Bearer" };

describe("ops login's poll loop", () => {
  test("waits the interval, keeps polling while pending, and adds 5 s for good on slow_down", async () => {
    const f = fakePoll([{ error: "authorization_pending" }, { error: "slow_down" }, { error: "authorization_pending" }, TOKEN]);
    const tok = await pollForToken(5, 900, f.deps);
    expect(tok.access_token).toBe("opst_x");
    expect(f.sleeps).toEqual([5000, 5000, 10000, 10000]);
  });

  test("a denial exits 5; an expired code exits 3; other errors exit 1", async () => {
    const denied = fakePoll([{ error: "access_denied" }]);
    await expect(pollForToken(5, 900, denied.deps)).rejects.toMatchObject({ exit: EXIT.denied });
    const expired = fakePoll([{ error: "expired_token" }]);
    await expect(pollForToken(5, 900, expired.deps)).rejects.toMatchObject({ exit: EXIT.auth });
    const odd = fakePoll([{ error: "invalid_grant", error_description: "nope" }]);
    await expect(pollForToken(5, 900, odd.deps)).rejects.toMatchObject({ exit: EXIT.failure });
  });

  test("stops at the code's expiry", async () => {
    const f = fakePoll(Array.from({ length: 10 }, () => ({ error: "authorization_pending" })));
    await expect(pollForToken(5, 12, f.deps)).rejects.toMatchObject({ exit: EXIT.auth });
    expect(f.sleeps.length).toBeLessThanOrEqual(3);
  });

  test("backs off on connection trouble, then carries on", async () => {
    const down = new CliError("cannot reach", EXIT.unreachable);
    const f = fakePoll([down, down, TOKEN]);
    await pollForToken(5, 900, f.deps);
    expect(f.sleeps).toEqual([5000, 2000, 5000, 4000, 5000]);
  });
});

describe("client configuration", () => {
  test("written 0600 in a 0700 folder, atomically; the environment overrides it", () => {
    const home = mkdtempSync(path.join(tmpdir(), "ops-cli-home-"));
    try {
      const env = { HOME: home };
      const file = writeConfigFile(env, { server: "https://ops.example.com", token: "opst_a" });
      expect(file).toBe(path.join(home, ".config", "ops", "config.json"));
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
      expect(resolveClient(env)).toEqual({ server: "https://ops.example.com", token: "opst_a", tokenSource: "config" });
      expect(resolveClient({ ...env, OPS_SERVER: "http://other:1/", OPS_TOKEN: "opst_b" })).toEqual({ server: "http://other:1", token: "opst_b", tokenSource: "OPS_TOKEN" });
      expect(configPath({ HOME: home, XDG_CONFIG_HOME: "/x" })).toBe("/x/ops/config.json");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("a broken config file is an error that says which file", () => {
    const home = mkdtempSync(path.join(tmpdir(), "ops-cli-home-"));
    try {
      mkdirSync(path.join(home, ".config", "ops"), { recursive: true });
      writeFileSync(path.join(home, ".config", "ops", "config.json"), "{nope");
      expect(() => readConfigFile({ HOME: home })).toThrow("config.json is not valid JSON");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("server URLs are normalised; a bare host means https", () => {
    expect(normaliseServer("ops.example.com")).toBe("https://ops.example.com");
    expect(normaliseServer("http://127.0.0.1:8080/")).toBe("http://127.0.0.1:8080");
    expect(() => normaliseServer("http://")).toThrow();
  });
});
