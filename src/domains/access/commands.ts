/**
 * Offline administration: `ops admin create-operator` and `ops admin create-project` open the
 * data directory directly (no server needed, e.g. before the first start or when locked out) and
 * call the same services as the API, audited as the `system` actor.
 */
import { randomBytes } from "node:crypto";
import { loadConfig } from "../../core/config";
import { SERVER_FLAGS, EXIT, adminDataDir, envOverrides, type Command, type CommandContext } from "../../commands/types";
import type { Core } from "../../core/core";
import { SYSTEM_ACTOR, type AuditActor } from "../../core/audit";
import { tx } from "../../core/db/client";
import { addOperator } from "./operator-admin";
import { createProject, findProjectRow } from "./projects";
import { upsertMembership } from "./memberships";
import { fixedRole } from "./roles";
import { roles } from "./tables";
import { and, eq } from "drizzle-orm";

const ADMIN_ACTOR: AuditActor = { ...SYSTEM_ACTOR, context: { via_command: "ops admin" } };
const DATA_DIR = { "data-dir": SERVER_FLAGS["data-dir"] };

async function withCore(ctx: CommandContext, command: string, fn: (core: Core) => Promise<number>): Promise<number> {
  const config = loadConfig(ctx.env, envOverrides(ctx.flags, DATA_DIR), ctx.cwd);
  if (!adminDataDir(ctx, command, config.dataDir)) return EXIT.failure;
  const { createCore, closeCore } = await import("../../app");
  const core = createCore(config, { logSink: (line) => ctx.stderr(line + "\n") });
  try {
    return await fn(core);
  } finally {
    await closeCore(core);
  }
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

export const adminCreateOperatorCommand: Command = {
  name: "admin create-operator",
  side: "server",
  summary: "Create a person or machine operator offline",
  usage: "(--email EMAIL | --handle HANDLE) [--display-name NAME] [--role ROLE] [--project SLUG] [--password-stdin]",
  description:
    "Creates an operator in the data directory without a running server. A person gets a password: read from standard input with --password-stdin, else generated and printed once. --role gives a fixed role (owner, maintainer, developer, viewer) estate-wide, or in --project when given.",
  flags: {
    ...DATA_DIR,
    email: { type: "string", value: "EMAIL", description: "A person's email" },
    handle: { type: "string", value: "HANDLE", description: "A machine's handle" },
    "display-name": { type: "string", value: "NAME", description: "Display name (default: from the email or handle)" },
    role: { type: "string", value: "ROLE", description: "Fixed role slug (or a project role slug with --project)" },
    project: { type: "string", value: "SLUG", description: "Give the role in this project instead of estate-wide" },
    "password-stdin": { type: "boolean", description: "Read the person's password from standard input" },
  },
  async run(ctx) {
    const email = str(ctx.flags.email);
    const handle = str(ctx.flags.handle);
    if ((email === undefined) === (handle === undefined)) {
      ctx.stderr("ops admin create-operator: give exactly one of --email (a person) or --handle (a machine).\n");
      return EXIT.usage;
    }
    const roleSlug = str(ctx.flags.role);
    const projectSlug = str(ctx.flags.project);
    if (projectSlug && !roleSlug) {
      ctx.stderr("ops admin create-operator: --project needs --role.\n");
      return EXIT.usage;
    }
    let password: string | undefined;
    let generated = false;
    if (email) {
      if (ctx.flags["password-stdin"]) {
        password = (await Bun.stdin.text()).split(/\r?\n/)[0];
        if (!password) {
          ctx.stderr("ops admin create-operator: --password-stdin read an empty password.\n");
          return EXIT.usage;
        }
      } else {
        password = randomBytes(18).toString("base64url");
        generated = true;
      }
    }
    return withCore(ctx, "admin create-operator", async (core) => {
      const display = str(ctx.flags["display-name"]) ?? (email ? email.split("@")[0] : handle!);
      const estateRoleId = roleSlug && !projectSlug ? fixedRole(core, roleSlug).id : null;
      let projectRoleId: string | null = null;
      let projectId: string | null = null;
      if (projectSlug) {
        const project = findProjectRow(core, projectSlug);
        if (!project) {
          ctx.stderr(`ops admin create-operator: no project "${projectSlug}".\n`);
          return EXIT.failure;
        }
        projectId = project.id;
        const own = core.db.select().from(roles).where(and(eq(roles.projectId, project.id), eq(roles.slug, roleSlug!))).get();
        projectRoleId = own?.id ?? fixedRole(core, roleSlug!).id;
      }
      const row = await addOperator(
        core,
        email ? { kind: "person", email, display_name: display, password, estate_role_id: estateRoleId } : { kind: "machine", handle: handle!, display_name: display, estate_role_id: estateRoleId },
        ADMIN_ACTOR,
      );
      if (projectId && projectRoleId) tx(core.db, (t) => upsertMembership(core, t, row.id, projectId, projectRoleId));
      ctx.stdout(`created ${row.kind} ${row.email ?? row.handle} (${row.id})\n`);
      if (generated) ctx.stdout(`password: ${password}\n(shown once; change it in the console under Account → Password)\n`);
      return EXIT.ok;
    });
  },
};

export const adminCreateProjectCommand: Command = {
  name: "admin create-project",
  side: "server",
  summary: "Create a project offline",
  usage: "--slug SLUG [--name NAME] [--environment ENV]...",
  flags: {
    ...DATA_DIR,
    slug: { type: "string", value: "SLUG", description: "Project slug (lower-case letters, digits, dashes)" },
    name: { type: "string", value: "NAME", description: "Display name (default: the slug)" },
    environment: { type: "string", value: "ENV", multiple: true, description: "An environment, in order (default: production, staging)" },
  },
  async run(ctx) {
    const slug = str(ctx.flags.slug);
    if (!slug) {
      ctx.stderr("ops admin create-project: --slug is required.\n");
      return EXIT.usage;
    }
    const envs = Array.isArray(ctx.flags.environment) ? ctx.flags.environment : undefined;
    return withCore(ctx, "admin create-project", async (core) => {
      const row = createProject(core, { slug, name: str(ctx.flags.name) ?? slug, environments: envs && envs.length > 0 ? envs : undefined }, ADMIN_ACTOR);
      ctx.stdout(`created project ${row.slug} (${row.id}) with environments ${(JSON.parse(row.environments) as string[]).join(", ")}\n`);
      return EXIT.ok;
    });
  },
};
