/**
 * The translation routes of document 3 against a real app: every status each route lists, the
 * model's rules (versions, history, review status, key shapes, ICU validation), composition with
 * fallback, ETag/304, and an audit row for every mutation.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { tmsCast, tr, putEntry, createBundle, claimNpm, publishNpm, type TmsCast } from "../../../test/support/translations";

let t: TestApp;
let c: TmsCast;
beforeAll(async () => {
  t = await createTestApp();
  c = await tmsCast(t);
});
afterAll(() => t.close());

const auditRows = (op: string) =>
  t.core.sqlite.query<{ n: number }, [string]>("SELECT count(*) AS n FROM audit_log WHERE action = 'translations.write' AND outcome = 'allowed' AND context LIKE ?").get(`%"op":"${op}"%`)!.n;

describe("POST …/translations/bundles", () => {
  test("201 an own bundle, 409 the same name again, 422 a name that is not slug-shaped", async () => {
    const res = await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: c.a.slug } }), 201);
    expect(res).toEqual({ id: expect.any(Number), name: c.a.slug, owner: c.devA.email });
    expect(auditRows("bundle.create")).toBeGreaterThan(0);
    expect((await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: c.a.slug } }), 409)).error).toBe("already_exists");
    const bad = await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: "Not A Slug" } }), 422);
    expect(bad.message).toContain("name");
    await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: "fine", source_locale: "not a locale" } }), 422);
  });

  test("estate-shared names are unique estate-wide", async () => {
    await createBundle(t, c.a.slug, c.devA, { name: "common", estate: true });
    const clash = await expectStatus(await t.request("POST", tr(c.b.slug, "/bundles"), { token: c.devB.session, body: { name: "common", estate: true } }), 409);
    expect(clash.message).toContain(c.a.slug);
  });

  test("a package bundle needs the project's claim: 404 without it, 201 with it, 409 twice, 422 malformed", async () => {
    const missing = await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: "x", package: "npm:@ops/tms-widgets" } }), 404);
    expect(missing.message).toContain("claim");
    await claimNpm(t, c.a.slug, c.devA, "@ops/tms-widgets");
    const made = await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: "ignored", package: "npm:@ops/tms-widgets" } }), 201);
    expect(made.name).toBe("@ops/tms-widgets");
    await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: "ignored", package: "npm:@ops/tms-widgets" } }), 409);
    // B does not hold the claim.
    await expectStatus(await t.request("POST", tr(c.b.slug, "/bundles"), { token: c.devB.session, body: { name: "x", package: "npm:@ops/tms-widgets" } }), 404);
    await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: "x", package: "pypi:requests" } }), 422);
    await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.devA.session, body: { name: "x", package: "npm:@ops/tms-widgets", estate: true } }), 422);
  });

  test("403 for a viewer (audited), 404 for an unknown project", async () => {
    await expectStatus(await t.request("POST", tr(c.a.slug, "/bundles"), { token: c.viewerA.session, body: { name: "nope" } }), 403);
    await expectStatus(await t.request("POST", tr("no-such-project", "/bundles"), { token: c.devA.session, body: { name: "nope" } }), 404);
  });
});

describe("entries", () => {
  test("PUT writes a value with a version; the same value again changes nothing; a new one goes on and history keeps the old", async () => {
    const e = { bundle: c.a.slug, namespace: "app", key: "greeting", locale: "en", value: "Hello {name}!" };
    expect(await putEntry(t, c.a.slug, c.devA, e)).toBe(1);
    expect(await putEntry(t, c.a.slug, c.devA, e)).toBe(1);
    expect(await putEntry(t, c.a.slug, c.devA, { ...e, value: "Hi {name}!" })).toBe(2);
    const hist = t.core.sqlite.query<{ value: string; reason: string }, []>("SELECT value, reason FROM tms_history").all();
    expect(hist).toContainEqual({ value: "Hello {name}!", reason: "replaced" });
    // By id too, and in another locale; locales are stored canonically.
    const id = (await expectStatus<{ own: Array<{ id: number; name: string }> }>(await t.request("GET", tr(c.a.slug), { token: c.devA.session }), 200)).own.find((b) => b.name === c.a.slug)!.id;
    expect(await putEntry(t, c.a.slug, c.devA, { ...e, bundle: String(id), locale: "FR", value: "Salut {name} !", status: "review" })).toBe(1);
    const list = await expectStatus(await t.request("GET", tr(c.a.slug, `/entries?bundle=${c.a.slug}`), { token: c.viewerA.session }), 200);
    expect(list).toEqual([{ key: "greeting", namespace: "app", updated_at: expect.any(String), values: { en: "Hi {name}!", fr: "Salut {name} !" }, version: 2, review: ["fr"] }]);
    // Approval: the same text with status translated.
    expect(await putEntry(t, c.a.slug, c.devA, { ...e, locale: "fr", value: "Salut {name} !", status: "translated" })).toBe(2);
    expect((await expectStatus(await t.request("GET", tr(c.a.slug, `/entries?bundle=${c.a.slug}`), { token: c.viewerA.session }), 200))[0].review).toEqual([]);
  });

  test("search over keys and every locale's value, namespace filter, missing only", async () => {
    await putEntry(t, c.a.slug, c.devA, { bundle: c.a.slug, namespace: "app", key: "nav.home", locale: "en", value: "Home" });
    await putEntry(t, c.a.slug, c.devA, { bundle: c.a.slug, namespace: "admin", key: "title", locale: "en", value: "Control room" });
    const q = async (query: string) => (await expectStatus<Array<{ key: string }>>(await t.request("GET", tr(c.a.slug, `/entries?bundle=${c.a.slug}&${query}`), { token: c.devA.session }), 200)).map((e) => e.key);
    expect(await q("q=SALUT")).toEqual(["greeting"]);
    expect(await q("q=nav.")).toEqual(["nav.home"]);
    expect(await q("namespace=admin")).toEqual(["title"]);
    expect(await q("missing_only=true")).toEqual(["title", "nav.home"]);
    await expectStatus(await t.request("GET", tr(c.a.slug, "/entries?bundle=nope"), { token: c.devA.session }), 404);
    await expectStatus(await t.request("GET", tr(c.a.slug, "/entries"), { token: c.devA.session }), 422);
    await expectStatus(await t.request("GET", tr(c.a.slug, `/entries?bundle=${c.a.slug}`), { token: c.devB.session }), 403);
  });

  test("422: empty value, malformed namespace or key, invalid ICU, placeholders that differ from the source, a key that is also a group", async () => {
    const base = { bundle: c.a.slug, namespace: "app", key: "greeting", locale: "de", value: "Hallo {name}!" };
    const refuse = async (body: Record<string, unknown>, text: string) => {
      const res = await expectStatus(await t.request("PUT", tr(c.a.slug, "/entries"), { token: c.devA.session, body: { ...base, ...body } }), 422);
      expect(res.message).toContain(text);
    };
    await refuse({ value: "   " }, "must not be empty");
    await refuse({ namespace: "bad ns" }, "namespace");
    await refuse({ key: "a..b" }, "key");
    await refuse({ key: "-".repeat(300) }, "key");
    await refuse({ locale: "xx_YY!" }, "locale");
    await refuse({ value: "Hallo {name" }, "not a valid ICU message");
    await refuse({ value: "Hallo {user}!" }, "lacks {name}");
    await refuse({ value: "{n, plural, one {#}}" }, "not a valid ICU message");
    await refuse({ value: "bad\u0007bell" }, "control characters");
    await refuse({ key: "nav.home.icon", locale: "en", value: "x" }, "is a text");
    await refuse({ key: "nav", locale: "en", value: "x" }, "groups");
    await refuse({ key: "brand.new", locale: "fr", value: "Nouveau" }, "starts with its text in the source locale (en)");
    await expectStatus(await t.request("PUT", tr(c.a.slug, "/entries"), { token: c.devA.session, body: { ...base, bundle: "nope" } }), 404);
    await expectStatus(await t.request("PUT", tr(c.a.slug, "/entries"), { token: c.viewerA.session, body: base }), 403);
    // A plural that keeps the source's arguments is fine.
    await putEntry(t, c.a.slug, c.devA, { ...base, value: "{name, select, other {Hallo {name}!}}" });
  });

  test("DELETE moves every locale's value to history (204), then 404; a re-created key keeps counting versions", async () => {
    await putEntry(t, c.a.slug, c.devA, { bundle: c.a.slug, namespace: "app", key: "bye", locale: "en", value: "Bye" });
    await putEntry(t, c.a.slug, c.devA, { bundle: c.a.slug, namespace: "app", key: "bye", locale: "fr", value: "Salut" });
    const path = tr(c.a.slug, `/entries?bundle=${c.a.slug}&namespace=app&key=bye`);
    await expectStatus(await t.request("DELETE", path, { token: c.viewerA.session }), 403);
    await expectStatus(await t.request("DELETE", path, { token: c.devA.session }), 204);
    await expectStatus(await t.request("DELETE", path, { token: c.devA.session }), 404);
    await expectStatus(await t.request("DELETE", tr(c.a.slug, "/entries?bundle=nope&namespace=app&key=bye"), { token: c.devA.session }), 404);
    const hist = t.core.sqlite.query<{ locale: string }, []>("SELECT h.locale FROM tms_history h JOIN tms_keys k ON k.id = h.key_id WHERE k.key = 'bye' AND h.reason = 'deleted' ORDER BY h.locale").all();
    expect(hist.map((h) => h.locale)).toEqual(["en", "fr"]);
    const keys = (await expectStatus<Array<{ key: string }>>(await t.request("GET", tr(c.a.slug, `/entries?bundle=${c.a.slug}`), { token: c.devA.session }), 200)).map((e) => e.key);
    expect(keys).not.toContain("bye");
    expect(await putEntry(t, c.a.slug, c.devA, { bundle: c.a.slug, namespace: "app", key: "bye", locale: "en", value: "Goodbye" })).toBe(2);
    expect(auditRows("entry.delete")).toBe(1);
  });
});

describe("GET …/export/{locale}", () => {
  test("the composed tree with per-key fallback to the source locale; ETag and 304; 404s", async () => {
    const path = tr(c.a.slug, "/export/fr");
    const res = await t.request("GET", path, { token: c.viewerA.session });
    const tree = await expectStatus(res, 200);
    expect(tree.app.greeting).toBe("Salut {name} !");
    expect(tree.app.nav.home).toBe("Home");
    expect(tree.admin.title).toBe("Control room");
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await t.request("GET", path, { token: c.viewerA.session, headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    // A change anywhere in what it composes gives a new ETag.
    await putEntry(t, c.a.slug, c.devA, { bundle: c.a.slug, namespace: "admin", key: "title", locale: "fr", value: "Salle de contrôle" });
    const changed = await t.request("GET", path, { token: c.viewerA.session, headers: { "if-none-match": etag } });
    expect(changed.status).toBe(200);
    expect((await changed.json()).admin.title).toBe("Salle de contrôle");
    expect(changed.headers.get("etag")).not.toBe(etag);

    await expectStatus(await t.request("GET", tr(c.a.slug, "/export/not_a_locale!"), { token: c.viewerA.session }), 404);
    await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr?bundle=nope"), { token: c.viewerA.session }), 404);
    await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr?namespace=nope"), { token: c.viewerA.session }), 404);
    expect(await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr?namespace=admin"), { token: c.viewerA.session }), 200)).toEqual({ title: "Salle de contrôle" });
    await expectStatus(await t.request("GET", tr(c.c.slug, "/export/fr"), { token: c.devC.session }), 404);
    await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr?format=yaml"), { token: c.viewerA.session }), 422);
    await expectStatus(await t.request("GET", path, { token: c.devC.session }), 403);
  });

  test("the composition is computed once per change, not per request", async () => {
    const compute = () => (t.core.locals.get("translations.exports") as Map<string, { entries: unknown[] }>).get(`${c.a.id}|${t.core.sqlite.query<{ id: number }, [string]>("SELECT id FROM tms_bundles WHERE name = ?").get(c.a.slug)!.id}|fr`)!;
    await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr"), { token: c.viewerA.session }), 200);
    const first = compute().entries;
    await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr"), { token: c.viewerA.session }), 200);
    expect(compute().entries).toBe(first);
    // A change in another project's bundle does not recompute this one.
    await putEntry(t, c.b.slug, c.devB, { bundle: String(await createBundle(t, c.b.slug, c.devB, { name: c.b.slug })), namespace: "x", key: "y", locale: "en", value: "z" });
    await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr"), { token: c.viewerA.session }), 200);
    expect(compute().entries).toBe(first);
    await putEntry(t, c.a.slug, c.devA, { bundle: c.a.slug, namespace: "admin", key: "title", locale: "fr", value: "La salle" });
    await expectStatus(await t.request("GET", tr(c.a.slug, "/export/fr"), { token: c.viewerA.session }), 200);
    expect(compute().entries).not.toBe(first);
  });
});

describe("estate-shared bundles and overrides", () => {
  let common: number;
  beforeAll(async () => {
    common = (await expectStatus<Array<{ id: number; name: string }>>(await t.request("GET", "/api/v1/tms/bundles", { token: c.devA.session }), 200)).find((b) => b.name === "common")!.id;
    await putEntry(t, c.a.slug, c.devA, { bundle: "common", namespace: "common", key: "ok", locale: "en", value: "OK" });
    await putEntry(t, c.a.slug, c.devA, { bundle: "common", namespace: "common", key: "cancel", locale: "en", value: "Cancel" });
    await putEntry(t, c.a.slug, c.devA, { bundle: "common", namespace: "common", key: "items", locale: "en", value: "{count, plural, one {# item} other {# items}}" });
  });

  test("every project shares it: GET shared 200 in B and C; B overrides a key in its export only", async () => {
    const view = await expectStatus(await t.request("GET", tr(c.b.slug, `/shared/${common}?locale=de`), { token: c.devB.session }), 200);
    expect(view).toMatchObject({ id: common, locale: "de", name: "common", owner: c.devA.email, project: c.a.slug, version: null, source_locale: "en" });
    expect(view.rows.map((r: { key: string }) => r.key)).toEqual(["cancel", "items", "ok"]);
    expect(view.rows[0]).toEqual({ key: "cancel", namespace: "common", override_value: null, removed: false, values: { en: "Cancel" } });

    expect((await expectStatus(await t.request("PUT", tr(c.b.slug, `/shared/${common}/overrides`), { token: c.devB.session, body: { namespace: "common", key: "cancel", locale: "en", value: "Never mind" } }), 200)).version).toBe(1);
    expect((await expectStatus(await t.request("PUT", tr(c.b.slug, `/shared/${common}/overrides`), { token: c.devB.session, body: { namespace: "common", key: "cancel", locale: "en", value: "Forget it" } }), 200)).version).toBe(2);
    const b = await expectStatus(await t.request("GET", tr(c.b.slug, "/export/en"), { token: c.devB.session }), 200);
    expect(b.common).toEqual({ cancel: "Forget it", items: "{count, plural, one {# item} other {# items}}", ok: "OK" });
    const a = await expectStatus(await t.request("GET", tr(c.a.slug, "/export/en"), { token: c.devA.session }), 200);
    expect(a.common.cancel).toBe("Cancel");
    const summary = await expectStatus(await t.request("GET", tr(c.b.slug), { token: c.devB.session }), 200);
    expect(summary.shared).toContainEqual({ id: common, keys: 3, name: "common", overrides: 1, owner: c.devA.email, project: c.a.slug, removed: 0, version: null, kind: "estate", source_locale: "en" });
    expect(auditRows("override.set")).toBe(2);
  });

  test("overrides: 404 for a key the bundle lacks or a bundle not shared, 422 for bad values, 403 without write", async () => {
    const put = (slug: string, token: string, bundle: number, body: Record<string, unknown>) =>
      t.request("PUT", tr(slug, `/shared/${bundle}/overrides`), { token, body: { namespace: "common", key: "ok", locale: "fr", value: "D'accord", ...body } });
    await expectStatus(await put(c.b.slug, c.devB.session, common, { key: "nope" }), 404);
    const widgets = (await expectStatus<Array<{ id: number; name: string }>>(await t.request("GET", "/api/v1/tms/bundles", { token: c.devB.session }), 200)).find((b) => b.name === "@ops/tms-widgets")!.id;
    await expectStatus(await put(c.b.slug, c.devB.session, widgets, {}), 404);
    await expectStatus(await put(c.b.slug, c.devB.session, common, { key: "items", value: "{n, plural, one {# truc} other {# trucs}}" }), 422);
    await expectStatus(await put(c.b.slug, c.devB.session, common, { value: "" }), 422);
    await expectStatus(await put(c.b.slug, c.devB.session, common, { namespace: "no spaces" }), 422);
    await expectStatus(await put(c.a.slug, c.devB.session, common, {}), 403);
    await expectStatus(await t.request("GET", tr(c.b.slug, `/shared/${widgets}`), { token: c.devB.session }), 404);
    await expectStatus(await t.request("GET", tr(c.b.slug, `/shared/${common}?locale=bad_locale`), { token: c.devB.session }), 422);
    await expectStatus(await t.request("GET", tr(c.b.slug, `/shared/${common}`), { token: c.devA.session }), 403);
  });

  test("DELETE override: 204, the shared value composes again; then 404", async () => {
    const path = tr(c.b.slug, `/shared/${common}/overrides?namespace=common&key=cancel&locale=en`);
    await expectStatus(await t.request("DELETE", path, { token: c.devB.session }), 204);
    expect((await expectStatus(await t.request("GET", tr(c.b.slug, "/export/en"), { token: c.devB.session }), 200)).common.cancel).toBe("Cancel");
    await expectStatus(await t.request("DELETE", path, { token: c.devB.session }), 404);
    const hist = t.core.sqlite.query<{ value: string; reason: string }, [string]>("SELECT value, reason FROM tms_history WHERE project_id = ? ORDER BY id").all(c.b.id);
    expect(hist).toEqual([
      { value: "Never mind", reason: "replaced" },
      { value: "Forget it", reason: "deleted" },
    ]);
  });

  test("a deleted shared key stays while an override uses it, flagged removed and no longer composed", async () => {
    await expectStatus(await t.request("PUT", tr(c.b.slug, `/shared/${common}/overrides`), { token: c.devB.session, body: { namespace: "common", key: "ok", locale: "en", value: "Sure" } }), 200);
    await expectStatus(await t.request("DELETE", tr(c.a.slug, "/entries?bundle=common&namespace=common&key=ok"), { token: c.devA.session }), 204);
    const view = await expectStatus(await t.request("GET", tr(c.b.slug, `/shared/${common}?locale=en`), { token: c.devB.session }), 200);
    expect(view.rows.find((r: { key: string }) => r.key === "ok")).toEqual({ key: "ok", namespace: "common", override_value: "Sure", removed: true, values: {} });
    expect((await expectStatus(await t.request("GET", tr(c.b.slug), { token: c.devB.session }), 200)).shared.find((s: { id: number }) => s.id === common)).toMatchObject({ keys: 2, overrides: 1, removed: 1 });
    expect((await expectStatus(await t.request("GET", tr(c.b.slug, "/export/en"), { token: c.devB.session }), 200)).common.ok).toBeUndefined();
    // C has no override: the key is simply gone for it.
    expect((await expectStatus(await t.request("GET", tr(c.c.slug, `/shared/${common}`), { token: c.devC.session }), 200)).rows.map((r: { key: string }) => r.key)).toEqual(["cancel", "items"]);
  });
});

describe("package bundles: versions and attachments", () => {
  let widgets: number;
  beforeAll(async () => {
    widgets = (await expectStatus<Array<{ id: number; name: string }>>(await t.request("GET", "/api/v1/tms/bundles", { token: c.devA.session }), 200)).find((b) => b.name === "@ops/tms-widgets")!.id;
  });

  test("register: 404 never published, 422 not a package bundle or a bad tree, 200 with counts", async () => {
    const path = tr(c.a.slug, `/bundles/${widgets}/versions`);
    const tree = { widgets: { save: "Save", count: "{n} widgets", empty: "", list: ["a"] }, top: "Top" };
    const never = await expectStatus(await t.request("POST", path, { token: c.devA.session, body: { locale: "en", version: "1.0.0", tree } }), 404);
    expect(never.message).toContain("never published");
    await publishNpm(t, c.devA, "@ops/tms-widgets", "1.0.0");
    expect(await expectStatus(await t.request("POST", path, { token: c.devA.session, body: { locale: "en", version: "1.0.0", tree } }), 200)).toEqual({ keys: 3, skipped: 2, written: 3 });
    // Again: nothing new to write.
    expect(await expectStatus(await t.request("POST", path, { token: c.devA.session, body: { locale: "en", version: "1.0.0", tree } }), 200)).toEqual({ keys: 3, skipped: 2, written: 0 });
    // By package name as well; a French file.
    const byName = tr(c.a.slug, `/bundles/${encodeURIComponent("@ops/tms-widgets")}/versions`);
    expect(await expectStatus(await t.request("POST", byName, { token: c.devA.session, body: { locale: "fr", version: "1.0.0", tree: { widgets: { save: "Enregistrer" } } } }), 200)).toEqual({ keys: 1, skipped: 0, written: 1 });
    const bad = await expectStatus(await t.request("POST", byName, { token: c.devA.session, body: { locale: "de", version: "1.0.0", tree: { widgets: { count: "{count} Widgets" } } } }), 422);
    expect(bad.message).toContain("lacks {n}");
    await expectStatus(await t.request("POST", byName, { token: c.devA.session, body: { locale: "de", version: "1.0.0", tree: ["not", "an", "object"] } }), 422);
    await expectStatus(await t.request("POST", byName, { token: c.devA.session, body: { locale: "de", version: "1.0.0", tree: { "bad ns": { a: "b" } } } }), 422);
    await expectStatus(await t.request("POST", tr(c.a.slug, `/bundles/${c.a.slug}/versions`), { token: c.devA.session, body: { locale: "en", version: "1.0.0", tree } }), 422);
    await expectStatus(await t.request("POST", tr(c.b.slug, `/bundles/${widgets}/versions`), { token: c.devB.session, body: { locale: "en", version: "1.0.0", tree } }), 404);
    await expectStatus(await t.request("POST", path, { token: c.viewerA.session, body: { locale: "en", version: "1.0.0", tree } }), 403);
    expect(auditRows("version.register")).toBe(2);
  });

  test("attach: 404 unknown bundle or version, 422 not a package bundle; 200 then DELETE 204 and 404", async () => {
    const post = (body: Record<string, unknown>) => t.request("POST", tr(c.b.slug, "/attachments"), { token: c.devB.session, body });
    await expectStatus(await post({ bundle: 999999, version: "1.0.0" }), 404);
    await expectStatus(await post({ bundle: widgets, version: "9.9.9" }), 404);
    const common = (await expectStatus<Array<{ id: number; name: string }>>(await t.request("GET", "/api/v1/tms/bundles", { token: c.devB.session }), 200)).find((b) => b.name === "common")!.id;
    expect((await expectStatus(await post({ bundle: common, version: "1.0.0" }), 422)).message).toContain("estate-shared");
    const own = (await expectStatus<{ own: Array<{ id: number }> }>(await t.request("GET", tr(c.b.slug), { token: c.devB.session }), 200)).own[0].id;
    expect((await expectStatus(await post({ bundle: own, version: "1.0.0" }), 422)).message).toContain("not a package bundle");
    const attached = await expectStatus(await post({ bundle: widgets, version: "1.0.0" }), 200);
    expect(attached).toMatchObject({ id: widgets, keys: 3, name: "@ops/tms-widgets", version: "1.0.0", project: c.a.slug, kind: "package" });
    const fr = await expectStatus(await t.request("GET", tr(c.b.slug, "/export/fr"), { token: c.devB.session }), 200);
    expect(fr.widgets).toEqual({ count: "{n} widgets", save: "Enregistrer" });
    expect(fr.translation).toEqual({ top: "Top" });
    await expectStatus(await t.request("POST", tr(c.b.slug, "/attachments"), { token: c.viewerA.session, body: { bundle: widgets, version: "1.0.0" } }), 403);
    await expectStatus(await t.request("DELETE", tr(c.b.slug, `/attachments/${widgets}`), { token: c.devB.session }), 204);
    await expectStatus(await t.request("DELETE", tr(c.b.slug, `/attachments/${widgets}`), { token: c.devB.session }), 404);
    expect((await expectStatus(await t.request("GET", tr(c.b.slug, "/export/fr"), { token: c.devB.session }), 200)).widgets).toBeUndefined();
    expect(auditRows("attachment.create")).toBe(1);
    expect(auditRows("attachment.delete")).toBe(1);
  });

  test("a package bundle's keys come from its versions: a value for an unknown key is 422", async () => {
    const res = await expectStatus(await t.request("PUT", tr(c.a.slug, "/entries"), { token: c.devA.session, body: { bundle: "@ops/tms-widgets", namespace: "widgets", key: "new", locale: "en", value: "New" } }), 422);
    expect(res.message).toContain("registered versions");
    // Editing a shipped key's translation is fine; it is not rewritten by the next registration.
    await putEntry(t, c.a.slug, c.devA, { bundle: "@ops/tms-widgets", namespace: "widgets", key: "save", locale: "fr", value: "Sauvegarder" });
    expect(await expectStatus(await t.request("POST", tr(c.a.slug, `/bundles/${widgets}/versions`), { token: c.devA.session, body: { locale: "fr", version: "1.0.0", tree: { widgets: { save: "Enregistrer" } } } }), 200)).toEqual({ keys: 1, skipped: 0, written: 0 });
  });
});

describe("GET /api/v1/tms/bundles and GET …/translations", () => {
  test("shared, then package, then project bundles; own bundles only where the caller reads translations", async () => {
    const all = await expectStatus<Array<{ name: string; kind: string; project: string; package?: string | null; latest_version?: string | null }>>(await t.request("GET", "/api/v1/tms/bundles", { token: c.devC.session }), 200);
    const kinds = all.map((b) => b.kind);
    expect(kinds).toEqual([...kinds].sort((x, y) => ["estate", "package", "own"].indexOf(x) - ["estate", "package", "own"].indexOf(y)));
    expect(all.find((b) => b.name === "@ops/tms-widgets")).toMatchObject({ package: "npm:@ops/tms-widgets", latest_version: "1.0.0", project: c.a.slug, strings: 3, languages: 2 });
    expect(all.some((b) => b.kind === "own" && b.project !== c.c.slug)).toBe(false);
    const forA = await expectStatus<Array<{ name: string }>>(await t.request("GET", "/api/v1/tms/bundles", { token: c.devA.session }), 200);
    expect(forA.map((b) => b.name)).toContain(c.a.slug);
  });

  test("the project page lists its own bundles with counts", async () => {
    const res = await expectStatus(await t.request("GET", tr(c.a.slug), { token: c.viewerA.session }), 200);
    const own = res.own.find((b: { name: string }) => b.name === c.a.slug);
    expect(own).toMatchObject({ languages: 3, namespaces: 2, kind: "own", source_locale: "en" });
    expect(own.strings).toBe(4);
    expect(res.shared.map((s: { name: string }) => s.name)).toEqual(["common"]);
    await expectStatus(await t.request("GET", tr(c.a.slug), { token: c.devC.session }), 403);
    await expectStatus(await t.request("GET", tr("no-such-project"), { token: c.devC.session }), 404);
  });
});

describe("an archived project takes no translation changes", () => {
  test("409 archived", async () => {
    const owner = await (await import("../../../test/fixtures")).makeOwner(t);
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${c.c.slug}`, { token: owner.session, body: { archived: true } }), 200);
    expect((await expectStatus(await t.request("POST", tr(c.c.slug, "/bundles"), { token: c.devC.session, body: { name: "late" } }), 409)).error).toBe("archived");
    await expectStatus(await t.request("PATCH", `/api/v1/projects/${c.c.slug}`, { token: owner.session, body: { archived: false } }), 200);
  });
});
