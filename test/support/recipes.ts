/** The tested recipes of docs/guide/recipes.md, as the suites that build them read them. */
import { readFileSync } from "node:fs";
import path from "node:path";

const RECIPES = readFileSync(path.resolve(import.meta.dir, "../../docs/guide/recipes.md"), "utf8");

/** The fenced block of recipes.md that follows the line naming `file` under the heading `recipe`. */
export function recipeBlock(recipe: string, file: string): string {
  const section = RECIPES.split(/^## /m).find((s) => s.startsWith(recipe));
  if (!section) throw new Error(`recipes.md has no section "${recipe}"`);
  const m = new RegExp("`" + file.replace(/\./g, "\\.") + "`[^\\n]*\\n+```[a-z]*\\n([\\s\\S]*?)```").exec(section);
  if (!m) throw new Error(`recipes.md's "${recipe}" shows no ${file}`);
  return m[1]!;
}
