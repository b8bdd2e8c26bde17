/**
 * The export formats with the tools teams load them with: the JSON tree into i18next with
 * messages formatted by intl-messageformat, the flat JSON by intl-messageformat alone, the PO file
 * through `msgfmt --check` (and back with `msgunfmt`, which shows what gettext will serve), and the
 * XLIFF through fast-xml-parser against the XLIFF 2.0 core structure. The composition comes from
 * three bundles: the project's own, the estate-shared `common`, and an attached package bundle.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import i18next from "i18next";
import { IntlMessageFormat } from "intl-messageformat";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { tmsCast, tr, putEntry, createBundle, claimNpm, publishNpm, type TmsCast } from "./support/translations";

let t: TestApp;
let c: TmsCast;
let dir: string;

beforeAll(async () => {
  t = await createTestApp();
  c = await tmsCast(t, "fmt");
  dir = mkdtempSync(path.join(tmpdir(), "ops-tms-formats-"));
  const app = c.b.slug;
  await createBundle(t, app, c.devB, { name: app });
  const own = (e: { namespace: string; key: string; locale: string; value: string; status?: "translated" | "review" }) => putEntry(t, app, c.devB, { bundle: app, ...e });
  await own({ namespace: "app", key: "greeting", locale: "en", value: "Hello {name}!" });
  await own({ namespace: "app", key: "greeting", locale: "fr", value: "Bonjour {name} !" });
  await own({ namespace: "app", key: "cart.items", locale: "en", value: "{count, plural, =0 {Your cart is empty} one {# item in your cart} other {# items in your cart}}" });
  await own({ namespace: "app", key: "cart.items", locale: "fr", value: "{count, plural, =0 {Votre panier est vide} one {# article dans votre panier} other {# articles dans votre panier}}" });
  await own({ namespace: "app", key: "legal", locale: "en", value: 'Terms & "conditions" apply <b>today</b>\nsecond line' });
  await own({ namespace: "app", key: "legal", locale: "fr", value: "Conditions & « modalités » <b>aujourd'hui</b>\nseconde ligne", status: "review" });
  await own({ namespace: "app", key: "only.english", locale: "en", value: "Only in English, {who}" });
  // Estate-shared common, edited in A.
  await createBundle(t, c.a.slug, c.devA, { name: "common", estate: true });
  await putEntry(t, c.a.slug, c.devA, { bundle: "common", namespace: "common", key: "save", locale: "en", value: "Save" });
  await putEntry(t, c.a.slug, c.devA, { bundle: "common", namespace: "common", key: "save", locale: "fr", value: "Enregistrer" });
  await putEntry(t, c.a.slug, c.devA, { bundle: "common", namespace: "common", key: "gender", locale: "en", value: "{g, select, female {She} male {He} other {They}} replied" });
  await putEntry(t, c.a.slug, c.devA, { bundle: "common", namespace: "common", key: "gender", locale: "fr", value: "{g, select, female {Elle a} male {Il a} other {Iel a}} répondu" });
  // A package bundle from A, attached by B.
  await claimNpm(t, c.a.slug, c.devA, "@ops/fmt-kit");
  const kit = await createBundle(t, c.a.slug, c.devA, { name: "", package: "npm:@ops/fmt-kit" });
  await publishNpm(t, c.devA, "@ops/fmt-kit", "2.0.0");
  await expectStatus(await t.request("POST", tr(c.a.slug, `/bundles/${kit}/versions`), { token: c.devA.session, body: { locale: "en", version: "2.0.0", tree: { kit: { date: "Due {when, date, medium}", price: "{amount, number, ::currency/EUR}" } } } }), 200);
  await expectStatus(await t.request("POST", tr(c.a.slug, `/bundles/${kit}/versions`), { token: c.devA.session, body: { locale: "fr", version: "2.0.0", tree: { kit: { price: "Prix : {amount, number, ::currency/EUR}" } } } }), 200);
  await expectStatus(await t.request("POST", tr(app, "/attachments"), { token: c.devB.session, body: { bundle: kit, version: "2.0.0" } }), 200);
});
afterAll(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

const exportOf = async (format: string, locale = "fr") => {
  const res = await t.request("GET", tr(c.b.slug, `/export/${locale}${format ? `?format=${format}` : ""}`), { token: c.devB.session });
  expect(res.status).toBe(200);
  return res;
};

describe("JSON tree into i18next, formatted with intl-messageformat", () => {
  test("every namespace loads; plural, select, number, date and rich text format in French; a missing key falls back to English", async () => {
    const res = await exportOf("");
    expect(res.headers.get("content-type")).toContain("application/json");
    const tree = (await res.json()) as Record<string, Record<string, unknown>>;
    expect(Object.keys(tree).sort()).toEqual(["app", "common", "kit"]);
    const i18n = i18next.createInstance();
    await i18n.init({ lng: "fr", resources: { fr: tree }, ns: Object.keys(tree), defaultNS: "app", interpolation: { escapeValue: false }, initAsync: false });
    const fmt = (key: string, values: Record<string, unknown> = {}) => {
      const text = i18n.t(key);
      expect(text).not.toBe(key.split(":")[1]);
      return new IntlMessageFormat(text, "fr").format(values) as string;
    };
    expect(fmt("app:greeting", { name: "Ana" })).toBe("Bonjour Ana !");
    expect(fmt("app:cart.items", { count: 0 })).toBe("Votre panier est vide");
    expect(fmt("app:cart.items", { count: 1 })).toBe("1 article dans votre panier");
    expect(fmt("app:cart.items", { count: 3 })).toBe("3 articles dans votre panier");
    expect(fmt("common:gender", { g: "female" })).toBe("Elle a répondu");
    expect(fmt("common:save")).toBe("Enregistrer");
    expect(fmt("kit:price", { amount: 12.5 }).replace(/\s/g, " ")).toBe("Prix : 12,50 €");
    // Not translated: the English text (per-key fallback), still a valid message.
    expect(fmt("app:only.english", { who: "Ana" })).toBe("Only in English, Ana");
    expect(fmt("kit:date", { when: new Date(Date.UTC(2026, 0, 15, 12)) })).toBe("Due 15 janv. 2026");
    const rich = new IntlMessageFormat(i18n.t("app:legal"), "fr").format<string>({ b: (chunks) => `[${chunks.join("")}]` });
    expect([rich].flat().join("")).toBe("Conditions & « modalités » [aujourd'hui]\nseconde ligne");
  });

  test("?namespace= gives one namespace's tree, as an i18next per-namespace file", async () => {
    const res = await t.request("GET", tr(c.b.slug, "/export/fr?namespace=kit"), { token: c.devB.session });
    expect(await expectStatus(res, 200)).toEqual({ date: "Due {when, date, medium}", price: "Prix : {amount, number, ::currency/EUR}" });
  });
});

describe("flat JSON", () => {
  test("one object of namespace.key, each a message intl-messageformat formats", async () => {
    const flat = (await (await exportOf("flat")).json()) as Record<string, string>;
    expect(Object.keys(flat)).toEqual(["app.cart.items", "app.greeting", "app.legal", "app.only.english", "common.gender", "common.save", "kit.date", "kit.price"]);
    expect(new IntlMessageFormat(flat["app.cart.items"]!, "fr").format({ count: 2 })).toBe("2 articles dans votre panier");
    expect(new IntlMessageFormat(flat["common.gender"]!, "fr").format({ g: "x" })).toBe("Iel a répondu");
  });
});

describe("gettext PO", () => {
  test("msgfmt --check accepts it; msgunfmt shows the translations gettext serves (fuzzy and missing ones left to the source)", async () => {
    const res = await exportOf("po");
    expect(res.headers.get("content-type")).toContain("text/x-gettext-translation");
    expect(res.headers.get("content-disposition")).toContain(".fr.po");
    const po = await res.text();
    const file = path.join(dir, "fr.po");
    writeFileSync(file, po);
    const check = Bun.spawnSync(["msgfmt", "--check", "--statistics", "-o", path.join(dir, "fr.mo"), file], { stdout: "pipe", stderr: "pipe" });
    expect(check.stderr.toString()).toContain("5 translated messages, 1 fuzzy translation, 2 untranslated messages");
    expect(check.exitCode).toBe(0);
    expect(po).toContain('msgctxt "app.legal"');
    expect(po).toMatch(/#, fuzzy\nmsgctxt "app\.legal"/);
    expect(po).toContain('msgctxt "app.only.english"\nmsgid "Only in English, {who}"\nmsgstr ""');
    const back = Bun.spawnSync(["msgunfmt", path.join(dir, "fr.mo")], { stdout: "pipe", stderr: "pipe" });
    expect(back.exitCode).toBe(0);
    const served = back.stdout.toString();
    expect(served).toContain('msgctxt "app.greeting"\nmsgid "Hello {name}!"\nmsgstr "Bonjour {name} !"');
    expect(served).toContain('msgctxt "common.save"\nmsgid "Save"\nmsgstr "Enregistrer"');
    expect(served).not.toContain("app.legal");
    expect(served).not.toContain("only.english");
  });

  test("the source locale's PO is complete and checks too", async () => {
    const po = await (await exportOf("po", "en")).text();
    const file = path.join(dir, "en.po");
    writeFileSync(file, po);
    const check = Bun.spawnSync(["msgfmt", "--check", "--statistics", "-o", "/dev/null", file], { stdout: "pipe", stderr: "pipe" });
    expect(check.exitCode).toBe(0);
    expect(check.stderr.toString()).toContain("8 translated messages");
  });
});

describe("XLIFF 2.0", () => {
  test("well-formed, and in the XLIFF 2.0 core structure: files per namespace, units per key, source always, target when translated", async () => {
    const res = await exportOf("xliff");
    expect(res.headers.get("content-type")).toContain("application/xliff+xml");
    const text = await res.text();
    expect(XMLValidator.validate(text)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@", isArray: (name) => ["file", "unit", "segment"].includes(name), trimValues: true }).parse(text);
    const x = doc.xliff;
    expect(x["@xmlns"]).toBe("urn:oasis:names:tc:xliff:document:2.0");
    expect(x["@version"]).toBe("2.0");
    expect(x["@srcLang"]).toBe("en");
    expect(x["@trgLang"]).toBe("fr");
    const allowed: Record<string, string[]> = { xliff: ["@xmlns", "@version", "@srcLang", "@trgLang", "file"], file: ["@id", "@xml:space", "unit"], unit: ["@id", "segment"], segment: ["@state", "source", "target"] };
    const onlyAllowed = (name: string, node: Record<string, unknown>) => expect(Object.keys(node).filter((k) => !allowed[name]!.includes(k))).toEqual([]);
    onlyAllowed("xliff", x);
    const fileIds = x.file.map((f: { "@id": string }) => f["@id"]);
    expect(fileIds).toEqual(["app", "common", "kit"]);
    const units = new Map<string, { source: string; target?: string; state: string }>();
    for (const f of x.file) {
      onlyAllowed("file", f);
      expect(f["@xml:space"]).toBe("preserve");
      const ids = f.unit.map((u: { "@id": string }) => u["@id"]);
      expect(new Set(ids).size).toBe(ids.length);
      for (const u of f.unit) {
        onlyAllowed("unit", u);
        expect(u["@id"]).toMatch(/^[A-Za-z0-9._-]+$/);
        expect(u.segment).toHaveLength(1);
        const s = u.segment[0];
        onlyAllowed("segment", s);
        expect(["initial", "translated", "reviewed", "final"]).toContain(s["@state"]);
        expect(typeof s.source).toBe("string");
        if (s["@state"] === "initial") expect(s.target).toBeUndefined();
        else expect(typeof s.target).toBe("string");
        units.set(`${f["@id"]}:${u["@id"]}`, { source: s.source, target: s.target, state: s["@state"] });
      }
    }
    expect(units.get("app:greeting")).toEqual({ source: "Hello {name}!", target: "Bonjour {name} !", state: "final" });
    expect(units.get("app:legal")).toEqual({ source: 'Terms & "conditions" apply <b>today</b>\nsecond line', target: "Conditions & « modalités » <b>aujourd'hui</b>\nseconde ligne", state: "translated" });
    expect(units.get("app:only.english")).toEqual({ source: "Only in English, {who}", target: undefined, state: "initial" });
    expect(units.get("kit:date")?.state).toBe("initial");
    expect(units.get("kit:price")?.target).toBe("Prix : {amount, number, ::currency/EUR}");
  });
});
