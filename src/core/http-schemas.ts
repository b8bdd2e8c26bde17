/**
 * Schemas every domain's routes share in OpenAPI: the error body, and response maps for the
 * common statuses so each route lists what it can answer.
 */
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
