/**
 * The baseline for bench/health.bench.ts: a bare Bun.serve answering what /health answers, with
 * nothing else (no router, no hooks, no logging). Usage: bun bench/hello-server.ts <port>
 */
const port = Number(process.argv[2]);
const body = JSON.stringify({ status: "ok", version: "bench" });
Bun.serve({
  hostname: "127.0.0.1",
  port,
  fetch: () => new Response(body, { headers: { "content-type": "application/json" } }),
});
process.on("SIGTERM", () => process.exit(0));
console.log(`hello on ${port}`);
