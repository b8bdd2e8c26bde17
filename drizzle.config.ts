import { defineConfig } from "drizzle-kit";

// State database (ops.db): the kernel's tables and every domain's tables.ts.
export default defineConfig({
  dialect: "sqlite",
  schema: ["./src/core/**/tables.ts", "./src/domains/**/tables.ts"],
  out: "./migrations/ops",
  breakpoints: true,
});
