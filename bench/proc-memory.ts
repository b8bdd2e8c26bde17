/** What a process tree holds in memory, from /proc: the benches of idle memory (data-plane, startup) share it. */
import { readFileSync, readdirSync } from "node:fs";

/** `pid` and every process below it. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const n of readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(n)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    out.push(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(pid);
  return out;
}

/** RSS and PSS (KiB) summed over `pids` (a process gone meanwhile counts 0). */
export function memoryOf(pids: number[]): { rss: number; pss: number } {
  let rss = 0;
  let pss = 0;
  for (const p of pids) {
    try {
      const text = readFileSync(`/proc/${p}/smaps_rollup`, "utf8");
      rss += Number(/^Rss:\s+(\d+)/m.exec(text)?.[1] ?? 0);
      pss += Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return { rss, pss };
}
