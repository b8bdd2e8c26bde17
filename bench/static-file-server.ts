/**
 * The baseline for bench/cargo-index.bench.ts: a bare Bun.serve answering one file's bytes from
 * memory (with the headers a sparse index sends), nothing else. Usage: bun bench/static-file-server.ts <port> <file>
 */
import { readFileSync } from "node:fs";

const port = Number(process.argv[2]);
const body = readFileSync(process.argv[3]);
const etag = `"${new Bun.CryptoHasher("sha256").update(body).digest("hex").slice(0, 40)}"`;
Bun.serve({
  hostname: "127.0.0.1",
  port,
  fetch: (req) =>
    new URL(req.url).pathname === "/health"
      ? new Response("ok")
      : new Response(body, { headers: { "content-type": "text/plain; charset=utf-8", etag, "cache-control": "no-cache" } }),
});
process.on("SIGTERM", () => process.exit(0));
