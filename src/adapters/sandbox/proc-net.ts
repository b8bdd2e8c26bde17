/**
 * The listening TCP sockets a process's network namespace holds on a port, read from
 * /proc/<pid>/net/tcp and tcp6 (the kernel's hex form: `0100007F` is 127.0.0.1, IPv6 as 32 hex
 * digits). The sandbox's namespaces and the Docker runtime's containers both ask it.
 */
import { readFileSync } from "node:fs";

const LISTEN = "0A";

/** The hex local addresses of the sockets listening on `port` in `pid`'s namespace (empty when it cannot be read). */
export function listeningAddresses(pid: number, port: number): string[] {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  const out: string[] = [];
  for (const file of ["tcp", "tcp6"]) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4 || f[3] !== LISTEN) continue;
      const [addr, p] = f[1]!.split(":");
      if (p === hex) out.push(addr!);
    }
  }
  return out;
}
