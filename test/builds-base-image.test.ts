/**
 * Images that carry what they run (issue 34; decisions 0620–0622). A busybox base (Debian's static
 * busybox in a tiny root) is copied into ops's embedded registry with real skopeo; a real `git
 * push` of the Go recipe of docs/guide/recipes.md ("A static Go app on a bare engine", its very
 * blocks) with `base = …` builds an image whose layers are the base's (reused by digest: the blob
 * store is never asked to store them again) with the app's layer on top, the base's config merged
 * under ops's, labelled `dev.ops.runtime=engine`; the process runtime still runs it through the
 * ingress. Production and staging share the build while the base's digest is the same; the same
 * tag moved to another image makes the next build its own. The spec's `source.base` is in the
 * catalog's schema and a Scan writes ops.toml's `base` there. Hostile: a base outside ops's registry,
 * another project's (refused, and none of its blobs linked), a missing one, one with a Dockerfile;
 * a base whose layer holds a `..` path and a file through a link out of the root is unpacked by the
 * process runtime without writing outside its root. On an engine runtime (`OPS_RUNTIME=docker`),
 * a native image without a base is refused at deploy (by hand and after a build), naming the fix;
 * one with a base is not.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createTestApp, expectStatus, tempDir, type TestApp } from "./harness";
import { buildsDataDir, buildWorld, drain, getBuild, logText, manualBuild, type BuildWorld } from "./builds-fixtures";
import { defaultHostOf, listenIngress, pushApp, viaIngress } from "./deploy-fixtures";
import { makePerson, makeProject, mintToken } from "./fixtures";
import { projectWithOwner } from "./resources-helpers";
import { skopeo, pushPacked } from "./support/builds";
import { busyboxRoot, BUSYBOX_CONFIG, pushLayout, writeLayout, type BaseLayout } from "./support/base-images";
import { parseOpsToml } from "../src/domains/sources/service";
import { resolveBaseImage } from "../src/domains/builds/image-base";
import { declaredBase, resolvePlan } from "../src/domains/builds/plan";
import { packImage } from "../src/domains/builds/image";
import { ensureSigningKey, signImage } from "../src/domains/builds/signing";
import { buildDeployer } from "../src/domains/builds/deployer";
import { pushImage, storedBlob } from "../src/domains/registries/service";
import { prepareImage } from "../src/adapters/runtime";
import { deployments } from "../src/domains/deployments/tables";
import { reconcile } from "../src/domains/sources/reconcile";
import { SYSTEM_ACTOR } from "../src/core/audit";
import type { BuildResponse } from "../src/domains/builds/model";
import { recipeBlock } from "./support/recipes";

const SHARED = `bases${process.pid}`;


let t: TestApp;
let w: BuildWorld;
let ingress: string;
let host: string;
let token: string;
let busybox: BaseLayout;
let otherSlug: string;
let otherLayer: string;

const inspect = async (ref: string, config = false) => {
  const res = await skopeo(["inspect", ...(config ? ["--config"] : []), "--tls-verify=false", "--creds", `ci:${token}`, `docker://${host}/${ref}`]);
  if (res.code !== 0) throw new Error(`skopeo inspect ${ref}: ${res.stderr}`);
  return JSON.parse(res.stdout);
};

/** The recipe's files for service `web`, building on `base`. */
function goApp(base: string): Record<string, string> {
  const toml = recipeBlock("A static Go app on a bare engine", "ops.toml").replace("[services.api]", "[services.web]").replace(/base = "shop\//, `base = "${w.ctx.slug}/`);
  if (!toml.includes(`base = "${base}"`)) throw new Error(`the recipe's ops.toml does not name ${base}: ${toml}`);
  return { "ops.toml": toml, "go.mod": recipeBlock("Go", "go.mod"), "main.go": recipeBlock("Go", "main.go") };
}

async function newest(env: string): Promise<BuildResponse> {
  return (await expectStatus<BuildResponse[]>(await w.ctx.req("GET", `/builds?environment=${env}&limit=1`), 200))[0]!;
}

beforeAll(async () => {
  t = await createTestApp({ dataDir: buildsDataDir(), env: { OPS_BUILD_MEMORY_MB: "512", OPS_DEPLOY_HEALTH_TIMEOUT_SECS: "20", OPS_BUILD_CONCURRENCY: "2", OPS_BASE_IMAGES_PROJECT: SHARED } });
  ingress = listenIngress(t);
  host = new URL(t.url).host;
  w = await buildWorld(t, { environments: ["production", "staging"], spec: { health_check_path: "/healthz" } });
  token = mintToken(t, w.ctx.owner.principal, { role: "developer", project: w.ctx.slug });
  busybox = writeLayout(busyboxRoot(), BUSYBOX_CONFIG);
  await pushLayout(busybox, host, `${w.ctx.slug}/base-busybox`, "1", token);
  const other = await projectWithOwner(t);
  otherSlug = other.slug;
  const otherBase = writeLayout(busyboxRoot([{ path: "etc/other-secret", type: "File", body: "theirs\n" }]), BUSYBOX_CONFIG);
  otherLayer = otherBase.layerDigest;
  await pushLayout(otherBase, host, `${otherSlug}/secret-base`, "1", mintToken(t, other.owner.principal, { role: "developer", project: otherSlug }));
  makeProject(t, SHARED);
}, 120_000);

afterAll(async () => {
  w?.local.remove();
  await t?.close();
});

describe("ops.toml's base", () => {
  test("a native service's key; refused beside a dockerfile and when it is not an image reference with a tag or digest", () => {
    expect(parseOpsToml(`[services.web]\nstart = "./server"\nbase = "shop/base:1"\n`).services[0]).toMatchObject({ base: "shop/base:1" });
    expect(parseOpsToml(`[services.web]\nstart = "./server"\n`).services[0]).toMatchObject({ base: null });
    expect(() => parseOpsToml(`[services.web]\ndockerfile = "Dockerfile"\nbase = "shop/base:1"\n`)).toThrow("services.web.base: a Dockerfile names its base in FROM");
    for (const bad of ["shop/base", "shop/base:", "Shop/Base:1", "shop/base:1 ; rm -rf /", "shop/base@sha256:abc", ""]) {
      expect(() => parseOpsToml(`[services.web]\nstart = "./server"\nbase = ${JSON.stringify(bad)}\n`)).toThrow("services.web.base");
    }
  });
});

describe("the service's spec", () => {
  test("source.base is in the catalog's schema (a reference with a tag or digest), and a Scan writes ops.toml's base there", async () => {
    // Another repository than the one the suite pushes, so its pushes build none of these services.
    const repo = `${w.ctx.slug}/specs`;
    const envs = new Set(["production", "staging"]);
    const put = (base: string) => w.ctx.req("PUT", "/resources/service/spec-check?environment=production", { spec: { source: { repo, base } } });
    const bad = await put("busybox latest");
    expect(bad.status).toBe(422);
    expect(JSON.stringify(await bad.json())).toContain("spec.source");
    await expectStatus(await put(`${w.ctx.slug}/base-busybox:1`), 201);
    const catalog = await expectStatus<any>(await t.request("GET", "/api/v1/catalog", { token: w.ctx.owner.session }), 200);
    expect(JSON.stringify(catalog)).toContain("Native builds: the image (in ops's registry");
    const project = t.core.access.findProject(w.ctx.slug)!;
    const decl = parseOpsToml(`[services.scanned]\nstart = "./server"\nbase = "${w.ctx.slug}/base-busybox:1"\n`);
    const out = await reconcile(t.core, { project, repo, decl, gitRef: "main", defaultBranch: true, commitSha: "d".repeat(40), writable: envs, actor: SYSTEM_ACTOR, sourceId: null }, () => undefined);
    expect(out.refused).toEqual([]);
    const scanned = await expectStatus<any>(await w.ctx.req("GET", "/resources/service/scanned?environment=production"), 200);
    expect(scanned.spec.source).toEqual({ repo, base: `${w.ctx.slug}/base-busybox:1` });
    // Dropped from the file, dropped from the spec at the next Scan.
    await reconcile(t.core, { project, repo, decl: parseOpsToml(`[services.scanned]\nstart = "./server"\n`), gitRef: "main", defaultBranch: true, commitSha: "e".repeat(40), writable: envs, actor: SYSTEM_ACTOR, sourceId: null }, () => undefined);
    expect((await expectStatus<any>(await w.ctx.req("GET", "/resources/service/scanned?environment=production"), 200)).spec.source).toEqual({ repo });
  });

  test("a build takes ops.toml's base, else the spec's; never beside a Dockerfile", () => {
    const spec = { source: { repo: "x/y", base: "x/from-spec:1" } };
    const native = resolvePlan({ service: "web", commitSha: "f".repeat(40) }, spec, parseOpsToml(`[services.web]\nstart = "./server"\n`));
    expect(declaredBase({ service: "web" }, spec, parseOpsToml(`[services.web]\nstart = "./server"\n`), native)).toBe("x/from-spec:1");
    expect(declaredBase({ service: "web" }, spec, parseOpsToml(`[services.web]\nstart = "./server"\nbase = "x/from-file:2"\n`), native)).toBe("x/from-file:2");
    expect(declaredBase({ service: "web" }, { source: { repo: "x/y" } }, parseOpsToml(`[services.web]\nstart = "./server"\n`), native)).toBeNull();
    const container = resolvePlan({ service: "web", commitSha: "f".repeat(40) }, { source: { repo: "x/y", dockerfile: "Dockerfile", base: "x/from-spec:1" } }, null);
    expect(() => declaredBase({ service: "web" }, { source: { repo: "x/y", dockerfile: "Dockerfile", base: "x/from-spec:1" } }, null, container)).toThrow("whose FROM names its base");
  });
});

describe("a base is looked up in ops's registry only, in the project's own repositories or the estate's shared ones", () => {
  test("refused with a reason naming the fix: another registry, a Docker Hub short name, another project, a missing tag", async () => {
    const refusal = (ref: string) => resolveBaseImage(t.core, w.ctx.slug, ref).then(() => "resolved", (e: Error) => e.message);
    expect(await refusal("docker.io/library/busybox:1.36")).toContain(`names the registry docker.io; builds reach no registry but ops's own (${host}): copy the image into it first`);
    expect(await refusal("busybox:1.36")).toContain(`names no repository of ops's registry (${host}): its repositories are <project>/<name>`);
    expect(await refusal(`${otherSlug}/secret-base:1`)).toContain(`is an image of project ${otherSlug}: a build may use its own project's images (${w.ctx.slug}/…) or the estate's shared base images (OPS_BASE_IMAGES_PROJECT=${SHARED})`);
    expect(await refusal(`${w.ctx.slug}/base-busybox:2`)).toContain(`ops's registry has no image ${w.ctx.slug}/base-busybox:2: push it there first`);
    // The same project's image named through ops's own host is the same image.
    expect((await resolveBaseImage(t.core, w.ctx.slug, `${host}/${w.ctx.slug}/base-busybox:1`)).layers.map((l) => l.digest)).toEqual([busybox.layerDigest]);
  });

  test("the estate's shared base project (OPS_BASE_IMAGES_PROJECT) is open to every project", async () => {
    const publisher = await makePerson(t, [{ role: "developer", project: SHARED }]);
    await pushLayout(busybox, host, `${SHARED}/busybox`, "1", mintToken(t, publisher.principal, { role: "developer", project: SHARED }));
    const base = await resolveBaseImage(t.core, w.ctx.slug, `${SHARED}/busybox:1`);
    expect(base.repository).toBe(`${SHARED}/busybox`);
    expect(base.layers.map((l) => l.digest)).toEqual([busybox.layerDigest]);
  });

  test("the push links a base's layer only from a repository that holds it, with its size", async () => {
    const config = new TextEncoder().encode("{}");
    const push = (mount: string, digest: string, size: number) =>
      pushImage(t.core, {
        repository: `${w.ctx.slug}/mounted`,
        blobs: [{ digest, size, source: { mount } }],
        manifest: new TextEncoder().encode(JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: `sha256:${new Bun.CryptoHasher("sha256").update(config).digest("hex")}`, size: config.length }, layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest, size }] })),
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        tag: "m1",
        pusher: { subject: "ops", audit: SYSTEM_ACTOR },
      });
    // Another project's layer, named as if it were in this project's base repository: not there.
    await expect(push(`${w.ctx.slug}/base-busybox`, otherLayer, 1)).rejects.toThrow(`is not in ${w.ctx.slug}/base-busybox`);
    const size = storedBlob(t.core, `${w.ctx.slug}/base-busybox`, busybox.layerDigest)!.size;
    await expect(push(`${w.ctx.slug}/base-busybox`, busybox.layerDigest, size + 1)).rejects.toThrow("is not in");
    expect(storedBlob(t.core, `${w.ctx.slug}/mounted`, otherLayer)).toBeNull();
    expect(storedBlob(t.core, `${w.ctx.slug}/mounted`, busybox.layerDigest)).toBeNull();
  });

  test("a push naming another project's image fails its builds (build) and links none of that project's blobs", async () => {
    const files = { ...goApp(`${w.ctx.slug}/base-busybox:1`) };
    files["ops.toml"] = files["ops.toml"].replace(`${w.ctx.slug}/base-busybox:1`, `${otherSlug}/secret-base:1`);
    await w.local.commit(files, "Borrow another project's base");
    await w.local.push("main");
    await drain(t);
    for (const env of ["production", "staging"]) {
      const b = await newest(env);
      expect(b).toMatchObject({ message: "Borrow another project's base", status: "failed", failure_kind: "build" });
      expect(b.error).toContain(`is an image of project ${otherSlug}`);
    }
    expect(storedBlob(t.core, `${w.ctx.slug}/web`, otherLayer)).toBeNull();
  }, 60_000);
});

describe("a native build on a base", () => {
  let digest: string;

  test("one push: the base's layers with the app's on top, the base's config under ops's, labelled engine; both environments share it; the process runtime runs it", async () => {
    const puts: string[] = [];
    const store = t.core.blobs;
    const put = store.put.bind(store);
    store.put = async (source, opts) => {
      const res = await put(source, opts);
      puts.push(`sha256:${res.digest}`);
      return res;
    };
    try {
      await w.local.commit(goApp(`${w.ctx.slug}/base-busybox:1`), "Go on busybox");
      await w.local.push("main");
      await drain(t);
    } finally {
      store.put = put;
    }
    const [production, staging] = [await newest("production"), await newest("staging")];
    expect([production.status, staging.status]).toEqual(["healthy", "healthy"]);
    expect(staging.image_digest).toBe(production.image_digest!);
    digest = production.image_digest!;
    const leader = production.step_timings.find((s) => s.step === "build")?.ok ? production : staging;
    const log = await logText(w, leader.id);
    const baseDigest = (await inspect(`${w.ctx.slug}/base-busybox:1`)).Digest;
    expect(log).toContain(`base ${w.ctx.slug}/base-busybox:1 is ${w.ctx.slug}/base-busybox@${baseDigest}`);
    expect(log).toContain(`on base ${w.ctx.slug}/base-busybox@${baseDigest}: its 1 layer(s) reused by digest`);
    // Never stored again: the base's layer was linked into the app's repository, not re-uploaded.
    expect(puts).not.toContain(busybox.layerDigest);
    const info = await inspect(`${w.ctx.slug}/web@${digest}`);
    expect(info.Layers).toHaveLength(2);
    expect(info.Layers[0]).toBe(busybox.layerDigest);
    expect(info.Labels).toMatchObject({ "dev.ops.runtime": "engine", "org.example.base": "busybox", "dev.ops.base": `${w.ctx.slug}/base-busybox@${baseDigest}`, "org.opencontainers.image.revision": production.commit_sha });
    const cfg = await inspect(`${w.ctx.slug}/web@${digest}`, true);
    expect(cfg.config).toMatchObject({ Entrypoint: ["/bin/sh", "-c"], Cmd: ["./server"], WorkingDir: "/app", User: "65534:65534", Env: ["PATH=/bin:/usr/bin", "BASE_FLAVOUR=busybox", "PORT=3000"] });
    expect(cfg.config.Healthcheck).toBeUndefined();
    expect(cfg.rootfs.diff_ids[0]).toBe(busybox.diffId);
    expect(cfg.history.length).toBe(2);
    // The app's layer on top holds the static binary under /app.
    const out = tempDir("ops-base-copy-");
    expect((await skopeo(["copy", "--src-tls-verify=false", "--src-creds", `ci:${token}`, `docker://${host}/${w.ctx.slug}/web@${digest}`, `dir:${out}`])).code).toBe(0);
    const top = Bun.spawnSync(["tar", "-tzf", path.join(out, info.Layers[1].slice(7))]).stdout.toString();
    expect(top.split("\n")).toContain("app/server");
    rmSync(out, { recursive: true, force: true });
    for (const env of ["production", "staging"]) expect(await (await viaIngress(ingress, defaultHostOf(w.ctx.slug, "web", env))).text()).toBe("hello from go");
  }, 240_000);

  test("the same tag moved to another image: the next build of the commit builds, saying its base differs", async () => {
    const moved = writeLayout(busyboxRoot([{ path: "etc/motd", type: "File", body: "moved\n" }]), BUSYBOX_CONFIG);
    await pushLayout(moved, host, `${w.ctx.slug}/base-busybox`, "1", token);
    const build = await manualBuild(w, null, "staging");
    await drain(t);
    const done = await getBuild(w, build.id);
    expect(done.status).toBe("healthy");
    expect(done.image_digest).not.toBe(digest);
    expect(done.step_timings.find((s) => s.step === "build")?.ok).toBe(true);
    expect(await logText(w, done.id)).toContain("has other inputs (base image)");
    expect((await inspect(`${w.ctx.slug}/web@${done.image_digest}`)).Layers[0]).toBe(moved.layerDigest);
  }, 240_000);
});

describe("a hostile base", () => {
  test("a layer with a .. path and a file through a link out of the root: the process runtime unpacks it without writing outside its root", async () => {
    const marker = `escaped-${process.pid}`;
    const layout = writeLayout(
      busyboxRoot([
        { path: `../../../../../../tmp/${marker}`, type: "File", body: "out\n" },
        { path: "out", type: "SymbolicLink", linkpath: "/tmp" },
        { path: `out/${marker}-link`, type: "File", body: "out\n" },
      ]),
      BUSYBOX_CONFIG,
    );
    await pushLayout(layout, host, `${w.ctx.slug}/base-hostile`, "1", token);
    const base = await resolveBaseImage(t.core, w.ctx.slug, `${w.ctx.slug}/base-hostile:1`);
    const work = tempDir("ops-base-hostile-");
    const out = path.join(work, "out");
    mkdirSync(out);
    writeFileSync(path.join(out, "hello.txt"), "hi\n");
    const img = await packImage({ outputDir: out, layerFile: path.join(work, "layer.tar.gz"), start: "cat hello.txt", port: 8080, commit: "a".repeat(40), commitTime: Date.UTC(2026, 2, 1), source: `${w.ctx.slug}/app`, base });
    const pushed = await pushPacked(t.core, img, `${w.ctx.slug}/hostile`, "h1");
    const project = t.core.access.findProject(w.ctx.slug)!;
    const { image, refused } = await prepareImage(t.core, `${w.ctx.slug}/hostile`, pushed.digest, project.id);
    expect(refused.map((r) => r.path).sort()).toEqual([`../../../../../../tmp/${marker}`, `out/${marker}-link`].sort());
    expect(existsSync(`/tmp/${marker}`)).toBe(false);
    expect(existsSync(`/tmp/${marker}-link`)).toBe(false);
    expect(readFileSync(path.join(image.root!, "app", "hello.txt"), "utf8")).toBe("hi\n");
    expect(existsSync(path.join(image.root!, "bin", "busybox"))).toBe(true);
    rmSync(work, { recursive: true, force: true });
  }, 60_000);
});

describe("on an engine runtime (OPS_RUNTIME=docker)", () => {
  let d: TestApp;
  let slug: string;
  let owner: string;
  beforeAll(async () => {
    d = await createTestApp({ env: { OPS_RUNTIME: "docker", OPS_DOCKER_SOCKET: path.join(tempDir("ops-no-engine-"), "docker.sock") } });
    const ctx = await projectWithOwner(d);
    slug = ctx.slug;
    owner = ctx.owner.session;
    await expectStatus(await ctx.req("PUT", "/resources/service/web?environment=production", { spec: { image: `${slug}/web:native`, port: 8080 } }), 201);
  }, 60_000);
  afterAll(async () => {
    await d?.close();
  });

  const deploy = (digest: string) => d.request("POST", `/api/v1/projects/${slug}/resources/service/web/deploy?environment=production`, { token: owner, body: { digest } });

  test("a native image without a base is refused by hand and after a build, saying the nodes have no toolchains and how to fix it", async () => {
    const native = await pushApp(d, slug, "web", { version: "native" });
    const res = await deploy(native);
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.message).toContain("dev.ops.runtime=process");
    expect(body.message).toContain("has no toolchains");
    expect(body.message).toContain(`base = "<project>/<image>:<tag>"`);
    expect(body.message).toContain("or a Dockerfile");
    const deployer = buildDeployer(d.core)!;
    const build = { id: 9001, project: slug, environment: "production", service: "web", imageDigest: native, imageRef: `x/${slug}/web:native`, commitSha: "b".repeat(40), message: "m", author: "a", requestedBy: "host", trigger: "push", sourceId: null, repo: `${slug}/app` };
    await expect(deployer.deployBuild(d.core, build)).rejects.toThrow("has no toolchains");
    // Both refusals are recorded, with the reason, and nothing was queued to run.
    const rows = d.core.db.select().from(deployments).all();
    expect(rows.map((r) => r.rollout)).toEqual(["refused", "refused"]);
    for (const r of rows) expect(r.rolloutNote).toContain("has no toolchains");
  });

  test("an image built on a base is not refused", async () => {
    const layout = writeLayout(busyboxRoot(), BUSYBOX_CONFIG);
    const owner2 = mintToken(d, (await makePerson(d, [{ role: "developer", project: slug }])).principal, { role: "developer", project: slug });
    await pushLayout(layout, new URL(d.url).host, `${slug}/base`, "1", owner2);
    const base = await resolveBaseImage(d.core, slug, `${slug}/base:1`);
    const work = tempDir("ops-base-engine-");
    mkdirSync(path.join(work, "out"));
    writeFileSync(path.join(work, "out", "run.sh"), "echo hi\n");
    const img = await packImage({ outputDir: path.join(work, "out"), layerFile: path.join(work, "layer.tar.gz"), start: "sh run.sh", port: 8080, commit: "c".repeat(40), commitTime: Date.UTC(2026, 2, 1), source: `${slug}/app`, base });
    const pushed = await pushPacked(d.core, img, `${slug}/web`, "on-base");
    ensureSigningKey(d.core);
    await signImage(d.core, `${slug}/web`, pushed.digest);
    await expectStatus(await deploy(pushed.digest), 201);
    rmSync(work, { recursive: true, force: true });
  });
});
