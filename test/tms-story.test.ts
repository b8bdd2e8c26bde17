/**
 * The cross-project story of package bundles (issue 13): project A claims `@ops/ui-kit`, creates
 * its package bundle, publishes and registers 1.0.0 and 1.1.0 (1.1.0 drops a key); project B
 * attaches 1.0.0, overrides one key, exports, moves to 1.1.0 and sees the dropped key flagged
 * `removed` with its override kept; project C, which shares nothing, gets 404. Then the publish
 * pipeline's in-process path: the same registration through service.ts with the system actor.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { tmsCast, tr, claimNpm, publishNpm, createBundle, type TmsCast } from "./support/translations";
import { ensurePackageBundle, registerVersion } from "../src/domains/translations/service";
import { SYSTEM_ACTOR } from "../src/core/audit";

let t: TestApp;
let c: TmsCast;
beforeAll(async () => {
  t = await createTestApp();
  c = await tmsCast(t, "story");
});
afterAll(() => t.close());

const V100 = {
  en: { "ui-kit": { button: { save: "Save", cancel: "Cancel" }, dialog: { close: "Close" }, toast: { saved: "Saved {name}" } } },
  fr: { "ui-kit": { button: { save: "Enregistrer", cancel: "Annuler" }, dialog: { close: "Fermer" }, toast: { saved: "{name} enregistré" } } },
};
// 1.1.0 drops dialog.close and adds button.retry.
const V110 = {
  en: { "ui-kit": { button: { save: "Save", cancel: "Cancel", retry: "Retry" }, toast: { saved: "Saved {name}" } } },
  fr: { "ui-kit": { button: { save: "Enregistrer", cancel: "Annuler", retry: "Réessayer" }, toast: { saved: "{name} enregistré" } } },
};

describe("a package bundle across projects", () => {
  let kit: number;

  test("A claims @ops/ui-kit, creates its bundle, registers 1.0.0 and 1.1.0 as each publishes", async () => {
    await claimNpm(t, c.a.slug, c.devA, "@ops/ui-kit");
    kit = await createBundle(t, c.a.slug, c.devA, { name: "ui-kit", package: "npm:@ops/ui-kit" });
    for (const [version, trees] of [["1.0.0", V100], ["1.1.0", V110]] as const) {
      await publishNpm(t, c.devA, "@ops/ui-kit", version);
      for (const locale of ["en", "fr"] as const) {
        const res = await expectStatus(await t.request("POST", tr(c.a.slug, `/bundles/${kit}/versions`), { token: c.devA.session, body: { locale, version, tree: trees[locale] } }), 200);
        expect(res.keys).toBe(4);
      }
    }
    const listed = (await expectStatus<Array<{ id: number; latest_version: string; package: string; strings: number }>>(await t.request("GET", "/api/v1/tms/bundles", { token: c.devB.session }), 200)).find((b) => b.id === kit);
    expect(listed).toMatchObject({ latest_version: "1.1.0", package: "npm:@ops/ui-kit", strings: 4 });
  });

  test("B attaches 1.0.0, overrides the key 1.1.0 will drop, and exports", async () => {
    const attached = await expectStatus(await t.request("POST", tr(c.b.slug, "/attachments"), { token: c.devB.session, body: { bundle: kit, version: "1.0.0" } }), 200);
    expect(attached).toMatchObject({ id: kit, version: "1.0.0", keys: 4, overrides: 0, removed: 0, project: c.a.slug });
    await expectStatus(await t.request("PUT", tr(c.b.slug, `/shared/${kit}/overrides`), { token: c.devB.session, body: { namespace: "ui-kit", key: "dialog.close", locale: "fr", value: "Quitter" } }), 200);
    const fr = await expectStatus(await t.request("GET", tr(c.b.slug, "/export/fr"), { token: c.devB.session }), 404);
    expect(fr.message).toContain(c.b.slug); // B has no bundle of its own yet: the export is built on one.
    await createBundle(t, c.b.slug, c.devB, { name: c.b.slug });
    const tree = await expectStatus(await t.request("GET", tr(c.b.slug, "/export/fr"), { token: c.devB.session }), 200);
    expect(tree["ui-kit"]).toEqual({ button: { cancel: "Annuler", save: "Enregistrer" }, dialog: { close: "Quitter" }, toast: { saved: "{name} enregistré" } });
    // A's own export does not see B's override.
    await createBundle(t, c.a.slug, c.devA, { name: c.a.slug });
    await expectStatus(await t.request("POST", tr(c.a.slug, "/attachments"), { token: c.devA.session, body: { bundle: kit, version: "1.0.0" } }), 200);
    expect((await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr"), { token: c.devA.session }), 200))["ui-kit"].dialog.close).toBe("Fermer");
  });

  test("B moves to 1.1.0 with the same call: the dropped key is flagged removed, its override kept", async () => {
    const moved = await expectStatus(await t.request("POST", tr(c.b.slug, "/attachments"), { token: c.devB.session, body: { bundle: kit, version: "1.1.0" } }), 200);
    expect(moved).toMatchObject({ id: kit, version: "1.1.0", keys: 4, overrides: 1, removed: 1 });
    const view = await expectStatus(await t.request("GET", tr(c.b.slug, `/shared/${kit}?locale=fr`), { token: c.devB.session }), 200);
    expect(view.version).toBe("1.1.0");
    expect(view.rows.map((r: { key: string; removed: boolean }) => `${r.key}${r.removed ? " (removed)" : ""}`)).toEqual([
      "button.cancel",
      "button.retry",
      "button.save",
      "dialog.close (removed)",
      "toast.saved",
    ]);
    expect(view.rows.find((r: { key: string }) => r.key === "dialog.close")).toMatchObject({ override_value: "Quitter", removed: true });
    const tree = await expectStatus(await t.request("GET", tr(c.b.slug, "/export/fr"), { token: c.devB.session }), 200);
    expect(tree["ui-kit"]).toEqual({ button: { cancel: "Annuler", retry: "Réessayer", save: "Enregistrer" }, toast: { saved: "{name} enregistré" } });
    // The summary says so too; the override is still stored.
    const shared = (await expectStatus(await t.request("GET", tr(c.b.slug), { token: c.devB.session }), 200)).shared.find((s: { id: number }) => s.id === kit);
    expect(shared).toMatchObject({ version: "1.1.0", overrides: 1, removed: 1 });
    // A new override of the dropped key is refused; the kept one can be deleted.
    await expectStatus(await t.request("PUT", tr(c.b.slug, `/shared/${kit}/overrides`), { token: c.devB.session, body: { namespace: "ui-kit", key: "dialog.close", locale: "en", value: "Leave" } }), 404);
    // Moving back brings it into the export again.
    await expectStatus(await t.request("POST", tr(c.b.slug, "/attachments"), { token: c.devB.session, body: { bundle: kit, version: "1.0.0" } }), 200);
    expect((await expectStatus(await t.request("GET", tr(c.b.slug, "/export/fr"), { token: c.devB.session }), 200))["ui-kit"].dialog.close).toBe("Quitter");
    await expectStatus(await t.request("POST", tr(c.b.slug, "/attachments"), { token: c.devB.session, body: { bundle: kit, version: "1.1.0" } }), 200);
  });

  test("C, which shares nothing, gets 404", async () => {
    await expectStatus(await t.request("GET", tr(c.c.slug, `/shared/${kit}`), { token: c.devC.session }), 404);
    await expectStatus(await t.request("PUT", tr(c.c.slug, `/shared/${kit}/overrides`), { token: c.devC.session, body: { namespace: "ui-kit", key: "button.save", locale: "fr", value: "Sauver" } }), 404);
    await expectStatus(await t.request("DELETE", tr(c.c.slug, `/attachments/${kit}`), { token: c.devC.session }), 404);
    await expectStatus(await t.request("POST", tr(c.c.slug, `/bundles/${kit}/versions`), { token: c.devC.session, body: { locale: "en", version: "1.1.0", tree: V110.en } }), 404);
    await expectStatus(await t.request("GET", tr(c.c.slug, `/entries?bundle=${kit}`), { token: c.devC.session }), 404);
    // And it may not act in B.
    await expectStatus(await t.request("GET", tr(c.b.slug, `/shared/${kit}`), { token: c.devC.session }), 403);
  });

  test("every step is in the audit log of its project", async () => {
    const ops = (project: string) =>
      t.core.sqlite
        .query<{ context: string }, [string]>("SELECT context FROM audit_log WHERE action = 'translations.write' AND outcome = 'allowed' AND project = ? ORDER BY id")
        .all(project)
        .map((r) => JSON.parse(r.context).op);
    expect(ops(c.a.slug)).toEqual(["bundle.create", "version.register", "version.register", "version.register", "version.register", "bundle.create", "attachment.create"]);
    expect(ops(c.b.slug)).toEqual(["attachment.create", "override.set", "bundle.create", "attachment.move", "attachment.move", "attachment.move"]);
  });
});

describe("the publish pipeline's in-process path", () => {
  test("ensurePackageBundle creates the bundle once; registerVersion validates and audits as the system", async () => {
    await claimNpm(t, c.a.slug, c.devA, "@ops/pipeline-kit");
    await publishNpm(t, c.devA, "@ops/pipeline-kit", "0.1.0");
    const project = t.core.access.findProject(c.a.slug)!;
    const bundle = ensurePackageBundle(t.core, project, "npm", "@ops/pipeline-kit", SYSTEM_ACTOR);
    expect(ensurePackageBundle(t.core, project, "npm", "@ops/pipeline-kit", SYSTEM_ACTOR).id).toBe(bundle.id);
    expect(bundle.owner).toBe("system");
    expect(registerVersion(t.core, project, String(bundle.id), { locale: "en", version: "0.1.0", tree: { kit: { hi: "Hi {who}" } } }, SYSTEM_ACTOR)).toEqual({ keys: 1, skipped: 0, written: 1 });
    expect(() => registerVersion(t.core, project, String(bundle.id), { locale: "fr", version: "0.1.0", tree: { kit: { hi: "Salut {qui}" } } }, SYSTEM_ACTOR)).toThrow("lacks {who}");
    expect(() => registerVersion(t.core, project, String(bundle.id), { locale: "fr", version: "0.2.0", tree: { kit: { hi: "Salut {who}" } } }, SYSTEM_ACTOR)).toThrow("never published");
    const rows = t.core.sqlite.query<{ actor: string; via: string }, []>("SELECT actor, via FROM audit_log WHERE target LIKE 'tms-bundle:%' AND actor = 'system'").all();
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.via === "system")).toBe(true);
  });
});
