/**
 * Schemas every domain's routes share in OpenAPI: the error body, and response maps for the
 * common statuses so each route lists what it can answer.
 */
import { Type, type TInteger, type TNull, type TUnion } from "@sinclair/typebox";
import { t } from "elysia";

export const ErrorBody = t.Object(
  {
    error: t.String({ description: "snake_case error code" }),
    message: t.String({ description: "One sentence for a human" }),
    details: t.Optional(t.Record(t.String(), t.Unknown())),
  },
  { title: "ErrorBody" },
);

/** `{ 401: ErrorBody, 403: ErrorBody, … }` for the listed statuses, to spread into `response`. */
export function errors<S extends number>(...statuses: S[]): Record<S, typeof ErrorBody> {
  const out = {} as Record<S, typeof ErrorBody>;
  for (const s of statuses) out[s] = ErrorBody;
  return out;
}

/** A 204 response with no body. */
export const NoContent = t.Void({ description: "No content" });

/** Digits allowed in an integer parameter: 15 keep every value a safe integer and a SQLite INTEGER. */
const MAX_DIGITS = 15;

/** Alternatives matching every decimal in [a, b], both of the same length and without leading zeros. */
function sameLength(a: string, b: string): string[] {
  if (a.length === 0) return [""];
  if (a[0] === b[0]) return sameLength(a.slice(1), b.slice(1)).map((x) => a[0] + x);
  const rest = a.length - 1;
  const zeros = "0".repeat(rest);
  const nines = "9".repeat(rest);
  const out: string[] = [];
  let lo = Number(a[0]);
  let hi = Number(b[0]);
  if (a.slice(1) !== zeros) {
    out.push(...sameLength(a.slice(1), nines).map((x) => a[0] + x));
    lo++;
  }
  const tail = b.slice(1) !== nines;
  if (tail) hi--;
  if (lo <= hi) out.push((lo === hi ? String(lo) : `[${lo}-${hi}]`) + (rest > 0 ? `[0-9]{${rest}}` : ""));
  if (tail) out.push(...sameLength(zeros, b.slice(1)).map((x) => b[0] + x));
  return out;
}

/** A regular expression matching exactly the decimals from `min` to `max` (no sign, no leading zero). */
export function integerRangePattern(min: number, max: number): string {
  const alts: string[] = [];
  for (let len = String(min).length; len <= String(max).length; len++) {
    const lo = Math.max(min, len === 1 ? 0 : 10 ** (len - 1));
    const hi = Math.min(max, 10 ** len - 1);
    if (lo <= hi) alts.push(...sameLength(String(lo), String(hi)));
  }
  return `^(${alts.join("|")})$`;
}

/**
 * An integer query or path parameter. The text must be plain digits within the bounds (no sign,
 * fraction, exponent, hex or blank), checked before anything decodes it, so `?limit=1.5` or
 * `?limit=0` is a 422 naming `limit` and never reaches SQLite as a REAL. Without a `maximum`, up
 * to 15 digits. Handlers receive a number.
 */
export function IntParam(opts: { minimum?: number; maximum?: number; description?: string } = {}) {
  const min = opts.minimum ?? 0;
  const max = opts.maximum ?? 10 ** MAX_DIGITS - 1;
  const range = opts.maximum === undefined ? `${min} or more` : `from ${min} to ${max}`;
  return t
    .Transform(t.String({ pattern: integerRangePattern(min, max), description: opts.description ?? `An integer ${range}`, error: `must be a whole number ${range}` }))
    .Decode((v) => Number(v))
    .Encode((v) => String(v));
}

/**
 * An integer field of a JSON body: a JSON number without a fraction, never a numeric string.
 * Elysia's `t.Integer` also takes `"3"` (it is made for text such as a query), so
 * `{"build_id":"1"}` would reach the handler; the spec's integer fields take numbers only, and a
 * refusal names the field and the bounds. `nullable` also admits `null`.
 */
type BodyIntOptions = { minimum?: number; maximum?: number; description?: string };
export function BodyInt(opts: BodyIntOptions & { nullable: true }): TUnion<[TInteger, TNull]>;
export function BodyInt(opts?: BodyIntOptions & { nullable?: false }): TInteger;
export function BodyInt(opts: BodyIntOptions & { nullable?: boolean } = {}): TInteger | TUnion<[TInteger, TNull]> {
  const { nullable, description, ...bounds } = opts;
  const range =
    bounds.minimum !== undefined && bounds.maximum !== undefined ? ` from ${bounds.minimum} to ${bounds.maximum}` : bounds.minimum !== undefined ? ` of ${bounds.minimum} or more` : bounds.maximum !== undefined ? ` of ${bounds.maximum} or less` : "";
  const error = `must be a whole number${range} (a JSON number, not text)${nullable ? ", or null" : ""}`;
  const int = Type.Integer({ ...bounds, error, ...(nullable || description === undefined ? {} : { description }) });
  return nullable ? t.Union([int, t.Null()], { error, ...(description === undefined ? {} : { description }) }) : int;
}

/**
 * An integer id in a path. Anything that is not one (`0`, `abc`, `1.5`) names nothing, so the
 * route answers 404 for it as for an id nothing has (the spec's answer for an unknown build, save,
 * scan or run), not a 422. Handlers receive a number; 0 for text that is no id.
 */
export function IdParam(description = "An integer id") {
  return t
    .Transform(t.String({ description }))
    .Decode((v) => (/^[1-9][0-9]{0,14}$/.test(v) ? Number(v) : 0))
    .Encode((v) => String(v));
}
