/**
 * The one way ops is compiled: `bun build --compile` of src/bin.ts (which runs src/main.ts) with the version baked in
 * (OPS_BUILD_VERSION), the console bundle embedded (src/console/bundle.ts) and no .env or
 * bunfig.toml read at run time. build.ts and the end-to-end tests both call `compileOps`.
 */
import path from "node:path";
import { consoleDefine } from "../src/console/bundle";

const root = path.resolve(import.meta.dir, "..");

export interface CompileOptions {
  outfile: string;
  version: string;
  /** A cross-compile target such as `bun-linux-arm64`; default: this machine. */
  target?: string;
  /** PEM of the release public key `ops self-update` trusts (docs/decisions/0388); none = self-update refuses. */
  releaseKey?: string;
}

/**
 * @elysiajs/swagger takes one CSS string (its docs page's theme) from @scalar/themes, whose index
 * also builds @scalar/types' zod schemas at load: about 60 ms of every start and megabytes held
 * for good (decision 0640). The binary gets that one string from its own file instead.
 */
const scalarThemeOnly: Bun.BunPlugin = {
  name: "scalar-theme-only",
  setup(build) {
    build.onResolve({ filter: /^@scalar\/themes$/ }, (args) => (args.importer.includes("@elysiajs/swagger") ? { path: "elysiajs-theme", namespace: "ops-scalar-theme" } : undefined));
    build.onLoad({ filter: /.*/, namespace: "ops-scalar-theme" }, () => ({
      contents: `export { default as elysiajsTheme } from ${JSON.stringify(path.join(root, "node_modules/@scalar/themes/dist/presets/elysiajs.css2.js"))};`,
      loader: "js",
    }));
  },
};

/** Compile ops to `outfile`. Throws with the bundler's messages on failure. */
export async function compileOps(opts: CompileOptions): Promise<string> {
  const res = await Bun.build({
    // The telemetry writer runs on its own thread: a worker's module must be an entrypoint of its own.
    // src/bin.ts routes the data plane's commands to their own lean entry (decision 0600).
    // src/bin.ts only routes: the control plane (src/main.ts) and the data plane
    // (src/dataplane/main.ts) are entry points of their own, so neither parses the other's code.
    entrypoints: [path.join(root, "src/bin.ts"), path.join(root, "src/main.ts"), path.join(root, "src/domains/observability/writer-worker.ts"), path.join(root, "src/dataplane/main.ts")],
    compile: {
      outfile: opts.outfile,
      autoloadDotenv: false,
      autoloadBunfig: false,
      ...(opts.target ? { target: opts.target as Bun.Build.CompileTarget } : {}),
    },
    minify: true,
    sourcemap: "none",
    plugins: [scalarThemeOnly],
    define: { OPS_BUILD_VERSION: JSON.stringify(opts.version), OPS_RELEASE_PUBLIC_KEY: JSON.stringify(opts.releaseKey ?? ""), ...(await consoleDefine()) },
  });
  if (!res.success) throw new Error(`compiling ops failed:\n${res.logs.map(String).join("\n")}`);
  return opts.outfile;
}
