/**
 * The console's browser bundle, one entry point for every way ops runs:
 *
 * - from source (`npm start`, tests): `consoleAssets()` bundles `src/console/main.tsx` with
 *   `Bun.build` in memory on first use (about a second) and keeps the result for the process;
 * - compiled (`bun build --compile`): the build passes `define: await consoleDefine()`, which
 *   bakes the bundle into the binary as the constant `OPS_CONSOLE_JS`; the CSS is a text import
 *   and is embedded either way.
 *
 * So build.ts needs one line in its Bun.build call: `define: { ...defines, ...(await consoleDefine()) }`.
 */
import path from "node:path";
import css from "./app.css" with { type: "text" };
import { OpsError } from "../core/errors";

declare const OPS_CONSOLE_JS: string | undefined;

export interface ConsoleAssets {
  js: string;
  css: string;
  /** Short content hash of js + css, for cache busting. */
  version: string;
}

/** Bundle the console for browsers (ESM, minified), in memory. */
export async function buildConsoleJs(opts: { minify?: boolean } = {}): Promise<string> {
  const out = await Bun.build({
    entrypoints: [path.join(import.meta.dir, "main.tsx")],
    target: "browser",
    format: "esm",
    minify: opts.minify ?? true,
    sourcemap: "none",
  });
  if (!out.success || out.outputs.length === 0) {
    throw new Error(`the console bundle failed to build: ${out.logs.map((l) => String(l)).join("; ")}`);
  }
  return out.outputs[0].text();
}

/** `define` entries that embed the console bundle in a compiled binary. */
export async function consoleDefine(): Promise<Record<string, string>> {
  return { OPS_CONSOLE_JS: JSON.stringify(await buildConsoleJs()) };
}

// A build of the same source files gives the same bytes, so one per process is enough.
let pending: Promise<ConsoleAssets> | null = null;

function hashOf(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex").slice(0, 12);
}

/** The console's JS and CSS: embedded when compiled, else built once from source. */
export function consoleAssets(): Promise<ConsoleAssets> {
  if (!pending) {
    const embedded = typeof OPS_CONSOLE_JS === "string" ? OPS_CONSOLE_JS : null;
    if (embedded === null && Bun.isStandaloneExecutable) {
      // A compiled binary has no source to bundle from: only a build with consoleDefine() has a console.
      return Promise.reject(new OpsError("unavailable", "This ops binary was built without the console; build it with consoleDefine() (see src/console/bundle.ts)."));
    }
    pending = (embedded !== null ? Promise.resolve(embedded) : buildConsoleJs()).then((js) => ({ js, css, version: hashOf(js + css) }));
    pending.catch(() => {
      pending = null;
    });
  }
  return pending;
}
