import { defineConfig } from "drizzle-kit";

// State database (ops.db): the kernel's tables, every domain's tables.ts and the built-in git host's.
export default defineConfig({
  dialect: "sqlite",
  schema: ["./src/core/**/tables.ts", "./src/domains/**/tables.ts", "./src/adapters/**/tables.ts"],
  out: "./migrations/ops",
  breakpoints: true,
});
