/**
 * The generated resource form against the real catalog: a spec read into the form and saved
 * unchanged comes back equal and passes the server's own schema check; fields left empty are
 * left out; numbers typed as text become numbers; the browser-side checks name the field.
 */
import { describe, test, expect } from "bun:test";
import { catalog } from "../../domains/resources/catalog";
import { checkSpec, type ResourceType } from "../../domains/resources/specs";
import { draftOf, problemsOf, specOf, type JsonSchema } from "./schema-form";

const schemaOf = (type: string) => catalog().find((c) => c.type === type)!.schema as JsonSchema;

const EXAMPLES: Record<string, unknown> = {
  service: { source: { repo: "acme/web", branch: "main" }, port: 3000, replicas: 2, env_group: "web-env", limits: { cpu: 0.5, memory_mb: 256 }, status_page: true, health_check_path: "/healthz", placement: { constraints: ["node.labels.zone==eu", "node.role!=manager"] } },
  database: { engine: "postgres", size: "medium", service: "web", variable: "PG_URL" },
  bucket: { backend: "s3", endpoint: "https://s3.example.com", bucket: "uploads", public: false },
  job: { command: "echo hi", schedule: "0 3 * * *", timeout_secs: 60 },
  domain: { hosts: ["shop.example.com", "*.shop.example.com"], service: "web", tls: false },
  "secret-group": { variables: [{ name: "API_KEY", kind: "secret" }, { name: "REGION", kind: "text" }] },
};

describe("the generated resource form", () => {
  for (const [type, spec] of Object.entries(EXAMPLES)) {
    test(`${type}: a spec read into the form and saved unchanged is the same spec, and valid`, () => {
      const schema = schemaOf(type);
      const back = specOf(schema, draftOf(schema, spec));
      expect(back).toEqual(spec);
      expect(() => checkSpec(type as ResourceType, back)).not.toThrow();
      expect(problemsOf(schema, draftOf(schema, spec))).toEqual([]);
    });
  }

  test("empty optional fields and an untouched optional object are left out; typed numbers become numbers", () => {
    const schema = schemaOf("service");
    const spec = specOf(schema, { image: "acme/web:1", port: "8080", command: "", limits: { cpu: "" }, source: { repo: "" } });
    expect(spec).toEqual({ image: "acme/web:1", port: 8080 });
    expect(problemsOf(schema, { image: "acme/web:1", limits: {} })).toEqual([]);
  });

  test("the browser-side checks name the field: required, whole numbers, bounds, patterns", () => {
    expect(problemsOf(schemaOf("job"), {})).toEqual([{ path: "spec.command", message: "is required" }]);
    expect(problemsOf(schemaOf("service"), { port: "80.5" })).toEqual([{ path: "spec.port", message: "must be a whole number" }]);
    expect(problemsOf(schemaOf("service"), { port: "70000" })).toEqual([{ path: "spec.port", message: "must be at most 65535" }]);
    expect(problemsOf(schemaOf("service"), { limits: { cpu: "0" } })).toEqual([{ path: "spec.limits.cpu", message: "must be more than 0" }]);
    expect(problemsOf(schemaOf("service"), { source: { repo: "not a repo" } })[0]?.path).toBe("spec.source.repo");
    expect(problemsOf(schemaOf("secret-group"), { variables: [{ name: "1BAD", kind: "secret" }] })[0]?.path).toBe("spec.variables.0.name");
  });
});
