import { describe, expect, test } from "bun:test";
import { inCidr, routeScript, type NetworkPolicy } from "./network";

const policy = (over: Partial<NetworkPolicy>): NetworkPolicy => ({ hostPorts: [8080], publicHost: null, allowCidrs: [], hostAddresses: [], ...over });

describe("what a sandbox's namespace closes", () => {
  test("inCidr: a subnet, a bare address, the edges", () => {
    expect(inCidr("10.1.2.3", "10.0.0.0/8")).toBe(true);
    expect(inCidr("11.0.0.0", "10.0.0.0/8")).toBe(false);
    expect(inCidr("192.0.2.2", "192.0.2.2")).toBe(true);
    expect(inCidr("192.0.2.3", "192.0.2.2")).toBe(false);
    expect(inCidr("172.31.255.255", "172.16.0.0/12")).toBe(true);
    expect(inCidr("172.32.0.0", "172.16.0.0/12")).toBe(false);
  });

  test("the host's own addresses are closed unless an allowed CIDR holds them; allowed CIDRs route through the gateway", () => {
    const closed = routeScript(policy({ hostAddresses: ["192.0.2.2", "10.9.9.9"], allowCidrs: ["10.9.0.0/16"] }));
    expect(closed).toContain("route add prohibit 192.0.2.2/32\n");
    expect(closed).not.toContain("10.9.9.9");
    expect(closed).toContain("route replace 10.9.0.0/16 via 169.254.1.1\n");
    expect(closed).toContain("route add prohibit 169.254.0.0/16\n");
    expect(closed).not.toContain("127.0.0.0/8");
  });
});
