/**
 * Schemas of the CLI routes (the spec's names).
 */
import { t } from "elysia";

export const InstallCodeBody = t.Object({
  project: t.String({ description: "The project whose Develop page the install line was copied on" }),
});
export type InstallCodeBody = typeof InstallCodeBody.static;

export const InstallCodeResponse = t.Object({
  code: t.String({ description: "Prefix `opsi_`; goes in the install line's Authorization header; returned once; only its digest is stored" }),
  expires_in: t.Integer({ description: "Seconds until the code stops working" }),
  role: t.String({ description: "Role the machine's token will carry" }),
  token_project: t.Optional(t.Union([t.String(), t.Null()])),
  install_command: t.String({ description: "The exact line to paste into a shell: curl fetches the installer with the code and pipes it into sh" }),
});
export type InstallCodeResponse = typeof InstallCodeResponse.static;

export const CliReleaseResponse = t.Object({
  digest: t.String({ description: "Lowercase hex SHA-256 of the binary" }),
  download: t.String({ description: "A path: /api/v1/cli/releases/{version}/{target}/download" }),
  published_at: t.String({ description: "The current release is decided by this, never by the version number" }),
  size_bytes: t.Integer(),
  target: t.String({ description: "`<platform>-<arch>`, echoed back" }),
  version: t.String({ description: "What the CLI reports for itself after updating" }),
});
export type CliReleaseResponse = typeof CliReleaseResponse.static;

export const ReleaseQuery = t.Object({
  target: t.String({ description: "`<platform>-<arch>`, e.g. linux-x64" }),
});

export const PublishReleaseQuery = t.Object({
  version: t.String({ description: "The version number the binary reports, e.g. 0.1.0 (`ops version` prints `ops 0.1.0`)" }),
  target: t.String({ description: "`<platform>-<arch>`: linux-x64, linux-arm64, linux-x64-musl, linux-arm64-musl, darwin-x64, darwin-arm64, windows-x64" }),
  digest: t.Optional(t.String({ description: "Expected lowercase hex SHA-256; the upload is refused when the bytes differ" })),
});

export const ReleaseParams = t.Object({ version: t.String(), target: t.String() });

export const cliModels = { InstallCodeBody, InstallCodeResponse, CliReleaseResponse };
