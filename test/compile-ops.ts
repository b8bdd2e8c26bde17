/**
 * Compile the real `ops` binary for end-to-end tests (the same Bun.build call a release build
 * makes: version baked in with OPS_BUILD_VERSION, the console bundle embedded).
 */
import path from "node:path";
import { consoleDefine } from "../src/console/bundle";

const root = path.resolve(import.meta.dir, "..");

/** Build `outfile` reporting `version`. Throws with the bundler's messages on failure. */
export async function compileOps(outfile: string, version: string): Promise<string> {
  const res = await Bun.build({
    entrypoints: [path.join(root, "src/main.ts")],
    compile: { outfile },
    minify: true,
    sourcemap: "none",
    define: { OPS_BUILD_VERSION: JSON.stringify(version), ...(await consoleDefine()) },
  });
  if (!res.success) throw new Error(`compiling ops failed: ${res.logs.map(String).join("\n")}`);
  return outfile;
}
