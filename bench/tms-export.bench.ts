/**
 * Export of a composed locale with 20 000 keys from 3 bundles: the project's own bundle (10 000
 * keys, English and three quarters French), the estate-shared `common` of another project (5 000)
 * and the attached package bundle `@ops/bench-kit` at 1.0.0 (5 000), as `GET
 * /api/v1/projects/bench/translations/export/fr` with a machine token on `ops serve` (from source).
 *
 * - cached: wrk against the export, beside a bare Bun.serve answering the same bytes from memory
 *   (the cheapest possible server of that document), in alternating rounds;
 * - cold: one request after each change (an entry written between requests, so every export
 *   recomputes the composition), one at a time, beside the same composition done in this process
 *   straight on the data dir's SQLite file (one query per bundle, the fallback and the tree build,
 *   JSON.stringify) — the floor of computing it at all.
 *
 * `npm run bench -- tms-export`, or on its own: `bun bench/tms-export.bench.ts [--duration 10]`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Database } from "bun:sqlite";
import { ROOT, ratioLine, type BenchContext, type ChildServer, runAlone } from "./lib";
import { loadConfig } from "../src/core/config";
import { createCore, closeCore } from "../src/app";
import { tx } from "../src/core/db/client";
import { SYSTEM_ACTOR } from "../src/core/audit";
import { createProject, insertOperator, upsertMembership, fixedRole, insertToken } from "../src/domains/access/service";
import { claimPackage } from "../src/domains/registries/service";
import { createBundle } from "../src/domains/translations/service";
import { setEntry } from "../src/domains/translations/entries";
import { npmPublishBody, tarGz } from "./registry-seed";

export const name = "tms-export";
export const description = "export of a composed 20 000-key locale from 3 bundles: cached vs a bare Bun.serve, cold vs a raw SQLite composition";

export const OWN_KEYS = 10_000;
export const SHARED_KEYS = 5_000;
export const KIT_KEYS = 5_000;

export interface TmsSeed {
  dir: string;
  dataDir: string;
  token: string;
  kit: number;
}

/**
 * A data dir seeded offline: project `bench` with a machine developer and its token, its own
 * bundle `bench` (`ownKeys` keys in English, three quarters of them in French), project
 * `platform` with the estate-shared `common` (`sharedKeys`), and the claim and package bundle of
 * `@ops/bench-kit` in `bench` (versions are registered over HTTP once the server runs, after the
 * package version is published). Written through the services, with fsync off for the seeding
 * process only.
 */
export async function seedTms(ownKeys = OWN_KEYS, sharedKeys = SHARED_KEYS): Promise<TmsSeed> {
  const dir = mkdtempSync(path.join(tmpdir(), "ops-bench-tms-"));
  const dataDir = path.join(dir, "data");
  const core = createCore(loadConfig({ OPS_DATA_DIR: dataDir, OPS_LOG_LEVEL: "error" }), { logSink: () => {} });
  try {
    core.sqlite.exec("PRAGMA synchronous = OFF");
    const bench = createProject(core, { slug: "bench", name: "bench" }, SYSTEM_ACTOR);
    createProject(core, { slug: "platform", name: "platform" }, SYSTEM_ACTOR);
    const token = tx(core.db, (t) => {
      const op = insertOperator(core, t, { kind: "machine", handle: "bench-tms", displayName: "bench" }, null);
      const role = fixedRole(core, "developer");
      upsertMembership(core, t, op.id, bench.id, role.id);
      return insertToken(core, t, { operatorId: op.id, name: "bench", kind: "api", role, projectId: bench.id, expiresAt: null }).secret;
    });
    const benchRef = core.access.findProject("bench")!;
    const platformRef = core.access.findProject("platform")!;
    createBundle(core, benchRef, { name: "bench" }, SYSTEM_ACTOR);
    for (let i = 0; i < ownKeys; i++) {
      const key = `section${Math.floor(i / 100)}.item${i % 100}`;
      setEntry(core, benchRef, { bundle: "bench", namespace: "app", key, locale: "en", value: `Item ${i} for {name}` }, SYSTEM_ACTOR);
      if (i % 4 !== 0) setEntry(core, benchRef, { bundle: "bench", namespace: "app", key, locale: "fr", value: `Élément ${i} pour {name}` }, SYSTEM_ACTOR);
    }
    createBundle(core, platformRef, { name: "common", estate: true }, SYSTEM_ACTOR);
    for (let i = 0; i < sharedKeys; i++) {
      setEntry(core, platformRef, { bundle: "common", namespace: "common", key: `word${i}`, locale: "en", value: `Word ${i}` }, SYSTEM_ACTOR);
      setEntry(core, platformRef, { bundle: "common", namespace: "common", key: `word${i}`, locale: "fr", value: `Mot ${i}` }, SYSTEM_ACTOR);
    }
    claimPackage(core, benchRef, "npm", "@ops/bench-kit", SYSTEM_ACTOR);
    const kit = createBundle(core, benchRef, { name: "", package: "npm:@ops/bench-kit" }, SYSTEM_ACTOR).id;
    return { dir, dataDir, token, kit };
  } finally {
    await closeCore(core);
  }
}

async function call(url: string, token: string, method: string, body?: string): Promise<Response> {
  const res = await fetch(url, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res;
}

/** Publish @ops/bench-kit 1.0.0 over npm's route, register its English and French trees, attach it to `bench`. */
export async function registerKit(ops: ChildServer, seed: TmsSeed, keys = KIT_KEYS): Promise<void> {
  const tarball = tarGz({ "package/package.json": JSON.stringify({ name: "@ops/bench-kit", version: "1.0.0" }) });
  await call(`${ops.url}/npm/${encodeURIComponent("@ops/bench-kit")}`, seed.token, "PUT", npmPublishBody("@ops/bench-kit", "1.0.0", tarball, {}));
  const tree = (fr: boolean) => ({ kit: Object.fromEntries(Array.from({ length: keys / 50 }, (_, g) => [`group${g}`, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`label${i}`, fr ? `Libellé ${g}-${i}` : `Label ${g}-${i}`]))])) });
  const base = `${ops.url}/api/v1/projects/bench/translations`;
  for (const [locale, fr] of [["en", false], ["fr", true]] as const) await call(`${base}/bundles/${seed.kit}/versions`, seed.token, "POST", JSON.stringify({ locale, version: "1.0.0", tree: tree(fr) }));
  await call(`${base}/attachments`, seed.token, "POST", JSON.stringify({ bundle: seed.kit, version: "1.0.0" }));
}

/** The composition of `fr` on `bench`, straight on the SQLite file: the floor of computing it at all. */
function rawCompose(db: Database): string {
  const rows = db
    .query<{ bundle_id: number; namespace: string; key: string; locale: string; value: string }, []>(
      `SELECT k.bundle_id, k.namespace, k.key, v.locale, v.value FROM tms_keys k JOIN tms_values v ON v.key_id = k.id
       WHERE k.deleted_at IS NULL AND v.locale IN ('fr', 'en')`,
    )
    .all();
  const chosen = new Map<string, { ns: string; key: string; value: string; fr: boolean }>();
  for (const r of rows) {
    const id = `${r.namespace}\u0000${r.key}`;
    const cur = chosen.get(id);
    if (!cur || (!cur.fr && r.locale === "fr")) chosen.set(id, { ns: r.namespace, key: r.key, value: r.value, fr: r.locale === "fr" });
  }
  const tree: Record<string, Record<string, unknown>> = {};
  for (const e of [...chosen.values()].sort((a, b) => (a.ns === b.ns ? (a.key < b.key ? -1 : 1) : a.ns < b.ns ? -1 : 1))) {
    let node = (tree[e.ns] ??= {});
    const parts = e.key.split(".");
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]!] = e.value;
  }
  return JSON.stringify(tree);
}

/** Seconds per iteration of `fn` over `rounds`, as a rate. */
async function rate(rounds: number, fn: (i: number) => Promise<number> | number): Promise<number> {
  let spent = 0;
  for (let i = 0; i < rounds; i++) spent += await fn(i);
  return rounds / (spent / 1000);
}

export async function run(ctx: BenchContext): Promise<string> {
  const seed = await seedTms();
  const ops = await ctx.startServer([process.execPath, path.join(ROOT, "src/main.ts"), "serve", "--data-dir", seed.dataDir, "--listen", "127.0.0.1:{port}"], "/readyz");
  let line: string;
  try {
    await registerKit(ops, seed);
    const url = `${ops.url}/api/v1/projects/bench/translations/export/fr`;
    const first = await call(url, seed.token, "GET");
    const body = await first.text();
    const keys = body.match(/":"/g)?.length ?? 0;
    if (keys !== OWN_KEYS + SHARED_KEYS + KIT_KEYS) throw new Error(`the export holds ${keys} texts, not ${OWN_KEYS + SHARED_KEYS + KIT_KEYS}`);

    // Cold: a change, then the export that recomputes; one at a time.
    const rounds = Math.max(10, ctx.load.duration * 3);
    const opsCold = await rate(rounds, async (i) => {
      await call(`${ops.url}/api/v1/projects/bench/translations/entries`, seed.token, "PUT", JSON.stringify({ bundle: "bench", namespace: "app", key: "section0.item0", locale: "fr", value: `Élément 0 pour {name} (${i})` }));
      const t0 = performance.now();
      await (await call(url, seed.token, "GET")).arrayBuffer();
      return performance.now() - t0;
    });
    const db = new Database(path.join(seed.dataDir, "ops.db"), { readonly: true });
    const rawCold = await rate(rounds, () => {
      const t0 = performance.now();
      rawCompose(db);
      return performance.now() - t0;
    });
    db.close();

    // Cached: the same document under load, beside a bare server of the same bytes.
    const file = path.join(seed.dir, "export-fr.json");
    writeFileSync(file, body);
    const stat = await ctx.startServer([process.execPath, path.join(ROOT, "bench/static-file-server.ts"), "{port}", file], "/health");
    try {
      const { a, b } = await ctx.compare({ url, headers: { authorization: `Bearer ${seed.token}` } }, { url: `${stat.url}/file` });
      line = ratioLine(
        "tms-export (cached)",
        a,
        b,
        ctx.load,
        `${(body.length / 1024).toFixed(0)} KiB document, ${keys} keys from 3 bundles; cold (a change before each request, one at a time): ops ${opsCold.toFixed(1)} req/s, ` +
          `raw SQLite composition in-process ${rawCold.toFixed(1)} per s, ratio ${(opsCold / rawCold).toFixed(2)} over ${rounds} rounds`,
      );
    } finally {
      await stat.stop();
    }
  } finally {
    await ops.stop();
    rmSync(seed.dir, { recursive: true, force: true });
  }
  return line;
}

if (import.meta.main) await runAlone(run);
