/**
 * The runtime contract (src/adapters/runtime/types.ts) as bun:test cases, for every runtime to
 * pass (STYLE rule 22): the process runtime and the Docker Engine's. A suite calls
 * `runtimeContract(name, setup)`; `setup` makes the runtime with the hooks given and an image of
 * an app that answers like runtime-fixtures.ts's APP_JS: `/` as JSON (port, greeting, secret),
 * `/crash` exits 3, `/hog` eats memory, SIGTERM prints "got SIGTERM" and exits, and it prints
 * "listening on <PORT>". `serve` is the shell command that starts that app (for `command`).
 */
import { afterAll, beforeAll, describe, expect, test as bunTest } from "bun:test";
import { RuntimeError, type OutputStream, type ReplicaSpec, type ReplicaStatus, type Runtime, type RuntimeHooks, type RuntimeImage } from "../../src/adapters/runtime/types";

export interface ContractSetup {
  runtime: Runtime;
  image: RuntimeImage;
  /** A shell command that starts the app in `image` (what its Cmd does). */
  serve: string;
  /** What else setup started, torn down after the replicas stopped. */
  teardown?: () => Promise<void>;
}

const test = (name: string, fn: () => Promise<void>, ms = 120_000) => bunTest(name, fn, ms);

/** Register the contract's cases under `describe("runtime contract: <name>")`. */
export function runtimeContract(name: string, setup: (hooks: RuntimeHooks) => Promise<ContractSetup>): void {
  const lines: Array<{ id: string; stream: OutputStream; line: string }> = [];
  const states: ReplicaStatus[] = [];
  let s: ContractSetup;
  let n = 0;
  const id = (what: string) => `c${++n}-${what}`;
  const linesOf = (rid: string, stream?: OutputStream) => lines.filter((l) => l.id === rid && (!stream || l.stream === stream)).map((l) => l.line);
  const statesOf = (rid: string) => states.filter((x) => x.id === rid);
  const until = async <T>(what: string, check: () => T | false | null | undefined | Promise<T | false | null | undefined>, ms = 30_000): Promise<T> => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      const v = await check();
      if (v !== undefined && v !== null && v !== false) return v as T;
      await Bun.sleep(50);
    }
    throw new Error(`timed out after ${ms} ms waiting for ${what}`);
  };
  const running = (rid: string) => until(`${rid} running`, () => s.runtime.status(rid)?.state === "running" && s.runtime.status(rid));
  const get = async (st: ReplicaStatus, p = "/") => {
    const res = await fetch(`http://${st.host}:${st.port}${p}`, { signal: AbortSignal.timeout(5000) });
    return p === "/" ? ((await res.json()) as Record<string, unknown>) : await res.text();
  };
  const start = (spec: Omit<ReplicaSpec, "image"> & { image?: RuntimeImage }) => s.runtime.start({ image: s.image, ...spec });

  describe(`runtime contract: ${name}`, () => {
    beforeAll(async () => {
      s = await setup({ onLine: (rid, stream, line) => lines.push({ id: rid, stream, line }), onState: (st) => states.push({ ...st }) });
    }, 300_000);
    afterAll(async () => {
      await s?.runtime.stopAll(1000);
      await s?.teardown?.();
    }, 120_000);

    test("start: starting, then running once its port accepts; status and list show it with its labels", async () => {
      const rid = id("web");
      const st = await start({ id: rid, labels: { service: "web", environment: "production" } });
      // An engine may see the app answer before start() returns; it never says running before it does.
      expect(["starting", "running"]).toContain(st.state);
      expect(st.id).toBe(rid);
      const up = await running(rid);
      if (s.runtime.kind !== "swarm") expect(up.host).toBe(st.host);
      expect(up.port).toBe(st.port);
      expect(up.labels).toMatchObject({ service: "web", environment: "production" });
      expect(up.restarts).toBe(0);
      expect(((await get(up)) as { greeting: string }).greeting).toBe("from-image");
      expect(s.runtime.list().map((x) => x.id)).toContain(rid);
      expect(s.runtime.status("no-such-replica")).toBeNull();
      expect(statesOf(rid).map((x) => x.state)).toContain("running");
      await s.runtime.stop(rid, 1000);
    });

    test("a live id is refused", async () => {
      const rid = id("twice");
      await start({ id: rid });
      await expect(start({ id: rid })).rejects.toBeInstanceOf(RuntimeError);
      expect(s.runtime.list().filter((x) => x.id === rid).length).toBe(1);
      await s.runtime.stop(rid, 1000);
    });

    test("the caller's variables apply after the image's, in order, later winning; PORT is the runtime's", async () => {
      const rid = id("env");
      await start({ id: rid, env: [["GREETING", "first"], ["SECRET", "one"], ["PORT", "1"], ["GREETING", "second"]] });
      const body = (await get(await running(rid))) as { greeting: string; secret: string; port: string };
      expect(body.greeting).toBe("second");
      expect(body.secret).toBe("one");
      expect(body.port).not.toBe("1");
      expect(Number(body.port)).toBeGreaterThan(0);
      await s.runtime.stop(rid, 1000);
    });

    test("output reaches onLine line by line, the replica's secret values masked", async () => {
      const rid = id("lines");
      const secret = "s3cr3t-contract-value-4417";
      await start({ id: rid, command: `echo "the token is $SECRET"; echo "to stderr" >&2; ${s.serve}`, env: [["SECRET", secret]], masked: [secret] });
      await running(rid);
      await until("its lines", () => linesOf(rid, "stdout").some((l) => l.startsWith("listening on")) && linesOf(rid, "stderr").includes("to stderr"));
      const token = linesOf(rid, "stdout").find((l) => l.startsWith("the token is "));
      expect(token).toBeDefined();
      expect(token).not.toContain(secret);
      expect(lines.some((l) => l.line.includes(secret))).toBe(false);
      await s.runtime.stop(rid, 1000);
    });

    test("a crash: crashed with its exit, then restarted (restarts + 1) on the same port, and host unless the engine places it anew (Swarm)", async () => {
      const rid = id("crash");
      const first = await running((await start({ id: rid, restart: { initialMs: 200 } })).id);
      expect(await get(first, "/crash")).toBe("bye");
      const crashed = await until("crashed", () => statesOf(rid).find((x) => x.state === "crashed"));
      expect(crashed.lastExit).toMatchObject({ code: 3, oomKilled: false });
      const again = await until("running again", () => {
        const st = s.runtime.status(rid);
        return st?.state === "running" && st.restarts === 1 && st;
      });
      // Swarm schedules a restarted task like a new one: it may run on another node; its status says which.
      expect(again.port).toBe(first.port);
      if (s.runtime.kind !== "swarm") expect(again.host).toBe(first.host);
      expect(((await get(again)) as { greeting: string }).greeting).toBe("from-image");
      await s.runtime.stop(rid, 1000);
    });

    test("memory: past its limit the app is OOM-killed and says so, or the limit is reported not enforced", async () => {
      const rid = id("hog");
      const st = await start({ id: rid, memoryMb: 96, restart: { initialMs: 60_000 } });
      expect(st.memory.limitMb).toBe(96);
      if (!st.memory.enforced) {
        expect(st.memory.reason).toBeTruthy();
        await s.runtime.stop(rid, 1000);
        return;
      }
      await get(await running(rid), "/hog");
      const killed = await until("the OOM kill", () => statesOf(rid).find((x) => x.lastExit?.oomKilled), 60_000);
      expect(killed.state).toBe("crashed");
      await s.runtime.stop(rid, 1000);
    });

    test("stop: SIGTERM first (the app says so and exits), then stopped; gone from list and status", async () => {
      const rid = id("stop");
      await running((await start({ id: rid })).id);
      const t0 = performance.now();
      const last = await s.runtime.stop(rid, 8000);
      expect(performance.now() - t0).toBeLessThan(6000);
      expect(last?.state).toBe("stopped");
      expect(statesOf(rid).at(-1)?.state).toBe("stopped");
      await until("its SIGTERM line", () => linesOf(rid, "stdout").includes("got SIGTERM"), 5000);
      expect(s.runtime.status(rid)).toBeNull();
      expect(s.runtime.list().map((x) => x.id)).not.toContain(rid);
      expect(await s.runtime.stop(rid)).toBeNull();
    });

    test("stop: a replica that ignores SIGTERM is killed once the grace period is over", async () => {
      const rid = id("deaf");
      await start({ id: rid, command: `trap "" TERM; echo deaf; while true; do sleep 1; done` });
      await until("it runs", () => linesOf(rid).includes("deaf"));
      const t0 = performance.now();
      const last = await s.runtime.stop(rid, 1500);
      const took = performance.now() - t0;
      expect(last?.state).toBe("stopped");
      expect(took).toBeGreaterThan(900);
      expect(took).toBeLessThan(12_000);
      expect(s.runtime.status(rid)).toBeNull();
    });

    test("stopAll stops every replica", async () => {
      const a = id("all-a");
      const b = id("all-b");
      await start({ id: a });
      await start({ id: b });
      await Promise.all([running(a), running(b)]);
      await s.runtime.stopAll(1000);
      expect(s.runtime.list()).toEqual([]);
      for (const rid of [a, b]) expect(statesOf(rid).at(-1)?.state).toBe("stopped");
    });

    test("run: a one-off's exit code and last lines, its secret values masked", async () => {
      const rid = id("once");
      const secret = "one-off-secret-9921";
      const res = await s.runtime.run({ id: rid, image: s.image, command: `echo out-line; echo err-line >&2; echo "db is $SECRET"; exit 7`, env: [["SECRET", secret]], masked: [secret], timeoutMs: 60_000 });
      expect(res).toMatchObject({ code: 7, timedOut: false, oomKilled: false });
      expect(res.tail).toContain("out-line");
      expect(res.tail).toContain("err-line");
      expect(res.tail.some((l) => l.startsWith("db is "))).toBe(true);
      expect(res.tail.join("\n")).not.toContain(secret);
      expect(linesOf(rid, "stdout")).toContain("out-line");
      expect(linesOf(rid, "stderr")).toContain("err-line");
      expect(lines.some((l) => l.line.includes(secret))).toBe(false);
    });

    test("run: a one-off past its timeout is stopped and says timedOut", async () => {
      const t0 = performance.now();
      const res = await s.runtime.run({ id: id("slow"), image: s.image, command: "echo begun; sleep 60", timeoutMs: 1500 });
      expect(res.timedOut).toBe(true);
      expect(res.code === 0 && res.signal === null).toBe(false);
      expect(res.tail).toContain("begun");
      expect(performance.now() - t0).toBeLessThan(20_000);
    });
  });
}
