/**
 * The built-in host's web pages: the addresses `repoUrl`, `fileUrl` and `pullUrl` hand out
 * (`/git/<owner>/<repo>`, `…/blob/<ref>/<path>`, `…/pulls/<n>`) redirect to the console's
 * Sources page of the owning project, which shows the repository in its studio. They reveal
 * nothing by themselves (the console asks for `sources.read`), so they are public.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../../core/core";
import { authzPlugin } from "../../../core/authz/plugin";
import { parseRepoName } from "./repos";

const TAG = ["git"];

function consolePage(owner: string, repo: string, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams({ repo: `${owner}/${repo}`, ...extra });
  return `/projects/${encodeURIComponent(owner)}/sources?${q.toString()}`;
}

function redirect(location: string): Response {
  return new Response(null, { status: 302, headers: { location } });
}

function notFound(): Response {
  return new Response("No such repository.\n", { status: 404, headers: { "content-type": "text/plain; charset=utf-8" } });
}

export function gitWebRoutes(core: Core) {
  const detail = (summary: string) => ({ tags: TAG, summary, "x-protocol": "git" }) as Record<string, unknown>;
  const redirects = { 302: t.Void({ description: "To the console's Sources page" }), 404: t.String() };
  return new Elysia({ name: "codehost-builtin-web", prefix: "/git" })
    .use(authzPlugin(core))
    .get("/installations/new", () => redirect("/projects"), {
      public: true,
      detail: detail("Where an owner 'installs' the built-in host: every project has it; opens the console's projects"),
      response: { 302: t.Void() },
    })
    .get(
      "/:slug/:repo",
      ({ params }) => {
        const p = parseRepoName(`${params.slug}/${params.repo}`);
        return p ? redirect(consolePage(p.owner, p.name)) : notFound();
      },
      { public: true, params: t.Object({ slug: t.String(), repo: t.String() }), detail: detail("A repository's page"), response: redirects },
    )
    .get(
      "/:slug/:repo/blob/*",
      ({ params, request }) => {
        const p = parseRepoName(`${params.slug}/${params.repo}`);
        // The raw path: the ref is one encoded segment (it may hold a `/` as %2F).
        const pathname = new URL(request.url).pathname;
        const rest = pathname.slice(pathname.indexOf("/blob/") + "/blob/".length);
        const slash = rest.indexOf("/");
        if (!p || slash <= 0) return notFound();
        return redirect(consolePage(p.owner, p.name, { ref: decodeURIComponent(rest.slice(0, slash)), path: decodeURIComponent(rest.slice(slash + 1)) }));
      },
      { public: true, params: t.Object({ slug: t.String(), repo: t.String(), "*": t.String() }), detail: detail("A file's page at a ref: /blob/<ref>/<path>"), response: redirects },
    )
    .get(
      "/:slug/:repo/pulls/:number",
      ({ params }) => {
        const p = parseRepoName(`${params.slug}/${params.repo}`);
        return p ? redirect(consolePage(p.owner, p.name, { pull: String(params.number) })) : notFound();
      },
      { public: true, params: t.Object({ slug: t.String(), repo: t.String(), number: t.Numeric({ minimum: 1 }) }), detail: detail("A pull request's page"), response: redirects },
    );
}
