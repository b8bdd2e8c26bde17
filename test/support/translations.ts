/**
 * Test helpers of the translations domain: three projects with a developer each (translations
 * and packages read/write), a viewer of the first, and package versions published through the
 * real npm protocol route so a package bundle has versions to register.
 */
import type { TestApp } from "../harness";
import { expectStatus } from "../harness";
import { makePerson, makeProject, type Person } from "../fixtures";
import type { ProjectRow } from "../../src/domains/access/service";
import { npmPublishBody, npmTarball } from "./registries";

export interface TmsCast {
  a: ProjectRow;
  b: ProjectRow;
  c: ProjectRow;
  /** developer in a, b, c respectively. */
  devA: Person;
  devB: Person;
  devC: Person;
  /** viewer in a: translations.read only. */
  viewerA: Person;
}

export async function tmsCast(t: TestApp, prefix = "tms"): Promise<TmsCast> {
  const a = makeProject(t, `${prefix}-a`);
  const b = makeProject(t, `${prefix}-b`);
  const c = makeProject(t, `${prefix}-c`);
  return {
    a,
    b,
    c,
    devA: await makePerson(t, [{ role: "developer", project: a.slug }]),
    devB: await makePerson(t, [{ role: "developer", project: b.slug }]),
    devC: await makePerson(t, [{ role: "developer", project: c.slug }]),
    viewerA: await makePerson(t, [{ role: "viewer", project: a.slug }]),
  };
}

/** `/api/v1/projects/<slug>/translations` */
export const tr = (slug: string, rest = "") => `/api/v1/projects/${slug}/translations${rest}`;

/** Claim an npm name for `slug` as `person` (201 or 200). */
export async function claimNpm(t: TestApp, slug: string, person: Person, name: string): Promise<void> {
  const res = await t.request("PUT", `/api/v1/projects/${slug}/packages/npm/${encodeURIComponent(name)}`, { token: person.session });
  if (res.status !== 201 && res.status !== 200) throw new Error(`claim ${name}: ${res.status} ${await res.text()}`);
}

/** Publish `name@version` through `PUT /npm/{pkg}` as `person` (201). */
export async function publishNpm(t: TestApp, person: Person, name: string, version: string): Promise<void> {
  const tarball = await npmTarball(name, version);
  await expectStatus(await t.request("PUT", `/npm/${encodeURIComponent(name)}`, { token: person.session, body: npmPublishBody(name, version, tarball) }), 201);
}

/** PUT one entry (200) and return its version. */
export async function putEntry(t: TestApp, slug: string, person: Person, e: { bundle: string; namespace: string; key: string; locale: string; value: string; status?: "translated" | "review" }): Promise<number> {
  return (await expectStatus<{ version: number }>(await t.request("PUT", tr(slug, "/entries"), { token: person.session, body: e }), 200)).version;
}

/** Create a bundle (201) and return its id. */
export async function createBundle(t: TestApp, slug: string, person: Person, body: Record<string, unknown>): Promise<number> {
  return (await expectStatus<{ id: number }>(await t.request("POST", tr(slug, "/bundles"), { token: person.session, body }), 201)).id;
}
