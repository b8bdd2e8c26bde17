/**
 * The two readers of what a repository says about itself: Dockerfiles (stages, ports, healthcheck
 * paths, arguments, release stages) and ops.toml (every key of DESIGN §5, unknown keys named).
 */
import { describe, expect, test } from "bun:test";
import { detectFromBuildFile, isBuildFile, serviceNameFor } from "./dockerfile";
import { declaredNamesOf, operationalFor, OpsTomlError, parseOpsToml } from "./ops-toml";

const MULTI = `# syntax=docker/dockerfile:1
ARG NODE_VERSION=22
FROM node:\${NODE_VERSION} AS deps
WORKDIR /app
COPY package.json .
RUN npm ci

FROM deps AS build
RUN npm run build

FROM deps AS migrate
CMD ["npm", "run", "migrate"]

FROM deps AS db-release
CMD ["npm", "run", "release"]

FROM node:\${NODE_VERSION}-slim AS runtime
ARG PORT=3000
ARG EMPTY
ENV PORT=$PORT \\
    NODE_ENV=production
EXPOSE 9229
EXPOSE \${PORT}/tcp
HEALTHCHECK --interval=30s --timeout=3s \\
  CMD curl -fsS http://localhost:\${PORT}/healthz || exit 1
CMD ["node", "server.js"]
`;

describe("Dockerfile scan", () => {
  test("a multi-stage file: the final stage's last port and healthcheck path, arguments, one release entry per migrate or release stage", () => {
    const found = detectFromBuildFile("shop", "Dockerfile", MULTI);
    expect(found).toEqual([
      { name: "shop", context: ".", dockerfile: "Dockerfile", kind: "service", port: 3000, healthcheck: "/healthz", target: null, args: { NODE_VERSION: "22", PORT: "3000", EMPTY: "" } },
      { name: "shop-migrate", context: ".", dockerfile: "Dockerfile", kind: "release", port: null, healthcheck: null, target: "migrate", args: { NODE_VERSION: "22" } },
      { name: "shop-db-release", context: ".", dockerfile: "Dockerfile", kind: "release", port: null, healthcheck: null, target: "db-release", args: { NODE_VERSION: "22" } },
    ]);
  });

  test("stages inherit EXPOSE and HEALTHCHECK; HEALTHCHECK NONE clears; no URL means no path", () => {
    const inherit = detectFromBuildFile("r", "Dockerfile", "FROM alpine AS base\nEXPOSE 80\nHEALTHCHECK CMD wget -q -O- http://127.0.0.1/ready\nFROM base\n");
    expect(inherit[0]).toMatchObject({ port: 80, healthcheck: "/ready" });
    expect(detectFromBuildFile("r", "Dockerfile", "FROM a AS x\nHEALTHCHECK CMD curl http://x/h\nFROM x\nHEALTHCHECK NONE\n")[0]!.healthcheck).toBeNull();
    expect(detectFromBuildFile("r", "Dockerfile", "FROM a\nHEALTHCHECK CMD pg_isready\n")[0]!.healthcheck).toBeNull();
    expect(detectFromBuildFile("r", "Dockerfile", "FROM a\nHEALTHCHECK CMD curl http://localhost:8080\n")[0]!.healthcheck).toBe("/");
    expect(detectFromBuildFile("r", "Dockerfile", "# only a comment\n")).toEqual([]);
  });

  test("file names and service names", () => {
    for (const f of ["Dockerfile", "api/Dockerfile", "Containerfile", "Dockerfile.worker", "web.Dockerfile"]) expect(isBuildFile(f)).toBe(true);
    for (const f of ["Dockerfile.md/x", "README.md", "docker-compose.yml", "src/Dockerfiles.txt"]) expect(isBuildFile(f)).toBe(false);
    expect(serviceNameFor("My_Repo", "Dockerfile")).toBe("my-repo");
    expect(serviceNameFor("repo", "services/API/Dockerfile")).toBe("api");
    expect(serviceNameFor("repo", "Dockerfile.worker")).toBe("worker");
    expect(serviceNameFor("repo", "api/Dockerfile.worker")).toBe("api-worker");
  });
});

const EXAMPLE = `
[services.web]            # a service named web; a name is a resource name
build = ["npm ci", "npm run build"]
check = ["npm test"]
start = "node server.js"
port = 8080
health = "/healthz"
context = "."
output = "."

[services.worker]
dockerfile = "worker/Dockerfile"
context = "worker"

[steps.migrate]
service = "web"
command = "node migrate.js"

[hooks]
pre-deploy = ["migrate"]

[domains]
production = ["shop.example.com"]

[operational.production.web]
replicas = 2
limits = { memory_mb = 256 }
env_group = "web-env"

[operational."".web]
replicas = 1
address = "web.internal"
`;

describe("ops.toml", () => {
  test("[services.x.placement] constraints: Swarm's constraints, each checked", () => {
    const ok = parseOpsToml(`[services.web]\nstart = "./app"\n[services.web.placement]\nconstraints = ["node.labels.zone==eu", "node.role != manager", "engine.labels.disk==ssd"]\n`);
    expect(ok.services[0]!.placement).toEqual({ constraints: ["node.labels.zone==eu", "node.role != manager", "engine.labels.disk==ssd"] });
    for (const bad of ['"zone==eu"', '"node.labels.zone=eu"', '"node.labels.zone==eu; rm -rf /"', '"node.labels.zone==\\"eu\\""', "[1]"]) {
      expect(() => parseOpsToml(`[services.web]\nstart = "./app"\n[services.web.placement]\nconstraints = [${bad}]\n`)).toThrow(/services\.web\.placement\.constraints/);
    }
    expect(() => parseOpsToml(`[services.web]\nstart = "./app"\n[services.web.placement]\nnodes = ["a"]\n`)).toThrow(/services\.web\.placement/);
  });

  test("DESIGN §5's example parses into the typed declaration", () => {
    const d = parseOpsToml(EXAMPLE);
    expect(d.services[0]).toEqual({
      name: "web",
      build: ["npm ci", "npm run build"],
      check: ["npm test"],
      start: "node server.js",
      port: 8080,
      health: "/healthz",
      context: ".",
      output: ".",
      dockerfile: null,
      base: null,
      placement: null,
      keys: ["build", "check", "start", "port", "health", "context", "output"],
    });
    expect(d.services[1]).toMatchObject({ name: "worker", dockerfile: "worker/Dockerfile", context: "worker", start: null, build: [], port: 8080 });
    expect(d.steps).toEqual([{ name: "migrate", service: "web", command: "node migrate.js" }]);
    expect(d.hooks).toEqual({ "pre-deploy": ["migrate"] });
    expect(d.domains).toEqual({ production: ["shop.example.com"] });
    expect(operationalFor(d, "production", "web")).toEqual({ replicas: 2, limits: { memory_mb: 256 }, env_group: "web-env" });
    expect(operationalFor(d, "staging", "web")).toEqual({ replicas: 1, address: "web.internal" });
    expect(declaredNamesOf(d)).toEqual({
      domains: { production: ["shop.example.com"] },
      hooks: { "pre-deploy": ["migrate"] },
      operational: { production: { web: ["replicas", "limits", "env_group"] }, "": { web: ["replicas", "address"] } },
      services: ["web", "worker"],
      steps: ["migrate"],
    });
  });

  test("unknown keys and wrong values are errors naming the key", () => {
    const cases: Array<[string, string]> = [
      ['[services.web]\nbulid = ["x"]\nstart = "s"', "services.web.bulid"],
      ["[servces.web]", "servces"],
      ['[services.Web]\nstart = "s"', "services.Web"],
      ['[services.web]\nstart = "s"\nport = 70000', "services.web.port"],
      ['[services.web]\nstart = "s"\nhealth = "healthz"', "services.web.health"],
      ['[services.web]\nbuild = ["x"]', "services.web.start"],
      ['[services.web]\nstart = "s"\ndockerfile = "Dockerfile"', "services.web.dockerfile"],
      ['[services.web]\nstart = "s"\ncontext = "../up"', "services.web.context"],
      ['[services.web]\nstart = "s"\n[steps.migrate]\nservice = "api"\ncommand = "x"', "steps.migrate.service"],
      ['[services.web]\nstart = "s"\n[steps.m]\nservice = "web"\ncommand = "x"\nshell = "bash"', "steps.m.shell"],
      ['[services.web]\nstart = "s"\n[hooks]\non-push = []', "hooks.on-push"],
      ['[services.web]\nstart = "s"\n[hooks]\npre-deploy = ["nope"]', "hooks.pre-deploy[0]"],
      ['[services.web]\nstart = "s"\n[domains]\nproduction = ["not a host"]', "domains.production[0]"],
      ['[services.web]\nstart = "s"\n[operational.production.web]\nreplica = 2', "operational.production.web.replica"],
      ['[services.web]\nstart = "s"\n[operational.production.api]\nreplicas = 2', "operational.production.api"],
      ['[services.web]\nstart = "s"\n[operational.production.web]\nlimits = { memory = 1 }', "operational.production.web.limits.memory"],
      ["services = 3", "services"],
    ];
    for (const [text, key] of cases) {
      let err: unknown;
      try {
        parseOpsToml(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OpsTomlError);
      expect((err as OpsTomlError).key).toBe(key);
      expect((err as Error).message).toContain(key);
    }
    expect(() => parseOpsToml("[services.web\nstart=")).toThrow(/not valid TOML/);
  });
});
