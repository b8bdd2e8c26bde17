/**
 * `ops whoami` and `ops logout`: who the saved token acts as, and revoking it server-side (with
 * the MCP client's token `ops login --client mcp` saved beside it).
 */
import { EXIT, type Command } from "../commands/types";
import { api } from "./http";
import { readConfigFile, requireClient, writeConfigFile, resolveClient, configPath } from "./config";
import { existsSync } from "node:fs";

interface Me {
  display_name: string;
  actor: string;
  kind: string;
  operator_id: string;
  via: string;
  token_id?: string | null;
  token_project?: string | null;
  token_scopes?: string[] | null;
  memberships: Array<{ project?: string | null; role_name: string }>;
}

interface TokenInfo {
  id: string;
  name: string;
  role_name: string;
  project?: string | null;
  expires_at?: string | null;
  kind: string;
}

export const whoamiCommand: Command = {
  name: "whoami",
  side: "client",
  summary: "Show who the saved token acts as, with its role and project",
  description: "Reads the server and token from ~/.config/ops/config.json, or OPS_SERVER and OPS_TOKEN.",
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const me = (await api<Me>(server, token, "GET", "/api/v1/me")).body;
    const who = me.kind === "person" ? `${me.display_name} <${me.actor}>` : `${me.display_name} (machine)`;
    ctx.stdout(`${who}\n`);
    ctx.stdout(`server:  ${server}\n`);
    if (me.token_id) {
      let info: TokenInfo | undefined;
      const list = await api<TokenInfo[]>(server, token, "GET", "/api/v1/tokens", undefined, [403, 404]);
      if (Array.isArray(list.body)) info = list.body.find((t) => t.id === me.token_id);
      ctx.stdout(`token:   ${info ? `${info.name} (${info.kind})` : me.token_id}\n`);
      ctx.stdout(`role:    ${info?.role_name ?? "(unknown)"}\n`);
      ctx.stdout(`project: ${me.token_project ?? "any project the operator may act in"}\n`);
      if (info?.expires_at) ctx.stdout(`expires: ${info.expires_at}\n`);
    } else {
      ctx.stdout(`session: ${me.via} session (acts with every role the operator holds)\n`);
      for (const m of me.memberships) ctx.stdout(`role:    ${m.role_name} in ${m.project ?? "every project"}\n`);
    }
    return EXIT.ok;
  },
};

/**
 * Revoke the token `ops login --client mcp` saved (as itself: any token may revoke itself). True
 * when it is revoked or the server no longer accepts it; false (said on stderr) when the server
 * could not be asked, so the token stays saved for another try.
 */
async function revokeMcpToken(ctx: { stderr: (s: string) => void }, server: string, token: string): Promise<boolean> {
  try {
    const me = await api<Me>(server, token, "GET", "/api/v1/me", undefined, [401]);
    if (me.status === 401 || !me.body.token_id) {
      ctx.stderr("the server no longer accepts the MCP client's token; forgetting it.\n");
      return true;
    }
    await api(server, token, "DELETE", `/api/v1/tokens/${encodeURIComponent(me.body.token_id)}`, undefined, [404]);
    ctx.stderr(`revoked the MCP client's token on ${server}.\n`);
    return true;
  } catch (e) {
    ctx.stderr(`could not revoke the MCP client's token on ${server} (${(e as Error).message}); it stays saved, run 'ops logout' again.\n`);
    return false;
  }
}

export const logoutCommand: Command = {
  name: "logout",
  side: "client",
  summary: "Revoke the saved token (and the MCP client's, if saved) on the server and forget them",
  async run(ctx) {
    const r = resolveClient(ctx.env);
    if (!r.server || !r.token) {
      ctx.stderr("not signed in; nothing to do.\n");
      return EXIT.ok;
    }
    const me = await api<Me>(r.server, r.token, "GET", "/api/v1/me", undefined, [401]);
    if (me.status === 401) {
      ctx.stderr("the server no longer accepts this token (expired or revoked); forgetting it.\n");
    } else if (me.body.token_id) {
      await api(r.server, r.token, "DELETE", `/api/v1/tokens/${encodeURIComponent(me.body.token_id)}`, undefined, [404]);
      ctx.stderr(`revoked the token on ${r.server}.\n`);
    } else {
      await api(r.server, r.token, "POST", "/api/v1/auth/logout", undefined, [404]);
      ctx.stderr(`signed the session out on ${r.server}.\n`);
    }
    const file = existsSync(configPath(ctx.env)) ? readConfigFile(ctx.env) : {};
    // An assistant keeps no access the person signed out of: the MCP login goes with the CLI's.
    const mcpGone = file.mcp_token ? await revokeMcpToken(ctx, file.mcp_server ?? r.server, file.mcp_token) : false;
    if (file.token || mcpGone) writeConfigFile(ctx.env, { ...file, token: null, ...(mcpGone ? { mcp_token: null, mcp_server: null } : {}) });
    if (r.tokenSource === "OPS_TOKEN") ctx.stderr("note: the token came from OPS_TOKEN; unset it too.\n");
    ctx.stdout("Logged out.\n");
    return EXIT.ok;
  },
};

