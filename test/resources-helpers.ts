/**
 * Shared set-up for the resources and secrets suites: a project, its owner (a console session)
 * and request helpers bound to the project's resource routes.
 */
import { eq } from "drizzle-orm";
import type { TestApp } from "./harness";
import { makePerson, makeProject, type Person } from "./fixtures";
import { projects } from "../src/domains/access/tables";

export interface ProjectCtx {
  slug: string;
  owner: Person;
  /** `/api/v1/projects/<slug>` */
  base: string;
  req(method: string, path: string, body?: unknown, token?: string): Promise<Response>;
}

export async function projectWithOwner(t: TestApp, environments?: string[]): Promise<ProjectCtx> {
  const p = makeProject(t, undefined, environments);
  const owner = await makePerson(t, [{ role: "owner", project: p.slug }]);
  const base = `/api/v1/projects/${p.slug}`;
  return {
    slug: p.slug,
    owner,
    base,
    req: (method, path, body, token) => t.request(method, `${base}${path}`, { token: token ?? owner.session, body }),
  };
}

/** Archive a project (the project settings routes belong to the access domain). */
export function archiveProject(t: TestApp, slug: string): void {
  t.core.db.update(projects).set({ archivedAt: t.clock.now() }).where(eq(projects.slug, slug)).run();
}

/** Every byte of ops.db and its WAL, as latin1 text, for grepping secret values. */
export async function databaseText(t: TestApp): Promise<string> {
  const { existsSync, readFileSync } = await import("node:fs");
  const path = await import("node:path");
  let out = "";
  for (const f of ["ops.db", "ops.db-wal", "telemetry.db", "telemetry.db-wal"]) {
    const p = path.join(t.dataDir, f);
    if (existsSync(p)) out += readFileSync(p).toString("latin1");
  }
  return out;
}
