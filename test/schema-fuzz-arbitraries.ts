/**
 * Generators for the schema fuzz test (test/schema-fuzz.test.ts): fast-check arbitraries built
 * from the OpenAPI document's JSON Schemas, mixed with the hostile values a visitor or a member
 * can send (fractions, negatives, zero, huge numbers, empty and 10 000-character strings, wrong
 * JSON types, NUL bytes, traversal paths), and the request bodies that are not an object at all.
 */
import fc from "fast-check";

export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  nullable?: boolean;
  $ref?: string;
}

/** Values that break naive handlers: each once in every field's pool. */
export const HOSTILE: readonly unknown[] = [
  1.5,
  -1,
  0,
  2.5,
  1e21,
  Number.MAX_SAFE_INTEGER + 2,
  -9007199254740993,
  "1.5",
  "-1",
  "0",
  "1e400",
  "99999999999999999999999",
  "0x10",
  "NaN",
  "",
  " ",
  "x".repeat(10_000),
  "a\u0000b",
  "../../../etc/passwd",
  "%2e%2e%2f",
  "😀\u202e",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  true,
  false,
  null,
  [],
  [1, "a"],
  {},
  { nested: { deeper: [null] } },
];

export const hostile = fc.constantFrom(...HOSTILE);

/** Resolve a local `$ref` of the document (`#/components/schemas/X`). */
export function deref(doc: { components?: { schemas?: Record<string, JsonSchema> } }, s: JsonSchema | undefined): JsonSchema {
  let cur = s ?? {};
  for (let i = 0; i < 10 && cur.$ref; i++) {
    const name = cur.$ref.split("/").pop()!;
    cur = doc.components?.schemas?.[name] ?? {};
  }
  return cur;
}

type Doc = Parameters<typeof deref>[0];

/** A value the schema accepts (best effort: patterns and formats other than uuid are not honoured). */
export function valid(doc: Doc, schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(doc, schema);
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum && s.enum.length > 0) return fc.constantFrom(...s.enum);
  const alts = s.anyOf ?? s.oneOf;
  if (alts && alts.length > 0) return fc.oneof(...alts.map((a) => valid(doc, a, depth + 1)));
  if (s.allOf && s.allOf.length > 0) return valid(doc, s.allOf[0], depth + 1);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  const base = ((): fc.Arbitrary<unknown> => {
    switch (type) {
      case "integer":
        return fc.integer({ min: Math.max(s.minimum ?? -5, -1_000_000), max: Math.min(s.maximum ?? 5000, 1_000_000) });
      case "number":
        return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
      case "boolean":
        return fc.boolean();
      case "null":
        return fc.constant(null);
      case "array":
        return depth > 3 ? fc.constant([]) : fc.array(valid(doc, s.items, depth + 1), { maxLength: 3 });
      case "object": {
        if (depth > 3 || !s.properties) return fc.constant({});
        const keys = Object.keys(s.properties);
        const shape: Record<string, fc.Arbitrary<unknown>> = {};
        for (const k of keys) shape[k] = valid(doc, s.properties[k], depth + 1);
        return fc.record(shape, { requiredKeys: (s.required ?? []).filter((k) => keys.includes(k)) });
      }
      case "string":
        if (s.format === "uuid") return fc.uuid();
        if (s.format === "date-time") return fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(4102444800000) }).map((d) => d.toISOString());
        return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(s.maxLength ?? 24, 24) });
      default:
        return depth > 2 ? fc.constant(null) : fc.jsonValue({ maxDepth: 2 });
    }
  })();
  return s.nullable ? fc.option(base, { nil: null }) : base;
}

/** A field's value: mostly what the schema accepts, often something hostile. */
export function fieldValue(doc: Doc, schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 3, arbitrary: valid(doc, schema) }, { weight: 2, arbitrary: hostile });
}

/** An object body for `schema`: each declared field valid or hostile, sometimes an unknown field. */
export function objectBody(doc: Doc, schema: JsonSchema | undefined): fc.Arbitrary<Record<string, unknown>> {
  const s = deref(doc, schema);
  const props = s.properties ?? {};
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, v] of Object.entries(props)) shape[k] = fieldValue(doc, v);
  const keys = Object.keys(props);
  return fc
    .tuple(
      fc.record(shape, { requiredKeys: keys.filter((k) => (s.required ?? []).includes(k)) }),
      fc.option(fc.tuple(fc.constantFrom("unknown_field", "__proto__", "constructor", "id"), hostile), { nil: undefined }),
    )
    .map(([obj, extra]) => {
      const out: Record<string, unknown> = { ...obj };
      if (extra) Object.defineProperty(out, extra[0], { value: extra[1], enumerable: true, writable: true, configurable: true });
      return out;
    });
}

/** How a body is sent: JSON text, or bytes that are not valid UTF-8 or not JSON at all. */
export type BodyCase = { kind: "json"; value: unknown } | { kind: "raw"; bytes: Uint8Array; type: string };

const BAD_UTF8 = new Uint8Array([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d]);

export function bodyCase(doc: Doc, schema: JsonSchema | undefined): fc.Arbitrary<BodyCase> {
  const json = (a: fc.Arbitrary<unknown>) => a.map((value): BodyCase => ({ kind: "json", value }));
  return fc.oneof(
    { weight: 6, arbitrary: json(objectBody(doc, schema)) },
    { weight: 1, arbitrary: json(fc.constantFrom<unknown>("x", 123, 1.5, [], [{}], null, true)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<BodyCase>(
        { kind: "raw", bytes: BAD_UTF8, type: "application/json" },
        { kind: "raw", bytes: new TextEncoder().encode('{"name": '), type: "application/json" },
        { kind: "raw", bytes: new TextEncoder().encode("email=a%40b.c&password=x"), type: "application/x-www-form-urlencoded" },
        { kind: "raw", bytes: BAD_UTF8, type: "text/plain" },
      ),
    },
  );
}

/** A query or path value as text (objects and arrays as JSON, as a careless client would). */
export function asText(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === null || typeof v !== "object") return String(v);
  return JSON.stringify(v);
}
