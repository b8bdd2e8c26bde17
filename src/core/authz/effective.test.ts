/**
 * DESIGN.md §3 "Effective permissions", as a table of cases.
 */
import { describe, test, expect } from "bun:test";
import { evaluate, effectivePermissions, denyReason, NO_GRANTS, type Grants, type Membership, type Policy, type Scope } from "./effective";
import { FIXED_ROLES, PERMISSION_KEYS, PERMISSIONS, ESTATE_KEYS } from "./catalog";
import type { Principal } from "./principal";
import { fakePrincipal } from "../../../test/harness";

const role = (slug: string) => FIXED_ROLES.find((r) => r.slug === slug)!.permissions;

const principal = (over: Partial<Principal> = {}) => fakePrincipal("ada", over);

const member = (projectId: string | null, roleId: string, permissions: readonly string[] = role(roleId)): Membership => ({ projectId, roleId, permissions });
const inP = (projectId: string, environment: string | null = "production"): Scope => ({ kind: "project", projectId, environment });
const ESTATE: Scope = { kind: "estate" };
const ANY: Scope = { kind: "any" };
const sorted = (s: Iterable<string>) => [...s].sort();

interface Case {
  name: string;
  principal?: Partial<Principal>;
  memberships: Membership[];
  policies?: Policy[];
  scope: Scope;
  expect: readonly string[];
  narrowedBy?: string[];
}

const CASES: Case[] = [
  {
    name: "a member of P gets their role in P",
    memberships: [member("P", "developer")],
    scope: inP("P"),
    expect: role("developer"),
  },
  {
    name: "a membership in another project does not apply",
    memberships: [member("Q", "owner")],
    scope: inP("P"),
    expect: [],
    narrowedBy: ["no-membership"],
  },
  {
    name: "memberships that apply are unioned",
    memberships: [member("P", "reader", ["resources.read"]), member("P", "secret-keeper", ["secrets.read", "secrets.reveal"]), member("Q", "owner")],
    scope: inP("P"),
    expect: ["resources.read", "secrets.read", "secrets.reveal"],
  },
  {
    name: "an estate-wide membership applies in every project",
    memberships: [member(null, "viewer")],
    scope: inP("any-project-at-all"),
    expect: role("viewer"),
  },
  {
    name: "estate-wide and project memberships are unioned",
    memberships: [member(null, "viewer"), member("P", "custom", ["jobs.run"])],
    scope: inP("P"),
    expect: [...role("viewer"), "jobs.run"],
  },
  {
    name: "a project owner does not get the Estate keys in their project",
    memberships: [member("P", "owner")],
    scope: inP("P"),
    expect: PERMISSION_KEYS.filter((k) => !ESTATE_KEYS.has(k)),
  },
  {
    name: "a project owner gets nothing estate-wide",
    memberships: [member("P", "owner")],
    scope: ESTATE,
    expect: [],
    narrowedBy: ["no-membership"],
  },
  {
    name: "an estate-wide owner gets the Estate keys estate-wide",
    memberships: [member(null, "owner")],
    scope: ESTATE,
    expect: PERMISSION_KEYS,
  },
  {
    name: "an estate-wide owner keeps every key inside a project too",
    memberships: [member(null, "owner")],
    scope: inP("P"),
    expect: PERMISSION_KEYS,
  },
  {
    name: "anywhere: the union of all memberships, Estate keys only from estate-wide ones",
    memberships: [member("P", "owner"), member("Q", "custom", ["jobs.run"])],
    scope: ANY,
    expect: [...PERMISSION_KEYS.filter((k) => !ESTATE_KEYS.has(k))],
  },
  {
    name: "an environment policy narrows its (project, environment, role)",
    memberships: [member("P", "developer")],
    policies: [{ projectId: "P", environment: "production", roleId: "developer", allowed: ["project.read", "resources.read", "deployments.read"] }],
    scope: inP("P", "production"),
    expect: ["project.read", "resources.read", "deployments.read"],
    narrowedBy: ["policy"],
  },
  {
    name: "... but not another environment",
    memberships: [member("P", "developer")],
    policies: [{ projectId: "P", environment: "production", roleId: "developer", allowed: ["project.read"] }],
    scope: inP("P", "staging"),
    expect: role("developer"),
  },
  {
    name: "... nor another project (via an estate-wide membership of that role)",
    memberships: [member(null, "developer")],
    policies: [{ projectId: "P", environment: "production", roleId: "developer", allowed: ["project.read"] }],
    scope: inP("Q", "production"),
    expect: role("developer"),
  },
  {
    name: "... nor another role the caller also holds",
    memberships: [member("P", "developer"), member("P", "deployer", ["deployments.deploy", "project.read"])],
    policies: [{ projectId: "P", environment: "production", roleId: "developer", allowed: ["project.read"] }],
    scope: inP("P", "production"),
    expect: ["project.read", "deployments.deploy"],
    narrowedBy: ["policy"],
  },
  {
    name: "... and a policy can only narrow, never add",
    memberships: [member("P", "viewer")],
    policies: [{ projectId: "P", environment: "production", roleId: "viewer", allowed: ["project.read", "secrets.reveal"] }],
    scope: inP("P", "production"),
    expect: ["project.read"],
    narrowedBy: ["policy"],
  },
  {
    name: "project-level routes (no environment) are not narrowed by policies",
    memberships: [member("P", "developer")],
    policies: [{ projectId: "P", environment: "production", roleId: "developer", allowed: ["project.read"] }],
    scope: inP("P", null),
    expect: role("developer"),
  },
  {
    name: "a minted token's scopes intersect the role",
    principal: { via: "token", tokenId: "t-1", tokenScopes: ["resources.read", "secrets.reveal", "estate.manage"] },
    memberships: [member("P", "developer")],
    scope: inP("P"),
    expect: ["resources.read"],
    narrowedBy: ["token-scopes"],
  },
  {
    name: "a pinned token in its own project",
    principal: { via: "token", tokenId: "t-1", tokenScopes: role("viewer"), tokenProjectId: "P", tokenProjectSlug: "p" },
    memberships: [member("P", "maintainer")],
    scope: inP("P"),
    expect: role("viewer"),
    narrowedBy: ["token-scopes"],
  },
  {
    name: "a pinned token used in another project gets nothing",
    principal: { via: "token", tokenId: "t-1", tokenScopes: role("viewer"), tokenProjectId: "P", tokenProjectSlug: "p" },
    memberships: [member(null, "owner")],
    scope: inP("Q"),
    expect: [],
    narrowedBy: ["pinned-elsewhere"],
  },
  {
    name: "a pinned token gets nothing estate-wide, even with an estate-wide owner behind it",
    principal: { via: "token", tokenId: "t-1", tokenScopes: PERMISSION_KEYS, tokenProjectId: "P", tokenProjectSlug: "p" },
    memberships: [member(null, "owner")],
    scope: ESTATE,
    expect: [],
    narrowedBy: ["pinned-elsewhere"],
  },
  {
    name: "a pinned token evaluated 'anywhere' is evaluated in its project",
    principal: { via: "api-token", kind: "machine", tokenId: "t-1", tokenScopes: ["resources.read", "builds.run"], tokenProjectId: "P", tokenProjectSlug: "p" },
    memberships: [member("P", "developer"), member("Q", "owner")],
    scope: ANY,
    expect: ["resources.read", "builds.run"],
    narrowedBy: ["token-scopes"],
  },
  {
    name: "a suspended operator gets nothing",
    principal: { suspended: true },
    memberships: [member(null, "owner")],
    scope: inP("P"),
    expect: [],
    narrowedBy: ["suspended"],
  },
  {
    name: "a suspended operator gets nothing estate-wide either",
    principal: { suspended: true },
    memberships: [member(null, "owner")],
    scope: ESTATE,
    expect: [],
    narrowedBy: ["suspended"],
  },
  {
    name: "no memberships at all",
    memberships: [],
    scope: ANY,
    expect: [],
    narrowedBy: ["no-membership"],
  },
];

describe("evaluate", () => {
  test.each(CASES.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const grants: Grants = { memberships: c.memberships, policies: c.policies ?? [] };
    const ev = evaluate(principal(c.principal), grants, c.scope);
    expect(sorted(ev.permissions)).toEqual(sorted(new Set(c.expect)));
    expect(sorted(ev.narrowedBy)).toEqual(sorted(c.narrowedBy ?? []));
    expect(sorted(effectivePermissions(principal(c.principal), grants, c.scope))).toEqual(sorted(ev.permissions));
  });
});

describe("denyReason", () => {
  const cases: Array<[string, Partial<Principal>, Grants, Scope, string, string, string]> = [
    ["suspended", { suspended: true }, { memberships: [member(null, "owner")], policies: [] }, inP("P"), "resources.read", "in p", "operator is suspended"],
    [
      "pinned elsewhere",
      { tokenId: "t", tokenScopes: ["resources.read"], tokenProjectId: "P" },
      { memberships: [member(null, "owner")], policies: [] },
      inP("Q"),
      "resources.read",
      "in q",
      "token is pinned to another project",
    ],
    ["no membership", {}, NO_GRANTS, inP("P"), "resources.read", "in p", "no role in p"],
    [
      "policy",
      {},
      { memberships: [member("P", "developer")], policies: [{ projectId: "P", environment: "production", roleId: "developer", allowed: ["project.read"] }] },
      inP("P"),
      "resources.write",
      "in p",
      "environment policy removes resources.write",
    ],
    ["token scopes", { tokenId: "t", tokenScopes: ["project.read"] }, { memberships: [member("P", "developer")], policies: [] }, inP("P"), "builds.run", "in p", "token scopes lack builds.run"],
    ["role lacks", {}, { memberships: [member("P", "viewer")], policies: [] }, inP("P"), "builds.run", "in p", "role lacks builds.run in p"],
    ["estate key from a project role", {}, { memberships: [member("P", "owner")], policies: [] }, ESTATE, "estate.manage", "estate-wide", "no role estate-wide"],
  ];
  test.each(cases)("%s", (_n, p, grants, scope, key, where, reason) => {
    const ev = evaluate(principal(p), grants, scope);
    expect(ev.permissions.has(key)).toBe(false);
    expect(denyReason(key, ev, where)).toBe(reason);
  });
});

describe("the catalog", () => {
  test("28 keys, groups contiguous, Estate last", () => {
    expect(PERMISSIONS).toHaveLength(28);
    expect(new Set(PERMISSION_KEYS).size).toBe(28);
    const groups = PERMISSIONS.map((p) => p.group);
    const order = groups.filter((g, i) => i === 0 || groups[i - 1] !== g);
    expect(order).toEqual(["Project", "Resources", "Secrets", "Code", "Delivery", "Observability", "Translations", "Packages", "Estate"]);
    expect(sorted(ESTATE_KEYS)).toEqual(["estate.manage", "operators.manage"]);
  });

  test("fixed roles as DESIGN.md §3 defines them", () => {
    expect(FIXED_ROLES.map((r) => r.slug)).toEqual(["owner", "maintainer", "developer", "viewer"]);
    expect(sorted(role("owner"))).toEqual(sorted(PERMISSION_KEYS));
    expect(sorted(role("maintainer"))).toEqual(sorted(PERMISSION_KEYS.filter((k) => !ESTATE_KEYS.has(k))));
    expect(role("viewer")).not.toContain("audit.read");
    for (const k of role("viewer")) expect(k.endsWith(".read")).toBe(true);
    for (const k of ["project.settings", "project.members", "audit.read", "secrets.reveal", "secrets.rotate", "resources.destroy", "databases.manage"]) {
      expect(role("developer")).not.toContain(k);
    }
  });
});
