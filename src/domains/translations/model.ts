/**
 * Schemas of the translation routes, under the spec's names (document 3, Translations). Fields
 * marked "(ops)" are additions the spec does not list; every field it lists is here as it says.
 */
import { t } from "elysia";
import { BodyInt, ErrorBody } from "../../core/http-schemas";

const Kind = t.Union([t.Literal("own"), t.Literal("estate"), t.Literal("package")], {
  description: "(ops) own: the project's; estate: composed by every project; package: follows a claimed package's versions",
});

export const OwnBundleSummary = t.Object(
  {
    id: t.Integer(),
    languages: t.Integer({ description: "Locales with at least one value" }),
    name: t.String(),
    namespaces: t.Integer(),
    locales: t.Optional(t.Array(t.String(), { description: "(ops) The locales with at least one value" })),
    strings: t.Integer({ description: "Keys (a package bundle: keys its newest version ships)" }),
    kind: t.Optional(Kind),
    source_locale: t.Optional(t.String({ description: "(ops) The locale other locales fall back to" })),
    package: t.Optional(t.Union([t.String(), t.Null()], { description: "(ops) <registry>:<name> a package bundle follows" })),
    latest_version: t.Optional(t.Union([t.String(), t.Null()], { description: "(ops) Newest registered version of a package bundle" })),
  },
  { title: "OwnBundleSummary" },
);
export type OwnBundleSummary = typeof OwnBundleSummary.static;

export const SharedBundleSummary = t.Object(
  {
    id: t.Integer(),
    keys: t.Integer({ description: "Keys of the bundle at the version this project uses" }),
    name: t.String(),
    overrides: t.Integer({ description: "Keys this project overrides" }),
    owner: t.String({ description: "Who created the bundle" }),
    project: t.String({ description: "Home project: who edits the source copy" }),
    removed: t.Integer({ description: "Overridden keys the bundle no longer ships" }),
    version: t.Optional(t.Union([t.String(), t.Null()], { description: "Attached version of a package bundle; null for an estate-shared bundle" })),
    kind: t.Optional(Kind),
    source_locale: t.Optional(t.String()),
  },
  { title: "SharedBundleSummary" },
);
export type SharedBundleSummary = typeof SharedBundleSummary.static;

export const ProjectTranslationsResponse = t.Object(
  {
    own: t.Array(t.Ref("OwnBundleSummary"), { description: "Bundles whose home is this project" }),
    shared: t.Array(t.Ref("SharedBundleSummary"), { description: "Bundles this project composes: every estate-shared one, and the package bundles it attached" }),
  },
  { title: "ProjectTranslationsResponse" },
);
export type ProjectTranslationsResponse = { own: OwnBundleSummary[]; shared: SharedBundleSummary[] };

export const BundleSummary = t.Object(
  {
    id: t.Integer(),
    languages: t.Integer(),
    latest_version: t.Optional(t.Union([t.String(), t.Null()], { description: "Newest registered version of a package bundle" })),
    name: t.String({ description: "common, a project's own bundle, or a package name verbatim" }),
    owner: t.String({ description: "Who created the bundle" }),
    package: t.Optional(t.Union([t.String(), t.Null()], { description: "<registry>:<name> the bundle follows" })),
    project: t.String({ description: "Home project: whose translations.write members may edit it" }),
    strings: t.Integer(),
    kind: t.Optional(Kind),
    source_locale: t.Optional(t.String()),
  },
  { title: "BundleSummary" },
);
export type BundleSummary = typeof BundleSummary.static;

export const AttachRequest = t.Object(
  {
    bundle: BodyInt({ description: "Package bundle id" }),
    version: t.String({ description: "Installed version of the package; a bump is the same call again" }),
  },
  { title: "AttachRequest" },
);

export const CreateBundleRequest = t.Object(
  {
    name: t.String({ description: "Slug-shaped for an own bundle; ignored when package is given (a package bundle is named by its package)" }),
    estate: t.Optional(t.Boolean({ description: "Estate-shared: every project composes it and may override its keys" })),
    package: t.Optional(t.Union([t.String(), t.Null()], { description: "<registry>:<name> of a package this project claimed" })),
    source_locale: t.Optional(t.String({ description: "(ops) The bundle's source locale; default en" })),
  },
  { title: "CreateBundleRequest" },
);

export const CreateBundleResponse = t.Object({ id: t.Integer(), name: t.String(), owner: t.String() }, { title: "CreateBundleResponse" });

export const RegisterVersionRequest = t.Object(
  {
    locale: t.String({ description: "The locale the tree is in; the source locale's tree defines the key set" }),
    tree: t.Any({ description: "The locale file's tree as shipped: namespaces at the top, nested keys below (top-level texts go to the namespace translation)" }),
    version: t.String(),
  },
  { title: "RegisterVersionRequest" },
);

export const RegisterVersionResponse = t.Object(
  {
    keys: t.Integer({ description: "Keys this version ships in this locale file" }),
    skipped: t.Integer({ description: "Non-string or empty leaves" }),
    written: t.Integer({ description: "Values written; a translation already there is not rewritten" }),
  },
  { title: "RegisterVersionResponse" },
);
export type RegisterVersionResponse = typeof RegisterVersionResponse.static;

export const EntryResponse = t.Object(
  {
    key: t.String(),
    namespace: t.String(),
    updated_at: t.String(),
    values: t.Record(t.String(), t.String(), { description: "Locale to value; a locale with no value is absent" }),
    version: t.Integer({ description: "Highest across locales (staleness hint)" }),
    review: t.Optional(t.Array(t.String(), { description: "(ops) Locales whose value awaits review" })),
  },
  { title: "EntryResponse" },
);
export type EntryResponse = typeof EntryResponse.static;

const Status = t.Optional(t.Union([t.Literal("translated"), t.Literal("review"), t.Null()], { description: "translated (default) or review (awaiting approval)" }));

export const SetEntryRequest = t.Object({ key: t.String(), locale: t.String(), namespace: t.String(), value: t.String(), status: Status }, { title: "SetEntryRequest" });

export const SetOwnEntryRequest = t.Object(
  {
    bundle: t.String({ description: "The bundle's id, or the name of one of the project's own bundles" }),
    key: t.String(),
    locale: t.String(),
    namespace: t.String(),
    value: t.String(),
    status: Status,
  },
  { title: "SetOwnEntryRequest" },
);
export type SetOwnEntryRequest = typeof SetOwnEntryRequest.static;

export const SetEntryResponse = t.Object({ version: t.Integer() }, { title: "SetEntryResponse" });

export const SharedKeyRow = t.Object(
  {
    key: t.String(),
    namespace: t.String(),
    override_value: t.Optional(t.Union([t.String(), t.Null()], { description: "This project's override for the chosen locale" })),
    removed: t.Boolean({ description: "The version in use no longer ships the key (kept while an override uses it)" }),
    values: t.Record(t.String(), t.String(), { description: "The bundle's own values by locale (read only here)" }),
  },
  { title: "SharedKeyRow" },
);
export type SharedKeyRow = typeof SharedKeyRow.static;

export const SharedBundleResponse = t.Object(
  {
    id: t.Integer(),
    locale: t.String(),
    name: t.String(),
    owner: t.String(),
    project: t.String({ description: "Home project, where the source copy is edited" }),
    rows: t.Array(t.Ref("SharedKeyRow")),
    version: t.Optional(t.Union([t.String(), t.Null()])),
    source_locale: t.Optional(t.String()),
  },
  { title: "SharedBundleResponse" },
);
export type SharedBundleResponse = Omit<typeof SharedBundleResponse.static, "rows"> & { rows: SharedKeyRow[] };

export const SetOverrideRequest = t.Object({ key: t.String(), locale: t.String(), namespace: t.String(), value: t.String() }, { title: "SetOverrideRequest" });
export type SetOverrideRequest = typeof SetOverrideRequest.static;

export const OverrideResponse = t.Object({ version: t.Integer() }, { title: "OverrideResponse" });

export const translationModels = {
  OwnBundleSummary,
  SharedBundleSummary,
  ProjectTranslationsResponse,
  BundleSummary,
  AttachRequest,
  CreateBundleRequest,
  CreateBundleResponse,
  RegisterVersionRequest,
  RegisterVersionResponse,
  EntryResponse,
  SetEntryRequest,
  SetOwnEntryRequest,
  SetEntryResponse,
  SharedKeyRow,
  SharedBundleResponse,
  SetOverrideRequest,
  OverrideResponse,
  ErrorBody,
};
