/**
 * The ingress's route table on its own: host normalisation, exact before wildcard, the longest
 * wildcard and the longest path prefix on segment boundaries, the default host, and routes two
 * services claim.
 */
import { describe, test, expect } from "bun:test";
import { compileTable, defaultHost, lookup, normaliseHost, type ServiceEntry } from "../src/adapters/ingress/table";

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

  test("a route two services claim stays with the first and is reported", () => {
    const table = compileTable([entry("b", [{ hosts: ["x.example.com"] }]), entry("a", [{ hosts: ["x.example.com"] }])]);
    expect(lookup(table, "x.example.com", "/")?.service.service).toBe("a");
    expect(table.conflicts).toEqual([{ host: "x.example.com", pathPrefix: "/", kept: "shop/production/a", ignored: "shop/production/b" }]);
  });
});
