/**
 * The account page's MCP card: the person's MCP tokens (kind `mcp`, what an AI assistant acts
 * with) and how to connect a client — `ops login --client mcp` then `ops mcp` over stdio, or the
 * `/mcp` URL with a token for clients that speak Streamable HTTP. Revoking is on the Tokens card.
 */
import { useEffect, useState } from "preact/hooks";
import { api, type Token } from "../api";
import { when } from "../ui";

export function McpCard() {
  const [tokens, setTokens] = useState<Token[] | null>(null);
  useEffect(() => {
    api<Token[]>("GET", "/api/v1/tokens")
      .then((all) => setTokens(all.filter((t) => t.kind === "mcp" && !t.revoked)))
      .catch(() => setTokens([]));
  }, []);
  const origin = location.origin;
  return (
    <section class="card" aria-labelledby="mcp-title">
      <h2 id="mcp-title">AI assistants (MCP)</h2>
      <p>
        An assistant in your editor or chat app can use ops's tools with a token of kind <code>mcp</code>: it acts with the role you give it, every call is in the audit log, and it can never mint
        tokens or approve devices.
      </p>
      {tokens === null ? (
        <p aria-busy="true">Loading…</p>
      ) : tokens.length === 0 ? (
        <p class="muted">No MCP tokens yet.</p>
      ) : (
        <ul aria-label="Your MCP tokens">
          {tokens.map((t) => (
            <li key={t.id}>
              <strong>{t.name}</strong> — {t.role_name} in {t.project ?? "any project"}, expires {t.expires_at ? when(t.expires_at) : "never"}, last used {when(t.last_used)}
            </li>
          ))}
        </ul>
      )}
      <h3>Connect a client</h3>
      <p>Clients that start a command (stdio): sign in once, then configure the client to run <code>ops mcp</code>.</p>
      <pre aria-label="Commands for stdio clients">{`ops login --client mcp --server ${origin}\nops mcp`}</pre>
      <p>
        Clients that connect to a URL (Streamable HTTP): <code>{`${origin}/mcp`}</code> with the header <code>Authorization: Bearer &lt;token&gt;</code>, a token of kind mcp minted below.
      </p>
    </section>
  );
}
