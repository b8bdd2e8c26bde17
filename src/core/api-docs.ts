/**
 * The API reference page's viewer, served by ops itself: Scalar's standalone bundle from the
 * pinned `@scalar/api-reference` in package.json, embedded into the binary by `bun build
 * --compile` (a `file` import), so `/api/docs` loads nothing from outside (docs/decisions/0363).
 */
import viewerFile from "../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import pkg from "../../package.json";

export const VIEWER_PATH = "/api/docs/viewer.js";

/** Scalar's settings: no fonts, proxy, client app or telemetry from scalar.com. */
export const VIEWER_CONFIG = {
  spec: { url: "/api/docs/json" },
  withDefaultFonts: false,
  hideClientButton: true,
  proxyUrl: "",
  telemetry: false,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true },
};

const version = pkg.dependencies["@scalar/api-reference"];

/** The viewer's script, cached for a day (its URL carries no version; a new ops may bring a new one). */
export function viewerResponse(): Response {
  return new Response(Bun.file(viewerFile), {
    headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400", "x-viewer-version": `@scalar/api-reference@${version}` },
  });
}
