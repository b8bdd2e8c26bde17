/**
 * `GET /me` answered from JSON text made once per cached body (docs/decisions/0641): the body is
 * cached per credential and access generation (identity.ts), and serialising and validating the
 * same object again on every request was a fifth of the route's time. The text is made when a body
 * is first served, after the same check the route's response schema makes (TypeBox, with the
 * formats Elysia registers); a body that fails it, or that holds anything the schema would strip,
 * goes back to Elysia as an object, to be validated and reported exactly as before. Keyed by the
 * body object itself, so the text is dropped with it when the access generation moves. The
 * content type is the one Elysia gives an object.
 */
import { Value } from "@sinclair/typebox/value";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import { me } from "./identity";
import { MeResponse } from "./model-identity";

const texts = new WeakMap<MeResponse, string | null>();

function textOf(body: MeResponse): string | null {
  if (!Value.Check(MeResponse, body)) return null;
  const text = JSON.stringify(body);
  return JSON.stringify(Value.Clean(MeResponse, Value.Clone(body))) === text ? text : null;
}

/** The caller's MeResponse: a ready JSON `Response` when its checked text is at hand, else the body. */
export function meAnswer(core: Core, auth: AuthContext): MeResponse | Response {
  const body = me(core, auth);
  let text = texts.get(body);
  if (text === undefined) {
    text = textOf(body);
    texts.set(body, text);
  }
  return text === null ? body : new Response(text, { headers: { "content-type": "application/json;charset=utf-8" } });
}
