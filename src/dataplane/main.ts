/**
 * The data plane's own entry (decision 0600): `ops data-plane` and `ops ingress` load only what
 * they run (the runtime, the sandbox, the ingress), never the control plane's domains, so a
 * killed ingress serves again within a second and the data plane stays small. `ops serve` starts
 * them through `planeArgv`; the compiled binary routes to here from src/bin.ts.
 */
import { parseArgs } from "node:util";
import { loadConfig, ConfigError, type Config } from "../core/config";
import { CONFIG_ON_STDIN } from "./protocol";
import { createLogger } from "../core/log";

export const PLANE_COMMANDS = ["data-plane", "ingress"] as const;

/** The configuration the starting process wrote on stdin (JSON of its Config), frozen like one loaded here. */
async function configFromStdin(): Promise<Config> {
  const text = await new Response(Bun.stdin.stream()).text();
  const freeze = <T>(v: T): T => {
    if (v && typeof v === "object") for (const x of Object.values(v)) freeze(x);
    return Object.freeze(v);
  };
  return freeze(JSON.parse(text) as Config);
}

/** Run `ops data-plane` or `ops ingress` (argv without the executable); the exit code. */
export async function runPlaneCommand(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  let dataDir: string | undefined;
  try {
    dataDir = parseArgs({ args: rest, options: { "data-dir": { type: "string" } }, strict: true }).values["data-dir"];
  } catch (e) {
    process.stderr.write(`ops ${name}: ${(e as Error).message.split("\n")[0]}\n`);
    return 2;
  }
  let config: Config;
  try {
    config = process.env[CONFIG_ON_STDIN] === "1" ? ((await configFromStdin()) as Config) : loadConfig(process.env, dataDir ? { OPS_DATA_DIR: dataDir } : {}, process.cwd());
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`ops: bad configuration: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const log = createLogger(config.logLevel).child({ component: name });
  if (name === "data-plane") return (await import("./supervisor")).runDataPlane(config, log);
  if (name === "ingress") return (await import("./ingress-process")).runIngressProcess(config, log);
  process.stderr.write(`ops: ${name} is not a data plane command\n`);
  return 2;
}

if (import.meta.main) process.exit(await runPlaneCommand(process.argv.slice(2)));
