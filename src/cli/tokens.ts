/**
 * `ops tokens list|mint|revoke`: the caller's minted tokens. A new token's secret is printed once,
 * alone on stdout (so `ops tokens mint … > file` captures just the secret).
 */
import { EXIT, type Command } from "../commands/types";
import { api, CliError } from "./http";
import { requireClient } from "./config";

interface TokenResponse {
  id: string;
  name: string;
  kind: string;
  role_name: string;
  project?: string | null;
  expires_at?: string | null;
  last_used?: string | null;
  revoked: boolean;
  operator: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join("  ")).join("\n") + "\n";
}

export const tokensListCommand: Command = {
  name: "tokens list",
  side: "client",
  summary: "List your tokens (all tokens when you manage operators)",
  flags: { json: { type: "boolean", description: "Print JSON" } },
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const list = (await api<TokenResponse[]>(server, token, "GET", "/api/v1/tokens")).body;
    if (ctx.flags.json) {
      ctx.stdout(JSON.stringify(list, null, 2) + "\n");
      return EXIT.ok;
    }
    if (list.length === 0) {
      ctx.stdout("No tokens.\n");
      return EXIT.ok;
    }
    const rows = [["ID", "NAME", "KIND", "ROLE", "PROJECT", "EXPIRES", "STATE"]];
    for (const t of list) {
      rows.push([t.id, t.name, t.kind, t.role_name, t.project ?? "-", t.expires_at?.slice(0, 10) ?? "never", t.revoked ? "revoked" : "active"]);
    }
    ctx.stdout(table(rows));
    return EXIT.ok;
  },
};

async function resolveRoleId(server: string, token: string, role: string, project: string | null): Promise<string> {
  if (UUID.test(role)) return role;
  const wanted = role.toLowerCase();
  if (project) {
    const roles = (await api<Array<{ id: string; slug: string; display_name: string }>>(server, token, "GET", `/api/v1/projects/${encodeURIComponent(project)}/roles`)).body;
    const hit = roles.find((r) => r.slug === wanted || r.display_name.toLowerCase() === wanted);
    if (hit) return hit.id;
    throw new CliError(`no role "${role}" in ${project}; run 'ops tokens mint --help'.`, EXIT.usage);
  }
  const me = (await api<{ memberships: Array<{ role_id: string; role_slug: string; role_name: string }> }>(server, token, "GET", "/api/v1/me")).body;
  const hit = me.memberships.find((m) => m.role_slug === wanted || m.role_name.toLowerCase() === wanted);
  if (hit) return hit.role_id;
  throw new CliError(`cannot find role "${role}": pass --project to look it up in a project, or the role's id.`, EXIT.usage);
}

export const tokensMintCommand: Command = {
  name: "tokens mint",
  side: "client",
  summary: "Mint a token (the secret is printed once)",
  usage: "--name NAME --role ROLE [--project P] [--kind api|cli|mcp] [--expires-in-days N]",
  description: "ROLE is a role's slug (owner, maintainer, developer, viewer, or a project role with --project) or its id. A token never carries more than you do.",
  flags: {
    name: { type: "string", value: "NAME", description: "Shown on the token list" },
    role: { type: "string", value: "ROLE", description: "Role slug or id" },
    project: { type: "string", value: "P", description: "Pin the token to this project" },
    kind: { type: "string", value: "KIND", description: "api (default), cli or mcp" },
    "expires-in-days": { type: "string", value: "N", description: "Days until it expires; 0 = never (default: the server's setting)" },
  },
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const name = ctx.flags.name;
    const role = ctx.flags.role;
    if (typeof name !== "string" || typeof role !== "string") throw new CliError("--name and --role are required.", EXIT.usage);
    const project = typeof ctx.flags.project === "string" ? ctx.flags.project : null;
    let expires: number | undefined;
    if (typeof ctx.flags["expires-in-days"] === "string") {
      expires = Number(ctx.flags["expires-in-days"]);
      if (!Number.isInteger(expires) || expires < 0) throw new CliError("--expires-in-days must be a whole number of days (0 = never).", EXIT.usage);
    }
    const roleId = await resolveRoleId(server, token, role, project);
    const body = { name, role_id: roleId, project, kind: typeof ctx.flags.kind === "string" ? ctx.flags.kind : "api", ...(expires !== undefined ? { expires_in_days: expires } : {}) };
    const minted = (await api<{ secret: string; token: TokenResponse }>(server, token, "POST", "/api/v1/tokens", body)).body;
    ctx.stderr(`minted ${minted.token.name} (${minted.token.id}), role ${minted.token.role_name}${minted.token.project ? ` in ${minted.token.project}` : ""}; the secret below is shown once:\n`);
    ctx.stdout(`${minted.secret}\n`);
    return EXIT.ok;
  },
};

export const tokensRevokeCommand: Command = {
  name: "tokens revoke",
  side: "client",
  summary: "Revoke a token by id (takes effect at once)",
  usage: "ID",
  maxArgs: 1,
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const id = ctx.args[0];
    if (!id || !UUID.test(id)) throw new CliError("give the token's id (see 'ops tokens list').", EXIT.usage);
    const res = await api(server, token, "DELETE", `/api/v1/tokens/${id}`, undefined, [404]);
    if (res.status === 404) throw new CliError(`no token ${id} that you may revoke.`, EXIT.failure);
    ctx.stdout(`Revoked ${id}.\n`);
    return EXIT.ok;
  },
};
