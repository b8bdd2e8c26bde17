/**
 * The log search plan over several segments (a small size budget makes segments small): newest
 * first across segments, rare, common and absent terms, case folding (ASCII in SQL, Unicode in
 * JavaScript), terms shorter than a trigram, LIKE's wildcards taken literally, late lines in
 * order; then retention dropping whole segments and the size budget evicting the oldest first.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import { createTestApp, expectStatus, type TestApp } from "../../../test/harness";
import { makeProject, makeMachine } from "../../../test/fixtures";
import { writerOf, segmentRowsFor } from "./writer";
import { listSegments } from "./segments";
import { RETENTION_TASK } from "./jobs";
import type { LogRow } from "./rows";
import type { ProjectRow } from "../access/service";

const BUDGET = 6 * 1024 * 1024;
let t: TestApp;
let token: string;
let shop: ProjectRow;
let base: number;

function line(ms: number, message: string, over: Partial<LogRow> = {}): LogRow {
  return { ms, project: shop.id, environment: "production", service: "api", severity: 9, level: null, host: "h", target: "app.http", message, traceId: null, spanId: null, client: null, method: null, route: null, status: null, ...over };
}

async function write(rows: LogRow[]): Promise<void> {
  // In chunks, as requests would arrive: the writer starts a new segment between batches.
  for (let i = 0; i < rows.length; i += 1000) await writerOf(t.core).submit({ logs: rows.slice(i, i + 1000), spans: [], points: [] }, 1000);
}

const messages = async (query: string) => (await expectStatus(await t.request("GET", `/api/v1/obs/logs?${query}`, { token }), 200)).map((e: { message: string }) => e.message) as string[];

beforeAll(async () => {
  t = await createTestApp({ env: { OPS_TELEMETRY_MAX_BYTES: String(BUDGET) } });
  shop = makeProject(t, "shop");
  token = (await makeMachine(t, [{ role: "developer", project: "shop" }])).token;
  base = t.clock.now() - 3_600_000;
  const rows: LogRow[] = [];
  for (let i = 0; i < 9000; i++) {
    let msg = `request ${i} handled in ${i % 97} ms${i % 2 === 0 ? " commonterm" : ""}`;
    if (i === 17 || i === 4500) msg += " rarezebra";
    rows.push(line(base + i * 100, msg));
  }
  await write(rows);
});
afterAll(() => t.close());

describe("the search plan", () => {
  test("the lines are spread over several segments", () => {
    expect(segmentRowsFor(BUDGET)).toBeLessThan(3000);
    expect(listSegments(t.core.telemetrySqlite).length).toBeGreaterThanOrEqual(3);
  });

  test("no q: the newest lines, newest first, across segments", async () => {
    const got = await messages("limit=1000&service=api");
    expect(got).toHaveLength(1000);
    expect(got[0]).toStartWith("request 8999 ");
    expect(got[999]).toStartWith("request 8000 ");
  });

  test("a common term: exactly the newest 200 matches", async () => {
    const got = await messages("q=commonterm");
    expect(got).toHaveLength(200);
    expect(got[0]).toStartWith("request 8998 ");
    expect(got[199]).toStartWith("request 8600 ");
  });

  test("a rare term: every match, in the oldest segment too", async () => {
    expect(await messages("q=RareZebra")).toEqual(["request 4500 handled in 38 ms commonterm rarezebra", "request 17 handled in 17 ms rarezebra"]);
  });

  test("an absent term: nothing", async () => {
    expect(await messages("q=nosuchthing")).toEqual([]);
    expect(await messages("q=handled%20in%2096%20ms%20commonterm%20rarezebra")).toEqual([]);
  });

  test("time window and limit bound the search", async () => {
    const to = new Date(base + 100 * 100).toISOString();
    const from = new Date(base + 90 * 100).toISOString();
    const got = await messages(`from=${from}&to=${to}&limit=5`);
    expect(got.map((m) => m.split(" ")[1])).toEqual(["100", "99", "98", "97", "96"]);
  });
});

describe("matching", () => {
  beforeAll(async () => {
    const now = t.clock.now();
    await write([
      line(now - 5000, "Élève inscrit à l'ÉCOLE du quartier"),
      line(now - 4000, "progress 50% done"),
      line(now - 3900, "progress 500 done"),
      line(now - 3800, "a_b matched literally"),
      line(now - 3700, "axb should not match an underscore"),
      line(now - 3600, "Zq tiny", { target: "mod.zq" }),
      // A late line: sent now, dated an hour before the rest; it sorts by its own time.
      line(base - 60_000, "late arrival from the past"),
    ]);
  });

  test("case-insensitive: ASCII through SQL, Unicode through JavaScript", async () => {
    expect(await messages("q=%C3%A9cole")).toEqual(["Élève inscrit à l'ÉCOLE du quartier"]);
    expect(await messages("q=%C3%89L%C3%88VE")).toEqual(["Élève inscrit à l'ÉCOLE du quartier"]);
    expect(await messages("q=INSCRIT")).toEqual(["Élève inscrit à l'ÉCOLE du quartier"]);
  });

  test("q shorter than a trigram scans newest first", async () => {
    expect(await messages("q=zQ&limit=1")).toEqual(["Zq tiny"]);
    expect(await messages("q=%C3%A9&limit=3")).toEqual(["Élève inscrit à l'ÉCOLE du quartier"]);
  });

  test("% and _ in q are literal", async () => {
    expect(await messages("q=50%25")).toEqual(["progress 50% done"]);
    expect(await messages("q=a_b")).toEqual(["a_b matched literally"]);
  });

  test("a burst of more lines in one millisecond than it has keys keeps every line", async () => {
    const ms = t.clock.now() - 10;
    await write(Array.from({ length: 9000 }, (_, i) => line(ms, `burst ${i}`, { service: "burst" })));
    const stored = t.core.telemetrySqlite.query("SELECT coalesce(sum(n), 0) AS n FROM log_volume WHERE service = 'burst'").get() as { n: number };
    expect(stored.n).toBe(9000);
    expect(await messages("service=burst&limit=1000")).toHaveLength(1000);
    expect((await messages("q=burst%208999&service=burst")).length).toBe(1);
  });

  test("a late line is found in its place in time", async () => {
    expect(await messages("q=late%20arrival")).toEqual(["late arrival from the past"]);
    const oldest = await messages(`to=${new Date(base - 1).toISOString()}&limit=1`);
    expect(oldest).toEqual(["late arrival from the past"]);
  });
});

describe("retention and the size budget", () => {
  test("the budget holds: the oldest lines go first, the newest stay", async () => {
    const writer = writerOf(t.core);
    const start = t.clock.now() - 1_800_000;
    const filler = "x".repeat(400);
    const rows: LogRow[] = [];
    for (let i = 0; i < 30_000; i++) rows.push(line(start + i * 10, `bulk ${i} ${filler}`, { service: "bulk" }));
    for (let i = 0; i < rows.length; i += 2000) {
      await writer.submit({ logs: rows.slice(i, i + 2000), spans: [], points: [] }, 2000 * 400);
      // The writer checks the budget as it writes, at most every 2 s of the clock.
      t.clock.advance(2001);
    }
    await writer.call("evict", { now: t.clock.now(), maxBytes: BUDGET });
    const used = t.core.telemetrySqlite.query("SELECT (page_count - freelist_count) * page_size AS n FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()").get() as { n: number };
    expect(used.n).toBeLessThanOrEqual(BUDGET);
    const newest = await messages("service=bulk&limit=1");
    expect(newest[0]).toStartWith("bulk 29999 ");
    expect(await messages("q=rarezebra")).toEqual([]);
    // Only as much went as the budget needed: at least half of it is still in use.
    expect(used.n).toBeGreaterThan(BUDGET / 2);
  });

  test("retention drops whole segments once they are past it", async () => {
    const before = listSegments(t.core.telemetrySqlite).length;
    t.clock.advance(15 * 86_400_000);
    await writerOf(t.core).submit({ logs: [line(t.clock.now(), "after the stop")], spans: [], points: [] }, 10);
    await t.core.scheduler.runNow(RETENTION_TASK);
    const after = listSegments(t.core.telemetrySqlite);
    expect(after.length).toBeLessThan(before);
    const tables = t.core.telemetrySqlite.query("SELECT count(*) AS n FROM sqlite_master WHERE name LIKE 'logs_fts_%' AND type = 'table' AND sql LIKE 'CREATE VIRTUAL%'").get() as { n: number };
    expect(tables.n).toBe(after.length);
    expect(await messages("limit=5")).toEqual(["after the stop"]);
  });
});
