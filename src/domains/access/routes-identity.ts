/**
 * Sign-in, sign-out, password, identity and sessions. Self-service routes declare
 * `permission: "authenticated"`; sign-in is the one public route.
 */
import { Elysia, t } from "elysia";
import type { Core } from "../../core/core";
import { authzPlugin, requestMeta } from "../../core/authz/plugin";
import { errors, NoContent } from "../../core/http-schemas";
import { accessModels } from "./model";
import { MfaDeleteBody, SessionIdParams } from "./model-identity";
import { signIn, signOut, changePassword, sessionCookie, sessionView, guardSignInRequest } from "./signin";
import { listSessions, revokeSession } from "./identity";
import { meAnswer } from "./me-json";
import { SESSION_ABSOLUTE_MS } from "./sessions";
import { enrolMfa, confirmMfa, deleteMfa } from "./mfa";

export function identityRoutes(core: Core) {
  return new Elysia({ prefix: "/api/v1", tags: ["access"] })
    .use(authzPlugin(core))
    .model(accessModels)
    .post(
      "/auth/login",
      async ({ body, meta, set }) => {
        const { secret, session } = await signIn(core, body, meta);
        if (session.kind === "console") set.headers["set-cookie"] = sessionCookie(core, secret, Math.floor(SESSION_ABSOLUTE_MS.console / 1000));
        return { token: secret, session: sessionView(core, session, session.id) };
      },
      {
        public: true,
        // A form-encoded or cross-site sign-in is refused before its body is parsed (a JSON body
        // goes to the kernel's parser first, so the check runs again before the handler).
        parse: ({ request, server }) => guardSignInRequest(core, request, requestMeta(request, server)),
        beforeHandle: ({ request, meta }) => guardSignInRequest(core, request, meta),
        body: "LoginBody",
        detail: { summary: "Sign in with email and password (and the TOTP code once MFA is in force); console clients also get the ops_session cookie" },
        response: { 200: "LoginResponse", ...errors(401, 403, 415, 422, 429, 503) },
      },
    )
    .post(
      "/auth/logout",
      ({ auth, set, status }) => {
        signOut(core, auth);
        set.headers["set-cookie"] = sessionCookie(core, null, 0);
        return status(204, undefined);
      },
      {
        permission: "authenticated",
        detail: { summary: "End the credential the request came with (a session, or a minted token) and clear the cookie" },
        response: { 204: NoContent, ...errors(401, 403) },
      },
    )
    .post(
      "/auth/password",
      async ({ auth, body, status }) => {
        await changePassword(core, body, auth);
        return status(204, undefined);
      },
      {
        permission: "authenticated",
        body: "ChangePasswordBody",
        detail: { summary: "Change your own password; ends your other sessions" },
        response: { 204: NoContent, ...errors(401, 403, 422, 429) },
      },
    )
    .get("/me", ({ auth }) => meAnswer(core, auth), {
      permission: "authenticated",
      detail: { summary: "Who the caller is: memberships, policies that apply, token scopes" },
      response: { 200: "MeResponse", ...errors(401) },
    })
    .delete(
      "/me/mfa",
      ({ auth, body, status }) => {
        deleteMfa(core, auth, body?.code);
        return status(204, undefined);
      },
      {
        permission: "authenticated",
        body: t.Optional(MfaDeleteBody),
        detail: { summary: "Drop the caller's own TOTP enrolment; one in force needs the current code or a sign-in within the last 10 minutes" },
        response: { 204: NoContent, ...errors(401, 403, 409, 422, 429, 503) },
      },
    )
    .post(
      "/me/mfa/confirm",
      ({ auth, body, status }) => {
        confirmMfa(core, auth, body.code);
        return status(204, undefined);
      },
      {
        permission: "authenticated",
        body: "MfaConfirmBody",
        detail: { summary: "Confirm the staged TOTP seed with a current code; MFA is then in force" },
        response: { 204: NoContent, ...errors(401, 403, 409, 422, 429, 503) },
      },
    )
    .post("/me/mfa/enrol", ({ auth }) => enrolMfa(core, auth), {
      permission: "authenticated",
      detail: { summary: "Stage a fresh TOTP seed (returned once)" },
      response: { 200: "MfaEnrolResponse", ...errors(401, 403, 409, 503) },
    })
    .get("/me/sessions", ({ auth }) => listSessions(core, auth), {
      permission: "authenticated",
      detail: { summary: "The caller's live sessions" },
      response: { 200: t.Array(t.Ref("SessionResponse")), ...errors(401) },
    })
    .delete(
      "/me/sessions/:session_id",
      ({ auth, params, status }) => {
        revokeSession(core, params.session_id, auth);
        return status(204, undefined);
      },
      {
        permission: "authenticated",
        params: SessionIdParams,
        detail: { summary: "End one of the caller's sessions" },
        response: { 204: NoContent, ...errors(401, 404, 422) },
      },
    );
}
