/**
 * Install codes and the installer. A person copies an install line on a project's page:
 * `curl -fsSL -H "Authorization: Bearer opsi_…" <server>/api/v1/cli/install.sh | sh`. The code
 * (single use, 600 s, digest only) carries the person's role in that project, checked against
 * the over-carry rule when the code is made; redeeming it mints a `cli` token pinned to the
 * project and renders `install.sh.tmpl` around it. Creation and redemption are audited.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Core } from "../../core/core";
import type { AuthContext } from "../../core/authz/plugin";
import type { RequestMeta } from "../../core/authz/principal";
import { actorOf } from "../../core/authz/principal";
import { auditAllowed, writeAudit } from "../../core/audit";
import { tx } from "../../core/db/client";
import { OpsError } from "../../core/errors";
import { isWellFormedSecret, newSecret, secretDigest, uuidv7 } from "../../core/ids";
import { assertMintable, expiryFor, findOperator, findRole, insertToken, operatorName, type RoleRow } from "../access/service";
import { installCodes } from "./tables";
import { anyReleasePublished } from "./releases";
import type { InstallCodeResponse } from "./model";
import { PACKAGE_VERSION } from "../../version";
import installTemplate from "../../../install.sh.tmpl" with { type: "text" };

export const INSTALL_CODE_TTL_S = 600;
export const INSTALLER_TOKEN_NAME = "ops CLI (installer)";

/**
 * Mint a single-use install code for the caller's role in `projectSlug`. A refusal (a machine, no
 * role there, a token pinned elsewhere or narrower than that role) is audited as a denied
 * `install-code.create`, like a refused mint.
 */
export function createInstallCode(core: Core, projectSlug: string, auth: AuthContext): InstallCodeResponse {
  const principal = auth.principal;
  const project = core.access.findProject(projectSlug);
  let role: RoleRow;
  try {
    if (principal.kind === "machine") throw new OpsError("forbidden", "A machine operator cannot create install codes.");
    if (!project) throw new OpsError("not_found", "No such project.");
    const memberships = core.access.grants(principal).memberships;
    const membership = memberships.find((m) => m.projectId === project.id) ?? memberships.find((m) => m.projectId === null);
    const found = membership ? findRole(core.db, membership.roleId) : null;
    if (!found) throw new OpsError("forbidden", `You have no role in ${project.slug}.`);
    role = found;
    assertMintable(core, principal, role, project.id);
  } catch (e) {
    if (e instanceof OpsError && (e.code === "forbidden" || e.code === "refused")) {
      writeAudit(core, core.db, { ...actorOf(principal, auth.meta), action: "install-code.create", target: `project:${projectSlug}`, outcome: "denied", reason: e.message, project: project?.slug ?? null });
    }
    throw e;
  }

  const code = newSecret("opsi_");
  const now = core.clock.now();
  tx(core.db, (t) => {
    const id = uuidv7(now);
    t.insert(installCodes)
      .values({
        id,
        digest: secretDigest(code),
        operatorId: principal.operatorId,
        roleId: role.id,
        roleName: role.displayName,
        scopes: role.permissions,
        projectId: project.id,
        createdAt: now,
        expiresAt: now + INSTALL_CODE_TTL_S * 1000,
      })
      .run();
    auditAllowed(core, t, actorOf(principal, auth.meta), "install-code.create", `install-code:${id}`, { project: project.slug }, { role: role.slug });
  });
  return { code, expires_in: INSTALL_CODE_TTL_S, role: role.displayName, token_project: project.slug, install_command: installCommand(core.config.publicUrl, code) };
}

/**
 * A compiled server publishes itself (self-publish.ts); one run from source (`npm start`) has no
 * binary, so the refusal names the whole way to one: whoever pastes the line there is usually the
 * administrator too.
 */
const NOTHING_PUBLISHED =
  "No ops CLI release is published yet. On the server's host, in the ops checkout: npm run build, then " +
  `./dist/ops admin publish-cli --file dist/ops --version ${PACKAGE_VERSION} (or upload a binary on the console's CLI page); ` +
  "a compiled server (./dist/ops serve) publishes its own binary when it starts. Then run this line again: the code is still unused.";

const BAD_CODE = "Send a valid install code as Authorization: Bearer opsi_…; codes work once and for 10 minutes.";

/** Single-quote a value for POSIX sh. */
export function shellQuote(v: string): string {
  return `'${v.replace(/'/g, `'\\''`)}'`;
}

/**
 * What the installer route answers instead of a JSON error: sh runs it, it prints the reason and
 * exits 1 (docs/decisions/0360).
 */
export function installerRefusal(reason: string): string {
  const line = `ops installer: error: ${reason.replace(/[\r\n]+/g, " ")}`;
  return `#!/bin/sh\n# ops refused this installer request.\nprintf '%s\\n' ${shellQuote(line)} 'ops installer: nothing was installed.' >&2\nexit 1\n`;
}

/**
 * The line a person pastes: curl hands the body to sh even on a refusal (--fail-with-body), so the
 * refusal script runs and the pipeline exits 1; curl's own failures need `set -o pipefail`
 * (docs/decisions/0360).
 */
export function installCommand(server: string, code: string): string {
  return `curl -sSL --fail-with-body -H ${shellQuote(`Authorization: Bearer ${code}`)} ${shellQuote(`${server}/api/v1/cli/install.sh`)} | sh`;
}

/** The installer with `server`, `token` and `project` filled in. */
export function renderInstaller(server: string, token: string, project: string | null): string {
  return installTemplate
    .replaceAll("{{SERVER_SH}}", shellQuote(server))
    .replaceAll("{{TOKEN_SH}}", shellQuote(token))
    .replaceAll("{{PROJECT_SH}}", shellQuote(project ?? ""))
    .replaceAll("{{SERVER}}", server.replace(/[\r\n]/g, ""));
}

/**
 * Redeem an install code for an installer holding a fresh `cli` token. 401 for a missing,
 * malformed, unknown, used or expired code (one message for all); 503 while no release is
 * published (the code stays unused, so the same line works once one is).
 */
export function redeemInstallCode(core: Core, bearer: string | null, meta: RequestMeta): string {
  if (!bearer || !isWellFormedSecret(bearer, ["opsi_"])) throw new OpsError("unauthorized", BAD_CODE);
  const digest = secretDigest(bearer);
  const now = core.clock.now();
  const row = core.db.select().from(installCodes).where(eq(installCodes.digest, digest)).get();
  if (!row || row.usedAt !== null || now >= row.expiresAt) throw new OpsError("unauthorized", BAD_CODE);
  if (!anyReleasePublished(core)) {
    throw new OpsError("unavailable", NOTHING_PUBLISHED, undefined, { headers: { "retry-after": "300" } });
  }
  const project = core.access.findProjectById(row.projectId);
  const { secret, slug } = tx(core.db, (t) => {
    const claimed = t.update(installCodes).set({ usedAt: now }).where(and(eq(installCodes.id, row.id), isNull(installCodes.usedAt))).returning({ id: installCodes.id }).all();
    if (claimed.length === 0) throw new OpsError("unauthorized", BAD_CODE);
    const operator = findOperator(t, row.operatorId);
    if (!operator || operator.suspendedAt !== null || !project) throw new OpsError("unauthorized", BAD_CODE);
    const role = { id: row.roleId, displayName: row.roleName, permissions: row.scopes } as RoleRow;
    const minted = insertToken(core, t, { operatorId: operator.id, name: INSTALLER_TOKEN_NAME, kind: "cli", role, projectId: project.id, expiresAt: expiryFor(core, undefined) });
    t.update(installCodes).set({ tokenId: minted.row.id }).where(eq(installCodes.id, row.id)).run();
    writeAudit(core, t, {
      actor: operator.kind === "person" ? operatorName(operator) : "api-token",
      operatorId: operator.id,
      via: "token",
      ip: meta.ip,
      action: "install-code.redeem",
      target: `install-code:${row.id}`,
      outcome: "allowed",
      project: project.slug,
      context: { request: meta.requestId, token: minted.row.id },
    });
    return { secret: minted.secret, slug: project.slug };
  });
  return renderInstaller(core.config.publicUrl, secret, slug);
}
