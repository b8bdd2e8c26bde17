/**
 * Serves the console: the single-page shell on its paths and the bundle under /assets/. These
 * routes are public (static files); everything the screens show comes from the API, which checks
 * the caller on every call. Screens added later append their path to CONSOLE_PATHS.
 */
import { Elysia, t } from "elysia";
import type { Core, DomainModule } from "../core/core";
import { authzPlugin } from "../core/authz/plugin";
import { consoleAssets } from "./bundle";

export const CONSOLE_PATHS = ["/", "/sign-in", "/device", "/status", "/status/admin", "/account", "/projects", "/projects/*", "/operators", "/notifications", "/cli", "/nodes"] as const;

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

function shell(version: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>ops</title>
<link rel="stylesheet" href="/assets/console.css?v=${version}">
<script type="module" src="/assets/console.js?v=${version}"></script>
</head>
<body>
<div id="app"></div>
<noscript><p>The ops console needs JavaScript. The API and the ops CLI work without it.</p></noscript>
</body>
</html>
`;
}

function consoleRoutes(core: Core) {
  let app = new Elysia({ name: "ops-console" }).use(authzPlugin(core));
  const hidden = { hide: true } as Record<string, unknown>;
  for (const p of CONSOLE_PATHS) {
    app = app.get(
      p,
      async () => {
        const a = await consoleAssets();
        return new Response(shell(a.version), { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", ...SECURITY_HEADERS } });
      },
      { public: true, detail: hidden, response: { 200: t.String() } },
    ) as unknown as typeof app;
  }
  return app
    .get(
      "/assets/console.js",
      async ({ query }) => {
        const a = await consoleAssets();
        const cache = query.v === a.version ? "public, max-age=31536000, immutable" : "no-cache";
        return new Response(a.js, { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": cache, etag: `"${a.version}"`, ...SECURITY_HEADERS } });
      },
      { public: true, detail: hidden, query: t.Object({ v: t.Optional(t.String()) }), response: { 200: t.String() } },
    )
    .get(
      "/assets/console.css",
      async ({ query }) => {
        const a = await consoleAssets();
        const cache = query.v === a.version ? "public, max-age=31536000, immutable" : "no-cache";
        return new Response(a.css, { headers: { "content-type": "text/css; charset=utf-8", "cache-control": cache, etag: `"${a.version}"`, ...SECURITY_HEADERS } });
      },
      { public: true, detail: hidden, query: t.Object({ v: t.Optional(t.String()) }), response: { 200: t.String() } },
    );
}

export const consoleModule: DomainModule = {
  name: "console",
  routes: consoleRoutes,
};
