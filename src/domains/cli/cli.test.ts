import { describe, test, expect, afterAll, beforeAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeOwner, makePerson, makeProject, makeMachine, mintToken } from "../../../test/fixtures";
import { sha256Hex } from "../../core/blobs/store";
import { publishRelease, publishOwnBinary, hostTarget } from "./service";
import { writeFileSync, rmSync } from "node:fs";
import path from "node:path";
import { SYSTEM_ACTOR } from "../../core/audit";
import { PACKAGE_VERSION } from "../../version";

let t: TestApp;
let ownerSession: string;
beforeAll(async () => {
  t = await createTestApp();
  ownerSession = (await makeOwner(t)).session;
});
afterAll(() => t.close());

const bytes = (text: string) => new TextEncoder().encode(text);

function publish(version: string, target: string, body: Uint8Array | string, token = ownerSession, extra = "") {
  return t.request("POST", `/api/v1/cli/releases?version=${encodeURIComponent(version)}&target=${target}${extra}`, {
    token,
    raw: (typeof body === "string" ? bytes(body) : body) as BodyInit,
    headers: { "content-type": "application/octet-stream" },
  });
}

describe("POST /api/v1/cli/releases", () => {
  test("201: stored as a blob, audited as estate.manage", async () => {
    const body = bytes("binary-one");
    const r = await expectStatus(await publish("1.0.0", "linux-arm64", body), 201);
    expect(r).toEqual({
      digest: sha256Hex(body),
      download: "/api/v1/cli/releases/1.0.0/linux-arm64/download",
      published_at: expect.any(String),
      size_bytes: body.byteLength,
      target: "linux-arm64",
      version: "1.0.0",
    });
    expect(await t.core.blobs.has(r.digest)).toBe(true);
    const audit = t.core.sqlite.query("SELECT action, target FROM audit_log WHERE target LIKE 'cli-release:%' ORDER BY id DESC").get() as { action: string; target: string };
    expect(audit).toEqual({ action: "estate.manage", target: "cli-release:1.0.0/linux-arm64" });
  });

  test("401 without a credential; 403 without estate.manage", async () => {
    await expectStatus(await t.request("POST", "/api/v1/cli/releases?version=1&target=linux-x64", { raw: bytes("x") }), 401);
    const p = makeProject(t);
    const m = await makePerson(t, [{ role: "maintainer", project: p.slug }]);
    await expectStatus(await publish("9.9.9", "linux-x64", "x", m.session), 403);
  });

  test("409 when the version is already published for that target", async () => {
    await expectStatus(await publish("2.0.0", "darwin-arm64", "a"), 201);
    await expectStatus(await publish("2.0.0", "darwin-arm64", "b"), 409);
  });

  test("422 for an unknown target, a bad version, an empty body or a digest that does not match", async () => {
    expect((await expectStatus(await publish("1.0.0", "plan9-mips", "x"), 422)).error).toBe("refused");
    await expectStatus(await publish("../evil", "linux-x64", "x"), 422);
    await expectStatus(await publish("3.0.0", "linux-x64", new Uint8Array(0)), 422);
    await expectStatus(await publish("3.0.1", "linux-x64", "x", ownerSession, `&digest=${"0".repeat(64)}`), 422);
    await expectStatus(await t.request("POST", "/api/v1/cli/releases?target=linux-x64", { token: ownerSession, raw: bytes("x") }), 422);
  });

  test("413 past OPS_MAX_RELEASE_BYTES, keeping nothing", async () => {
    const small = await createTestApp({ env: { OPS_MAX_RELEASE_BYTES: "2048" } });
    try {
      const owner = await makeOwner(small);
      const res = await small.request("POST", "/api/v1/cli/releases?version=1.0.0&target=linux-x64", { token: owner.session, raw: new Uint8Array(4096) });
      await expectStatus(res, 413);
      const rows = small.core.sqlite.query("SELECT count(*) AS n FROM cli_releases").get() as { n: number };
      expect(rows.n).toBe(0);
    } finally {
      await small.close();
    }
  });
});

describe("GET /api/v1/cli/release", () => {
  test("200: the current release is the one published last, not the highest version", async () => {
    await expectStatus(await publish("5.0.0", "linux-x64-musl", "five"), 201);
    t.clock.advance(1000);
    await expectStatus(await publish("4.0.0", "linux-x64-musl", "four"), 201);
    const p = makeProject(t);
    const viewer = await makePerson(t, [{ role: "viewer", project: p.slug }]);
    const r = await expectStatus(await t.request("GET", "/api/v1/cli/release?target=linux-x64-musl", { token: viewer.session }), 200);
    expect(r.version).toBe("4.0.0");
    expect(r.target).toBe("linux-x64-musl");
  });

  test("401 without a credential", async () => {
    await expectStatus(await t.request("GET", "/api/v1/cli/release?target=linux-x64"), 401);
  });

  test("403 for an operator with no role anywhere", async () => {
    const nobody = await makePerson(t, []);
    await expectStatus(await t.request("GET", "/api/v1/cli/release?target=linux-arm64", { token: nobody.session }), 403);
  });

  test("404 when nothing is published for a known target", async () => {
    await expectStatus(await t.request("GET", "/api/v1/cli/release?target=windows-x64", { token: ownerSession }), 404);
  });

  test("422 for a target ops does not publish (or none)", async () => {
    await expectStatus(await t.request("GET", "/api/v1/cli/release?target=amiga-m68k", { token: ownerSession }), 422);
    await expectStatus(await t.request("GET", "/api/v1/cli/release", { token: ownerSession }), 422);
  });
});

describe("GET /api/v1/cli/releases/{version}/{target}/download", () => {
  test("200: the bytes, with their digest", async () => {
    const body = bytes("download-me");
    await expectStatus(await publish("6.0.0", "darwin-x64", body), 201);
    const res = await t.request("GET", "/api/v1/cli/releases/6.0.0/darwin-x64/download", { token: ownerSession });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("x-ops-digest")).toBe(`sha256:${sha256Hex(body)}`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(body);
  });

  test("401 without a credential; 403 with no role anywhere", async () => {
    await expectStatus(await t.request("GET", "/api/v1/cli/releases/6.0.0/darwin-x64/download"), 401);
    const nobody = await makePerson(t, []);
    await expectStatus(await t.request("GET", "/api/v1/cli/releases/6.0.0/darwin-x64/download", { token: nobody.session }), 403);
  });

  test("404 for no such release; 422 for an unknown target", async () => {
    await expectStatus(await t.request("GET", "/api/v1/cli/releases/0.0.1/darwin-x64/download", { token: ownerSession }), 404);
    await expectStatus(await t.request("GET", "/api/v1/cli/releases/6.0.0/beos-ppc/download", { token: ownerSession }), 422);
  });
});

/** The newest install-code.create audit row: refusals are audited as denied (DESIGN.md §3). */
function lastInstallCodeAudit() {
  return t.core.sqlite.query("SELECT actor, outcome, project FROM audit_log WHERE action = 'install-code.create' ORDER BY id DESC").get() as { actor: string; outcome: string; project: string | null };
}

describe("POST /api/v1/cli/install-codes", () => {
  test("200: a single-use opsi_ code carrying the caller's role in the project; only its digest is stored", async () => {
    const p = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    const r = await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: dev.session, body: { project: p.slug } }), 200);
    expect(r.code.startsWith("opsi_")).toBe(true);
    expect(r.expires_in).toBe(600);
    expect(r.role).toBe("Developer");
    expect(r.token_project).toBe(p.slug);
    expect(r.install_command).toBe(`curl -sSL --fail-with-body -H 'Authorization: Bearer ${r.code}' '${t.url}/api/v1/cli/install.sh' | sh`);
    expect(JSON.stringify(t.core.sqlite.query("SELECT * FROM install_codes").all())).not.toContain(r.code);
    expect(JSON.stringify(t.core.sqlite.query("SELECT * FROM audit_log").all())).not.toContain(r.code);
  });

  test("an estate-wide member gets their estate role", async () => {
    const p = makeProject(t);
    const r = await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: ownerSession, body: { project: p.slug } }), 200);
    expect(r.role).toBe("Owner");
  });

  test("401 without a credential", async () => {
    await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { body: { project: "x" } }), 401);
  });

  test("403 for a machine, and for an operator with no role in the project", async () => {
    const p = makeProject(t);
    const m = await makeMachine(t, [{ role: "developer", project: p.slug }]);
    await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: m.token, body: { project: p.slug } }), 403);
    expect(lastInstallCodeAudit()).toMatchObject({ actor: "api-token", outcome: "denied", project: p.slug });
    const other = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: other.slug }]);
    await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: dev.session, body: { project: p.slug } }), 403);
    expect(lastInstallCodeAudit()).toMatchObject({ actor: dev.email, outcome: "denied", project: p.slug });
  });

  test("404 for no such project", async () => {
    await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: ownerSession, body: { project: "no-such-project" } }), 404);
  });

  test("422 when the caller's token carries less than their role (a token cannot carry more)", async () => {
    const p = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    const narrow = mintToken(t, dev.principal, { role: "viewer", project: p.slug });
    const body = await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: narrow, body: { project: p.slug } }), 422);
    expect(body.error).toBe("refused");
    expect(lastInstallCodeAudit()).toMatchObject({ actor: dev.email, outcome: "denied", project: p.slug });
  });
});

describe("GET /api/v1/cli/install.sh", () => {
  async function code(project: string, token = ownerSession): Promise<string> {
    return (await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token, body: { project } }), 200)).code;
  }

  test("503 while nothing is published; the code stays usable", async () => {
    const empty = await createTestApp();
    try {
      const owner = await makeOwner(empty);
      const p = makeProject(empty);
      const c = (await expectStatus(await empty.request("POST", "/api/v1/cli/install-codes", { token: owner.session, body: { project: p.slug } }), 200)).code;
      await expectStatus(await empty.request("GET", "/api/v1/cli/install.sh", { token: c }), 503);
      await publishRelease(empty.core, { version: "1.0.0", target: "linux-x64", body: "bin" }, SYSTEM_ACTOR);
      await expectStatus(await empty.request("GET", "/api/v1/cli/install.sh", { token: c }), 200);
    } finally {
      await empty.close();
    }
  });

  test("200: a POSIX sh installer with the server and a fresh cli token pinned to the project; audited", async () => {
    const p = makeProject(t);
    const dev = await makePerson(t, [{ role: "developer", project: p.slug }]);
    const c = await code(p.slug, dev.session);
    const res = await t.request("GET", "/api/v1/cli/install.sh", { token: c });
    expect(res.headers.get("content-type")).toStartWith("text/x-shellscript");
    const script = await expectStatus<string>(res, 200);
    expect(script.startsWith("#!/bin/sh")).toBe(true);
    expect(script).toContain(`OPS_SERVER='${t.url}'`);
    const token = /OPS_TOKEN='(opst_[0-9A-Za-z]+)'/.exec(script)?.[1];
    expect(token).toBeDefined();
    expect(script).toContain(`OPS_PROJECT='${p.slug}'`);
    const row = t.core.sqlite.query("SELECT kind, name, project_id, operator_id FROM tokens WHERE name = 'ops CLI (installer)' ORDER BY created_at DESC").get() as Record<string, string>;
    expect(row).toEqual({ kind: "cli", name: "ops CLI (installer)", project_id: p.id, operator_id: dev.operator.id });
    const audit = t.core.sqlite.query("SELECT actor, project FROM audit_log WHERE action = 'install-code.redeem' ORDER BY id DESC").get() as { actor: string; project: string };
    expect(audit).toEqual({ actor: dev.email, project: p.slug });
    expect(JSON.stringify(t.core.sqlite.query("SELECT * FROM audit_log").all())).not.toContain(token!);
    const proc = Bun.spawnSync(["sh", "-n"], { stdin: new TextEncoder().encode(script) });
    expect(proc.exitCode).toBe(0);
  });

  test("401 for no code, an unknown one, a used one and an expired one", async () => {
    const p = makeProject(t);
    await expectStatus(await t.request("GET", "/api/v1/cli/install.sh"), 401);
    await expectStatus(await t.request("GET", "/api/v1/cli/install.sh", { token: "opsi_" + "0".repeat(49) }), 401);
    const used = await code(p.slug);
    await expectStatus(await t.request("GET", "/api/v1/cli/install.sh", { token: used }), 200);
    await expectStatus(await t.request("GET", "/api/v1/cli/install.sh", { token: used }), 401);
    const old = await code(p.slug);
    t.clock.advance(601_000);
    await expectStatus(await t.request("GET", "/api/v1/cli/install.sh", { token: old }), 401);
  });
});

/** Run a line in sh as a person pasting it would, with only HOME and PATH. */
async function sh(line: string, home: string) {
  const p = Bun.spawn(["sh", "-c", line], { env: { HOME: home, PATH: process.env.PATH ?? "/usr/bin:/bin" }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

describe("the install command, pasted into sh", () => {
  test("a used or unknown code: the refusal is a script that prints why and exits 1, not JSON run as a command", async () => {
    const p = makeProject(t);
    const r = await expectStatus(await t.request("POST", "/api/v1/cli/install-codes", { token: ownerSession, body: { project: p.slug } }), 200);
    await expectStatus(await t.request("GET", "/api/v1/cli/install.sh", { token: r.code }), 200);
    const home = t.dataDir;
    const used = await sh(r.install_command, home);
    expect(used.code).toBe(1);
    expect(used.stderr).toContain("ops installer: error: Send a valid install code");
    expect(used.stderr).toContain("nothing was installed");
    expect(used.stderr).not.toContain("not found");
    const res = await t.request("GET", "/api/v1/cli/install.sh", { token: r.code });
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toStartWith("text/x-shellscript");
  });

  test("an API client asking for JSON still gets the error body", async () => {
    const res = await t.request("GET", "/api/v1/cli/install.sh", { headers: { accept: "application/json" } });
    expect((await expectStatus(res, 401)).error).toBe("unauthorized");
  });

  test("nothing published (a server run from source): the script says how to publish one and exits 1 (503); the same line works once one is", async () => {
    const empty = await createTestApp();
    try {
      const owner = await makeOwner(empty);
      const p = makeProject(empty);
      const r = await expectStatus(await empty.request("POST", "/api/v1/cli/install-codes", { token: owner.session, body: { project: p.slug } }), 200);
      const out = await sh(r.install_command, empty.dataDir);
      expect(out.code).toBe(1);
      expect(out.stderr).toContain("No ops CLI release is published yet");
      // The one who reads it may be the administrator: the whole command, and the console's way.
      expect(out.stderr).toContain(`./dist/ops admin publish-cli --file dist/ops --version ${PACKAGE_VERSION}`);
      expect(out.stderr).toContain("npm run build");
      expect(out.stderr).toContain("the console's CLI page");
      expect(out.stderr).toContain("run this line again");
      await publishRelease(empty.core, { version: "0.1.0", target: hostTarget(), body: "#!/bin/sh\necho ops 0.1.0\n" }, SYSTEM_ACTOR);
      const again = await sh(r.install_command, empty.dataDir);
      expect(again.stderr).not.toContain("error");
      expect(again.code).toBe(0);
      expect(again.stdout).toContain(`installed ops 0.1.0 (${hostTarget()})`);
    } finally {
      await empty.close();
    }
  });
});

describe("the server publishes its own binary", () => {
  test("at start-up when its target has no release; never over one that exists", async () => {
    const fresh = await createTestApp();
    try {
      const file = path.join(fresh.dataDir, "ops-binary");
      writeFileSync(file, "an ops executable");
      const r = await publishOwnBinary(fresh.core, file, "7.0.0");
      expect(r).toMatchObject({ version: "7.0.0", target: hostTarget(), size_bytes: 17 });
      const audit = fresh.core.sqlite.query("SELECT actor, action, context FROM audit_log WHERE target LIKE 'cli-release:%'").get() as { actor: string; action: string; context: string };
      expect(audit).toMatchObject({ actor: "system", action: "estate.manage" });
      expect(await publishOwnBinary(fresh.core, file, "7.0.1")).toBeNull();
      expect(fresh.core.sqlite.query("SELECT count(*) AS n FROM cli_releases").get()).toEqual({ n: 1 });
      rmSync(file);
    } finally {
      await fresh.close();
    }
  });

  test("a source checkout has no binary to publish", async () => {
    const fresh = await createTestApp();
    try {
      expect(await publishOwnBinary(fresh.core)).toBeNull();
    } finally {
      await fresh.close();
    }
  });
});
