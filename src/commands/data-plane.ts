/**
 * `ops data-plane` and `ops ingress` in the command table, for `ops --help` and the README's
 * table: `ops serve` starts them (decision 0600), and they run through their own lean entry
 * (src/dataplane/main.ts), which these definitions call too.
 */
import { EXIT, type Command } from "./types";

const dataDir = { "data-dir": { type: "string", value: "DIR", env: "OPS_DATA_DIR", description: "Data directory (default ./ops-data)" } } as const;

async function run(name: "data-plane" | "ingress", flags: Record<string, unknown>): Promise<number> {
  const { runPlaneCommand } = await import("../dataplane/main");
  const argv: string[] = [name];
  if (typeof flags["data-dir"] === "string") argv.push("--data-dir", flags["data-dir"]);
  return (await runPlaneCommand(argv)) ?? EXIT.failure;
}

export const dataPlaneCommand: Command = {
  name: "data-plane",
  side: "server",
  summary: "Run the data plane: replicas and the ingress, apart from the API (ops serve starts it)",
  usage: "[--data-dir DIR]",
  description:
    "Supervises every replica and keeps the ingress process serving with the last routes and certificates it was given, while the control plane (ops serve) is down, restarting or crashed. ops serve starts one per data dir in a session of its own and attaches to it over run/data-plane/control.sock; OPS_DATA_PLANE=inline keeps everything in the one process instead.",
  flags: dataDir,
  run: (ctx) => run("data-plane", ctx.flags),
};

export const ingressCommand: Command = {
  name: "ingress",
  side: "server",
  summary: "Run the ingress process (the data plane starts and restarts it)",
  usage: "[--data-dir DIR]",
  description: "Serves OPS_INGRESS_LISTEN and OPS_INGRESS_TLS_LISTEN with the routes and certificates its data plane hands it over the IPC channel; it runs only as the data plane's child.",
  flags: dataDir,
  run: (ctx) => run("ingress", ctx.flags),
};
