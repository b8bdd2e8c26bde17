/**
 * Issue 33's memory figure: the idle memory of every process of `ops serve` (the compiled binary,
 * an empty data dir, no apps) with its data plane (the control plane, `ops data-plane` and `ops
 * ingress`, decision 0600) beside the same server in one process (`OPS_DATA_PLANE=inline`), after
 * a settling pause; alternating, twice each. RSS counts the binary's shared pages once per
 * process; PSS shares them out, which is what the machine actually spends.
 */
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, type BenchContext } from "./lib";
import { memoryOf, processTree as tree } from "./proc-memory";

export const name = "data-plane";
export const description = "idle memory of ops serve with its data plane (three processes) vs in one process";

function servePid(port: number): number {
  for (const n of readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const cmd = readFileSync(`/proc/${n}/cmdline`, "utf8").split("\0");
      if (cmd.includes("serve") && cmd.includes(`127.0.0.1:${port}`)) return Number(n);
    } catch {
      // gone
    }
  }
  throw new Error("ops serve's process was not found");
}

export async function run(ctx: BenchContext): Promise<string> {
  // OPS_BENCH_BEFORE=<an older ops binary>: that binary's one process as a third side (the figure
  // the issue compares with is ops before its data plane).
  const before = process.env.OPS_BENCH_BEFORE ?? null;
  const sample = async (mode: "inline" | "process" | "before") => {
    const server =
      mode === "before"
        ? await ctx.startServer([before!, "serve", "--data-dir", `${mkdtempSync(path.join(tmpdir(), "ops-bench-before-"))}/data`, "--listen", "127.0.0.1:{port}"], "/readyz")
        : await ctx.startOps({ OPS_DATA_PLANE: mode, OPS_INGRESS_LISTEN: `127.0.0.1:${freePort()}` });
    await Bun.sleep(3000);
    const pids = tree(servePid(Number(new URL(server.url).port)));
    const m = memoryOf(pids);
    await server.stop();
    return { ...m, processes: pids.length };
  };
  const inline: Array<{ rss: number; pss: number; processes: number }> = [];
  const planes: Array<{ rss: number; pss: number; processes: number }> = [];
  const old: Array<{ rss: number; pss: number; processes: number }> = [];
  for (let i = 0; i < 2; i++) {
    inline.push(await sample("inline"));
    planes.push(await sample("process"));
    if (before) old.push(await sample("before"));
  }
  const low = (xs: typeof inline, k: "rss" | "pss") => Math.min(...xs.map((x) => x[k]));
  const mib = (k: number) => (k / 1024).toFixed(1);
  const rssRatio = low(planes, "rss") / low(inline, "rss");
  const pssRatio = low(planes, "pss") / low(inline, "pss");
  const beforeLine = before
    ? `; the older binary's one process RSS ${mib(low(old, "rss"))} MiB (PSS ${mib(low(old, "pss"))} MiB), the data plane's processes against it: PSS ${(low(planes, "pss") / low(old, "pss")).toFixed(2)}, RSS ${(low(planes, "rss") / low(old, "rss")).toFixed(2)}`
    : "";
  return (
    `data-plane: idle, no apps: one process (OPS_DATA_PLANE=inline) RSS ${mib(low(inline, "rss"))} MiB (PSS ${mib(low(inline, "pss"))} MiB); with the data plane, ${planes[0]!.processes} processes together RSS ${mib(low(planes, "rss"))} MiB (PSS ${mib(low(planes, "pss"))} MiB);` +
    ` ratio RSS ${rssRatio.toFixed(2)}, PSS ${pssRatio.toFixed(2)} (goal <= 1.10: ${pssRatio <= 1.1 ? "met" : "not met"} by PSS, ${rssRatio <= 1.1 ? "met" : "not met"} by RSS)${beforeLine} (lowest of 2 alternating samples each)`
  );
}
