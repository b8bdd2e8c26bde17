/**
 * A form generated from a resource type's JSON Schema (`GET /api/v1/catalog`): required fields
 * first, each field's description (which names its default) as its hint, a choice list for a
 * union of constants, a yes / no / default choice for an optional boolean, a fieldset for a
 * nested object, one line per item for a list of strings and rows for a list of objects.
 *
 * While editing, the form holds a draft: the spec with numbers kept as the text typed (so "0."
 * can become "0.5") and lists of strings as one text. `specOf` turns a draft into the spec the
 * API checks (empty optional fields left out); the server's schema check stays the authority,
 * and its 422 names the failing field.
 */
import type { JSX } from "preact";

export interface JsonSchema {
  type?: string;
  description?: string;
  default?: unknown;
  const?: unknown;
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
}

export type Draft = unknown;

/** A field's schema without a `null` branch, and whether null was allowed. */
function unwrap(s: JsonSchema): { schema: JsonSchema; nullable: boolean; description?: string } {
  const branches = s.anyOf?.filter((b) => b.type !== "null");
  if (s.anyOf && branches && branches.length === 1) return { schema: { ...branches[0], description: branches[0]?.description ?? s.description }, nullable: true, description: s.description ?? branches[0]?.description };
  return { schema: s, nullable: false, description: s.description };
}

/** The constants of a union of literals, or null when the schema is not one. */
function choicesOf(s: JsonSchema): string[] | null {
  if (!s.anyOf || s.anyOf.length === 0 || !s.anyOf.every((b) => b.const !== undefined)) return null;
  return s.anyOf.map((b) => String(b.const));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The draft of an existing spec (numbers as text, string lists as lines). */
export function draftOf(schema: JsonSchema, value: unknown): Draft {
  const { schema: s } = unwrap(schema);
  if (value === null || value === undefined) return undefined;
  if (s.type === "object" && isObject(value)) {
    const out: Record<string, Draft> = {};
    for (const [k, v] of Object.entries(value)) out[k] = s.properties?.[k] ? draftOf(s.properties[k] as JsonSchema, v) : v;
    return out;
  }
  if (s.type === "array" && Array.isArray(value)) {
    if (s.items?.type === "object") return value.map((v) => draftOf(s.items as JsonSchema, v));
    return value.map(String).join("\n");
  }
  if (s.type === "integer" || s.type === "number") return String(value);
  return value;
}

/** The spec a draft stands for: empty optional fields left out, text turned back into numbers and lists. */
export function specOf(schema: JsonSchema, draft: Draft, required = true): unknown {
  const { schema: s } = unwrap(schema);
  if (s.const !== undefined) return s.const;
  if (s.type === "object") {
    const d = isObject(draft) ? draft : {};
    const out: Record<string, unknown> = {};
    for (const [k, sub] of Object.entries(s.properties ?? {})) {
      const v = specOf(sub, d[k], (s.required ?? []).includes(k));
      if (v !== undefined) out[k] = v;
    }
    // An optional object holding nothing but empty lists (its required lists included) was left untouched.
    const untouched = Object.values(out).every((v) => Array.isArray(v) && v.length === 0);
    return untouched && !required ? undefined : out;
  }
  if (s.type === "array") {
    if (s.items?.type === "object") {
      const rows = Array.isArray(draft) ? draft.map((r) => specOf(s.items as JsonSchema, r)) : [];
      return rows.length === 0 && !required ? undefined : rows;
    }
    const lines = typeof draft === "string" ? draft.split("\n").map((l) => l.trim()).filter(Boolean) : [];
    return lines.length === 0 && !required ? undefined : lines;
  }
  if (draft === undefined || draft === "") return undefined;
  if (s.type === "integer" || s.type === "number") {
    const n = Number(draft);
    return Number.isFinite(n) ? n : draft;
  }
  return draft;
}

/** Why `draft` does not fit `schema` by the checks a browser can make cheaply, per field path. */
export function problemsOf(schema: JsonSchema, draft: Draft, path = "spec", required = true): Array<{ path: string; message: string }> {
  const { schema: s } = unwrap(schema);
  const out: Array<{ path: string; message: string }> = [];
  if (s.type === "object") {
    // An optional object left empty is left out of the spec, so its required fields do not apply.
    if (!required && specOf(schema, draft, false) === undefined) return out;
    const d = isObject(draft) ? draft : {};
    for (const [k, sub] of Object.entries(s.properties ?? {})) out.push(...problemsOf(sub, d[k], `${path}.${k}`, (s.required ?? []).includes(k)));
    return out;
  }
  if (s.type === "array" && s.items?.type === "object") {
    (Array.isArray(draft) ? draft : []).forEach((row, i) => out.push(...problemsOf(s.items as JsonSchema, row, `${path}.${i}`)));
    return out;
  }
  if (draft === undefined || draft === "") {
    if (required && s.const === undefined && s.type !== "array") out.push({ path, message: "is required" });
    return out;
  }
  if (s.type === "integer" || s.type === "number") {
    const n = Number(draft);
    if (!Number.isFinite(n) || (s.type === "integer" && !Number.isInteger(n))) out.push({ path, message: s.type === "integer" ? "must be a whole number" : "must be a number" });
    else if (s.minimum !== undefined && n < s.minimum) out.push({ path, message: `must be at least ${s.minimum}` });
    else if (s.exclusiveMinimum !== undefined && n <= s.exclusiveMinimum) out.push({ path, message: `must be more than ${s.exclusiveMinimum}` });
    else if (s.maximum !== undefined && n > s.maximum) out.push({ path, message: `must be at most ${s.maximum}` });
  } else if (s.type === "string" && typeof draft === "string" && s.pattern) {
    let re: RegExp | null = null;
    try {
      re = new RegExp(s.pattern, "u");
    } catch {
      re = null;
    }
    if (re && !re.test(draft)) out.push({ path, message: `does not match ${s.pattern}` });
  }
  return out;
}

const fieldId = (path: string) => `f-${path.replace(/[^A-Za-z0-9]+/g, "-")}`;
const WORDS: Record<string, string> = { cpu: "CPU", mb: "MiB", http: "HTTP", tls: "TLS", secs: "(seconds)", s3: "S3" };
const titleOf = (key: string) =>
  key
    .split("_")
    .map((w) => WORDS[w] ?? w)
    .join(" ")
    .replace(/^./, (c) => c.toUpperCase());

interface FieldProps {
  name: string;
  path: string;
  schema: JsonSchema;
  required: boolean;
  value: Draft;
  onChange(v: Draft): void;
  problems: ReadonlyMap<string, string>;
  /** Fields that may not change (a database's engine after creation): shown, not editable. */
  locked?: boolean;
}

function Hint(props: { id: string; text?: string; problem?: string }) {
  return (
    <>
      {props.text && (
        <p class="hint" id={`${props.id}-hint`}>
          {props.text}
        </p>
      )}
      {props.problem && (
        <p class="field-problem" id={`${props.id}-problem`}>
          {props.problem}
        </p>
      )}
    </>
  );
}

function Field(props: FieldProps): JSX.Element {
  const { schema: s, description } = unwrap(props.schema);
  const id = fieldId(props.path);
  const problem = props.problems.get(props.path);
  const described = [description ? `${id}-hint` : "", problem ? `${id}-problem` : ""].filter(Boolean).join(" ") || undefined;
  const label = (
    <label for={id}>
      {titleOf(props.name)}
      {props.required && <span class="req"> (required)</span>}
    </label>
  );
  if (s.type === "object") {
    return (
      <fieldset>
        <legend>{titleOf(props.name)}</legend>
        {description && <p class="hint">{description}</p>}
        <Fields schema={s} value={props.value} onChange={props.onChange} path={props.path} problems={props.problems} />
      </fieldset>
    );
  }
  if (s.type === "array" && s.items?.type === "object") return <Rows {...props} schema={s} description={description} />;
  const choices = choicesOf(s);
  if (s.const !== undefined) {
    return (
      <div class="field">
        {label}
        <input id={id} value={String(s.const)} readOnly aria-describedby={described} />
        <Hint id={id} text={description} />
      </div>
    );
  }
  if (choices || (s.type === "boolean" && !props.required)) {
    const opts = choices ?? ["true", "false"];
    const current = props.value === undefined ? "" : String(props.value);
    return (
      <div class="field">
        {label}
        <select
          id={id}
          value={current}
          disabled={props.locked}
          aria-describedby={described}
          onChange={(e) => {
            const v = e.currentTarget.value;
            props.onChange(v === "" ? undefined : s.type === "boolean" || !choices ? v === "true" : v);
          }}
        >
          {!props.required && <option value="">— (default)</option>}
          {opts.map((o) => (
            <option key={o} value={o}>
              {s.type === "boolean" || !choices ? (o === "true" ? "yes" : "no") : o}
            </option>
          ))}
        </select>
        <Hint id={id} text={description} problem={problem} />
      </div>
    );
  }
  if (s.type === "boolean") {
    return (
      <div class="field">
        <label class="choice">
          <input type="checkbox" id={id} checked={props.value === true} disabled={props.locked} onChange={(e) => props.onChange(e.currentTarget.checked)} aria-describedby={described} />
          {titleOf(props.name)}
        </label>
        <Hint id={id} text={description} problem={problem} />
      </div>
    );
  }
  if (s.type === "array") {
    return (
      <div class="field">
        {label}
        <textarea id={id} rows={3} value={typeof props.value === "string" ? props.value : ""} readOnly={props.locked} aria-describedby={described} onInput={(e) => props.onChange(e.currentTarget.value)} />
        <Hint id={id} text={`${description ? `${description}. ` : ""}One per line.`} problem={problem} />
      </div>
    );
  }
  const numeric = s.type === "integer" || s.type === "number";
  return (
    <div class="field">
      {label}
      <input
        id={id}
        inputMode={numeric ? (s.type === "integer" ? "numeric" : "decimal") : undefined}
        value={props.value === undefined || props.value === null ? "" : String(props.value)}
        readOnly={props.locked}
        maxLength={s.maxLength}
        placeholder={s.default !== undefined ? String(s.default) : undefined}
        aria-invalid={problem ? "true" : undefined}
        aria-describedby={described}
        autocomplete="off"
        spellcheck={false}
        onInput={(e) => props.onChange(e.currentTarget.value)}
      />
      <Hint id={id} text={description} problem={problem} />
    </div>
  );
}

/** A list of objects: one row of fields per item, with add and remove. */
function Rows(props: FieldProps & { description?: string }) {
  const rows = Array.isArray(props.value) ? (props.value as Draft[]) : [];
  const item = props.schema.items as JsonSchema;
  return (
    <fieldset>
      <legend>{titleOf(props.name)}</legend>
      {props.description && <p class="hint">{props.description}</p>}
      {rows.map((row, i) => (
        <div class="row-item" key={i}>
          <Fields schema={item} value={row} path={`${props.path}.${i}`} problems={props.problems} onChange={(v) => props.onChange(rows.map((r, j) => (j === i ? v : r)))} />
          <button type="button" class="small" onClick={() => props.onChange(rows.filter((_, j) => j !== i))} aria-label={`Remove ${titleOf(props.name).toLowerCase()} ${i + 1}`}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="small" onClick={() => props.onChange([...rows, {}])}>
        Add {titleOf(props.name).toLowerCase().replace(/s$/, "")}
      </button>
    </fieldset>
  );
}

/** Every property of an object schema, required ones first. */
export function Fields(props: { schema: JsonSchema; value: Draft; onChange(v: Draft): void; path?: string; problems: ReadonlyMap<string, string>; locked?: ReadonlySet<string> }) {
  const props_ = props.schema.properties ?? {};
  const required = new Set(props.schema.required ?? []);
  const keys = Object.keys(props_).sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
  const value = isObject(props.value) ? props.value : {};
  const path = props.path ?? "spec";
  return (
    <>
      {keys.map((k) => (
        <Field
          key={k}
          name={k}
          path={`${path}.${k}`}
          schema={props_[k] as JsonSchema}
          required={required.has(k)}
          value={value[k]}
          locked={props.locked?.has(k)}
          problems={props.problems}
          onChange={(v) => props.onChange({ ...value, [k]: v })}
        />
      ))}
    </>
  );
}
