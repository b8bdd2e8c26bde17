/**
 * The ingress's route table on its own: host normalisation, exact before wildcard, the longest
 * wildcard and the longest path prefix on segment boundaries, the default host, routes two
 * services claim (neither gets them) and another project's `.localhost` names (never routed).
 */
import { describe, test, expect } from "bun:test";
import { compileTable, defaultHost, lookup, normaliseHost, type ServiceEntry } from "./table";

const entry = (service: string, routes: ServiceEntry["routes"], port = 1): ServiceEntry => ({
  service: { project: "shop", environment: "production", service },
  routes,
  upstreams: [{ host: "127.0.0.1", port }],
});

describe("route table", () => {
  test("hosts are normalised: case, port, trailing dot, IPv6 literal", () => {
    expect(normaliseHost("Shop.Example.COM:8081")).toBe("shop.example.com");
    expect(normaliseHost("shop.example.com.")).toBe("shop.example.com");
    expect(normaliseHost("[::1]:8081")).toBe("[::1]");
    expect(normaliseHost(null)).toBe("");
  });

  test("exact before wildcard, longest wildcard first, longest prefix on segment boundaries", () => {
    const table = compileTable([
      entry("web", [{ hosts: ["shop.example.com", "*.example.com"] }]),
      entry("api", [{ hosts: ["shop.example.com"], pathPrefix: "/api/" }]),
      entry("eu", [{ hosts: ["*.eu.example.com"] }]),
    ]);
    const who = (host: string, path: string) => lookup(table, host, path)?.service.service ?? null;
    expect(who("shop.example.com", "/")).toBe("web");
    expect(who("shop.example.com", "/api")).toBe("api");
    expect(who("shop.example.com", "/api/v1?x=1")).toBe("api");
    expect(who("shop.example.com", "/api?x=1")).toBe("api");
    expect(who("shop.example.com", "/apix")).toBe("web");
    expect(who("a.example.com", "/")).toBe("web");
    expect(who("a.eu.example.com", "/")).toBe("eu");
    expect(who("example.com", "/")).toBeNull();
    expect(who(defaultHost({ project: "shop", environment: "production", service: "api" }), "/anything")).toBe("api");
    expect(who("other.org", "/")).toBeNull();
  });

  test("a route two services claim goes to neither, whatever their names; both are reported", () => {
    const table = compileTable([entry("b", [{ hosts: ["x.example.com"] }]), entry("a", [{ hosts: ["x.example.com", "y.example.com"] }])]);
    expect(lookup(table, "x.example.com", "/")).toBeNull();
    expect(lookup(table, "y.example.com", "/")?.service.service).toBe("a");
    expect(table.conflicts).toEqual([
      { host: "x.example.com", pathPrefix: "/", kept: null, ignored: "shop/production/b" },
      { host: "x.example.com", pathPrefix: "/", kept: null, ignored: "shop/production/a" },
    ]);
  });

  test("names under .<project>.localhost belong to that project: another project's exact or wildcard route there is left out", () => {
    const alpha = (routes: ServiceEntry["routes"]): ServiceEntry => ({ service: { project: "alpha", environment: "production", service: "web" }, routes, upstreams: [{ host: "127.0.0.1", port: 2 }] });
    const beta: ServiceEntry = { service: { project: "beta", environment: "production", service: "web" }, routes: [], upstreams: [{ host: "127.0.0.1", port: 3 }] };
    const table = compileTable([alpha([{ hosts: ["web.production.beta.localhost", "*.production.beta.localhost", "*.localhost", "localhost", "alpha-own.production.alpha.localhost"] }]), beta]);
    expect(lookup(table, "web.production.beta.localhost", "/")?.service.project).toBe("beta");
    expect(lookup(table, "new.production.beta.localhost", "/")).toBeNull();
    expect(lookup(table, "localhost", "/")).toBeNull();
    expect(lookup(table, "anything.localhost", "/")).toBeNull();
    expect(lookup(table, "alpha-own.production.alpha.localhost", "/")?.service.project).toBe("alpha");
    expect(table.conflicts.map((c) => [c.host, c.kept])).toEqual([
      ["web.production.beta.localhost", "project beta"],
      ["*.production.beta.localhost", "project beta"],
      ["*.localhost", null],
      ["localhost", null],
    ]);
  });
});
