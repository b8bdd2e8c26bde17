/**
 * Schemas of the npm registry routes. The package document and the publish body are npm's own
 * (the spec shows neither): only what ops reads from a publish is declared.
 */
import { t } from "elysia";

/** npm clients print `error` after the status line. */
export const NpmErrorBody = t.Object({ error: t.String() }, { title: "NpmErrorBody" });

export const NpmAttachment = t.Object({
  data: t.String({ description: "The tarball, base64" }),
  length: t.Optional(t.Integer()),
  content_type: t.Optional(t.String()),
});

export const NpmPublishBody = t.Object(
  {
    _id: t.Optional(t.String()),
    name: t.Optional(t.String()),
    description: t.Optional(t.String()),
    "dist-tags": t.Optional(t.Record(t.String(), t.String())),
    versions: t.Record(t.String(), t.Record(t.String(), t.Unknown()), { description: "Exactly one version manifest" }),
    _attachments: t.Record(t.String(), NpmAttachment, { description: "Exactly one tarball" }),
    access: t.Optional(t.Union([t.String(), t.Null()])),
  },
  { title: "NpmPublishBody", additionalProperties: true },
);

export const NpmPublishResponse = t.Object({ ok: t.Boolean(), id: t.String(), version: t.String() }, { title: "NpmPublishResponse" });
export const NpmDistTags = t.Record(t.String(), t.String(), { title: "NpmDistTags" });
export const NpmWhoami = t.Object({ username: t.String() }, { title: "NpmWhoami" });
export const NpmOk = t.Object({ ok: t.Boolean() });
export const NpmPackument = t.Record(t.String(), t.Unknown(), {
  title: "NpmPackageDocument",
  description: "The npm package document: full (application/json) or abbreviated (application/vnd.npm.install-v1+json)",
});

export const npmModels = { NpmErrorBody, NpmPublishBody, NpmPublishResponse, NpmDistTags, NpmWhoami, NpmPackageDocument: NpmPackument };
