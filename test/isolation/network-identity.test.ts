/**
 * The hostile project, network and identity (DESIGN §6 "Network" and "Identity"; issue 19
 * findings 3 and 4): ops runs as root, as CI and a VM install run it, with two projects. From
 * inside alpha's build and alpha's replica: the internet (the public npm registry) and ops's own
 * public port answer; a listener the test opens on the host's 127.0.0.1, beta's replica port,
 * cloud metadata and the host's own address do not. Each project's sandboxes run as its own host
 * uid, and its dependency cache is its own, mode 0700. Reachability is only ever tried against
 * 127.0.0.1 and link-local addresses inside the sandboxes' own namespaces.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, lstatSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Socket, TCPSocketListener } from "bun";
import { createTestApp, expectStatus, tempDir, type TestApp } from "../harness";
import { makePerson, makeProject, mintToken } from "../fixtures";
import { defaultHostOf, listenIngress, pushApp, viaIngress } from "../deploy-fixtures";
import { buildWorld, drain, getBuild, logText, manualBuild, type BuildWorld } from "../builds-fixtures";
import { openCache, projectCache } from "../../src/adapters/builder/cache";
import { networkTools } from "../../src/adapters/sandbox";
import { pushTree } from "./files-support";

let t: TestApp;
let w: BuildWorld;
let ingress: string;
let hostService: TCPSocketListener<undefined>;
let opsPort: number;
const projects: Record<"alpha" | "beta", { slug: string; token: string }> = {} as never;
let buildId: number;

const req = (who: "alpha" | "beta", method: string, p: string, body?: unknown) => t.request(method, `/api/v1/projects/${projects[who].slug}${p}`, { token: projects[who].token, body });

/** What a connection from inside `who`'s replica to host:port did. */
async function fromReplica(who: "alpha" | "beta", host: string, port: number): Promise<{ ok: boolean; code: string | null }> {
  const res = await viaIngress(ingress, defaultHostOf(projects[who].slug, "web"), `/connect?host=${encodeURIComponent(host)}&port=${port}`);
  expect(res.status).toBe(200);
  return (await res.json()) as { ok: boolean; code: string | null };
}

async function replicaOf(who: "alpha" | "beta"): Promise<{ port: number }> {
  const s = await expectStatus<any>(await req(who, "GET", "/resources/service/web"), 200);
  return s.status.detail.replicas[0];
}

/** A probe run by a build step: one line `name ok` or `name <code>` per target. */
function probeJs(targets: Record<string, [string, number]>): string {
  return `const net = require("net");
const targets = ${JSON.stringify(targets)};
(async () => {
  for (const [name, [host, port]] of Object.entries(targets)) {
    const r = await new Promise((done) => {
      const s = net.connect({ host, port, timeout: 3000 });
      s.on("connect", () => { s.destroy(); done("ok"); });
      s.on("timeout", () => { s.destroy(); done("ETIMEDOUT"); });
      s.on("error", (e) => done(e.code));
    });
    console.log("probe " + name + " " + r);
  }
})();
`;
}

beforeAll(async () => {
  const dataDir = tempDir("ops-iso-net-");
  chmodSync(dataDir, 0o755);
  t = await createTestApp({ dataDir, env: { OPS_BUILD_MEMORY_MB: "512", OPS_BUILD_STEP_TIMEOUT_SECS: "120", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "30", OPS_SHUTDOWN_GRACE_MS: "2000" } });
  opsPort = Number(new URL(t.core.config.publicUrl).port);
  hostService = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open(s: Socket<undefined>) { s.end("host service\n"); }, data() {} } });
  ingress = listenIngress(t);
  for (const who of ["alpha", "beta"] as const) {
    const slug = makeProject(t).slug;
    const owner = await makePerson(t, [{ role: "maintainer", project: slug }]);
    projects[who] = { slug, token: mintToken(t, owner.principal, { role: "maintainer", project: slug }) };
    const digest = await pushApp(t, slug, "web", { version: `v-${who}` });
    await expectStatus(await req(who, "POST", "/resources/service", { name: "web", spec: { image: `${slug}/web`, health_check_path: "/healthz" } }), 201);
    await expectStatus(await req(who, "POST", "/resources/service/web/deploy", { digest }), 201);
  }
  await drain(t);
  const beta = await replicaOf("beta");
  w = await buildWorld(t, { envGroup: true });
  // A package in alpha's own npm registry, published with the npm CLI; the build reads it with a
  // token from its env group, written into the repository's .npmrc by reference.
  const publisher = mintToken(t, w.ctx.owner.principal, { role: "maintainer", project: w.ctx.slug });
  await expectStatus(await w.ctx.req("PUT", `/packages/npm/${encodeURIComponent("@ops/probe-lib")}`), 201);
  const lib = tempDir("ops-iso-npm-lib-");
  const npmrc = (token: string) => `registry=${t.url}/npm/\n//${new URL(t.url).host}/npm/:_authToken=${token}\nupdate-notifier=false\nfund=false\naudit=false\n`;
  writeFileSync(path.join(lib, "package.json"), JSON.stringify({ name: "@ops/probe-lib", version: "1.0.0", main: "index.js", license: "MIT" }));
  writeFileSync(path.join(lib, "index.js"), "exports.hello = 'from ops registry';\n");
  writeFileSync(path.join(lib, ".npmrc"), npmrc(publisher));
  // Spawned, not spawnSync: the server answering npm runs in this process.
  const pub = Bun.spawn(["npm", "publish", "--userconfig", path.join(lib, ".npmrc")], { cwd: lib, env: { ...process.env, HOME: tempDir("ops-iso-npm-home-") }, stdout: "pipe", stderr: "pipe" });
  const [code, err] = await Promise.all([pub.exited, new Response(pub.stderr).text()]);
  expect(code, err).toBe(0);
  await expectStatus(await w.ctx.req("PUT", "/resources/secret-group/web-env/variables/DEPLOY_TOKEN?environment=production", { value: publisher, kind: "secret" }), 200);
  // TOML basic strings: the inner quotes escaped for TOML.
  const install = [
    `npm install --no-audit --no-fund --no-save is-number@7.0.0 && node -e \\"require('is-number'); console.log('public registry ok')\\"`,
    `npm install --no-audit --no-fund --no-save @ops/probe-lib@1.0.0 && node -e \\"console.log('ops registry ' + require('@ops/probe-lib').hello)\\"`,
  ];
  const toml = `[services.web]\nbuild = ["node probe.js", "ls -l /proc/self/fd", ${install.map((c) => `"${c}"`).join(", ")}]\nstart = "node probe.js"\nport = 3000\n`;
  await pushTree(w.local.remote, "net", {
    "ops.toml": toml,
    ".npmrc": `@ops:registry=${t.url}/npm/\n//${new URL(t.url).host}/npm/:_authToken=\${DEPLOY_TOKEN}\n`,
    "package.json": JSON.stringify({ name: "probe", version: "1.0.0", private: true }),
    "probe.js": probeJs({
      "ops-public-port": ["127.0.0.1", opsPort],
      "host-service": ["127.0.0.1", hostService.port],
      "beta-replica": ["127.0.0.1", beta.port],
      "cloud-metadata": ["169.254.169.254", 80],
      "private-range": ["10.255.255.1", 80],
    }),
  });
  buildId = (await manualBuild(w, "net")).id;
  await drain(t);
}, 300_000);

afterAll(async () => {
  w?.local.remove();
  hostService?.stop(true);
  await t?.close();
});

/** The descriptor numbers in `ls -l /proc/self/fd` output. */
function fdNumbers(listing: string): number[] {
  return [...listing.matchAll(/ (\d+) -> /g)].map((m) => Number(m[1])).sort((a, b) => a - b);
}

describe("descriptors", () => {
  test("a build step and a replica's programs hold no descriptor of ops's (another replica's output pipe, a namespace, the hand-over): only their own stdio", async () => {
    const log = await logText(w, buildId);
    const listing = log.split("\n").filter((l) => / \d+ -> /.test(l)).join("\n");
    expect(listing.length).toBeGreaterThan(0);
    // ls's own 0, 1, 2 and the directory it reads.
    expect(fdNumbers(listing), listing).toEqual([0, 1, 2, 3]);
    const res = await viaIngress(ingress, defaultHostOf(projects.alpha.slug, "web"), "/fds");
    const fromReplica = await res.text();
    expect(fdNumbers(fromReplica), fromReplica).toEqual([0, 1, 2, 3]);
  });
});

describe("a build's network", () => {
  test("installs from the public npm registry and from ops's own; reaches ops's public port; not a host listener, another project's replica, metadata or private ranges", async () => {
    const b = await getBuild(w, buildId);
    const log = await logText(w, buildId);
    expect(log).toContain("probe ops-public-port ok");
    for (const name of ["host-service", "beta-replica", "cloud-metadata", "private-range"]) {
      expect(log).toMatch(new RegExp(`probe ${name} (ECONNREFUSED|EACCES|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT)`));
    }
    expect(log).toContain("public registry ok");
    expect(log).toContain("ops registry from ops registry");
    expect(b.status).not.toBe("failed");
  });
});

describe("a replica's network", () => {
  test("answers through the ingress only: its port on the host forwards into its own namespace", async () => {
    const alpha = await replicaOf("alpha");
    const direct = await viaIngress(ingress, defaultHostOf(projects.alpha.slug, "web"), "/");
    const seen = (await direct.json()) as { port: string };
    expect(Number(seen.port)).toBe(alpha.port);
  });

  test("reaches ops's own public port, not a host listener on 127.0.0.1 nor the other project's replica", async () => {
    expect(await fromReplica("alpha", "127.0.0.1", opsPort)).toEqual({ ok: true, code: null });
    expect((await fromReplica("alpha", "127.0.0.1", hostService.port)).ok).toBe(false);
    const beta = await replicaOf("beta");
    expect((await fromReplica("alpha", "127.0.0.1", beta.port)).ok).toBe(false);
    expect((await fromReplica("alpha", "169.254.169.254", 80)).ok).toBe(false);
    // The other way round as well.
    const alpha = await replicaOf("alpha");
    expect((await fromReplica("beta", "127.0.0.1", alpha.port)).ok).toBe(false);
  });
});

describe("identity", () => {
  test("each project's replicas run as its own unprivileged host uid", async () => {
    const who = async (p: "alpha" | "beta") => ((await (await viaIngress(ingress, defaultHostOf(projects[p].slug, "web"), "/")).json()) as { uid: number }).uid;
    const [a, b] = [await who("alpha"), await who("beta")];
    expect(a).toBeGreaterThan(t.core.config.sandboxUidBase);
    expect(b).toBeGreaterThan(t.core.config.sandboxUidBase);
    expect(a).not.toBe(b);
  });

  test("a project's unpacked images sit in a folder of its own uid, mode 0700", async () => {
    const uid = ((await (await viaIngress(ingress, defaultHostOf(projects.alpha.slug, "web"), "/")).json()) as { uid: number }).uid;
    const project = t.core.access.findProject(projects.alpha.slug)!;
    const st = lstatSync(path.join(t.dataDir, "run", "images", project.id));
    expect({ mode: st.mode & 0o777, uid: st.uid }).toEqual({ mode: 0o700, uid });
  });

  test("a project's dependency cache belongs to its own uid, mode 0700", async () => {
    const b = await getBuild(w, buildId);
    const project = t.core.access.findProject(w.ctx.slug)!;
    // The project's caches are a file system mounted while its builds run (decision 0507): opened as a build does.
    const { cacheDir: dir, cacheCap } = projectCache(t.dataDir, project.id, "production", b.service, t.core.config.cacheMaxMb);
    const open = await openCache(dir, cacheCap);
    try {
      const st = lstatSync(dir);
      expect(st.mode & 0o777).toBe(0o700);
      expect(st.uid).toBeGreaterThan(t.core.config.sandboxUidBase);
      expect(st.uid).not.toBe(0);
      expect(lstatSync(path.dirname(dir)).uid).toBe(0);
    } finally {
      await open.close();
    }
  });
});

describe("without pasta", () => {
  test("ops names the package and the way to run without network isolation on purpose", () => {
    const found = networkTools("/nonexistent");
    expect(typeof found).toBe("string");
    expect(found as string).toContain("pasta (Debian package passt) is not installed");
    expect(found as string).toContain("OPS_SANDBOX_NETWORK=host");
  });
});
