/**
 * The house rules of docs/style.md, counted over the source tree: files in `src/` stay under 400
 * lines, a domain reaches another only through its `service.ts` (a `tables.ts` may name another
 * `tables.ts` for foreign keys), the kernel imports no domain and an adapter only a `service.ts`,
 * no source file imports `test/`, no import circle among source files, no console screen imports
 * another, and `docs/decisions.md` stays an index. `test/house.test.ts`
 * asserts the counts; `bun test/support/house.ts` prints them.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dir, "../..");
export const MAX_LINES = 400;
export const MAX_DECISIONS_INDEX_LINES = 800;

/** One import of one file: the specifier as written, the file it resolves to (if in the repo). */
export interface Edge {
  from: string;
  to: string;
  spec: string;
  /** `import type …` / `export type …`: erased at run time, still a dependency of the design. */
  typeOnly: boolean;
  /** `await import("…")`: loaded when called, still a dependency of the design. */
  dynamic: boolean;
}

const isTest = (rel: string) => /\.test\.tsx?$/.test(rel);
const isGenerated = (rel: string) => /\.generated\.tsx?$/.test(rel);

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.tsx?$/.test(name) && !name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

/** Source files of `src/`, relative to the repository root: tests aside. */
export function sourceFiles(): string[] {
  return walk(path.join(ROOT, "src"))
    .map((p) => path.relative(ROOT, p))
    .filter((rel) => !isTest(rel))
    .sort();
}

/** Strips comments so an example in a JSDoc block is not an import; strings are kept as they are. */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

const STATIC = /^\s*(import|export)\s+(type\s+)?([^;"'`]*?\bfrom\s*)?["']([^"']+)["']/gm;
const DYNAMIC = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

function resolve(fromRel: string, spec: string): string | null {
  if (!spec.startsWith(".")) return null;
  const base = path.resolve(ROOT, path.dirname(fromRel), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, path.join(base, "index.ts"), path.join(base, "index.tsx")]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return path.relative(ROOT, candidate);
  }
  return null;
}

/** Every relative import of a file that resolves to a TypeScript file of the repository. */
export function importsOf(rel: string): Edge[] {
  const text = stripComments(readFileSync(path.join(ROOT, rel), "utf8"));
  const edges: Edge[] = [];
  for (const m of text.matchAll(STATIC)) {
    const to = resolve(rel, m[4]);
    if (to && /\.tsx?$/.test(to)) edges.push({ from: rel, to, spec: m[4], typeOnly: Boolean(m[2]), dynamic: false });
  }
  for (const m of text.matchAll(DYNAMIC)) {
    const to = resolve(rel, m[1]);
    if (to && /\.tsx?$/.test(to)) edges.push({ from: rel, to, spec: m[1], typeOnly: false, dynamic: true });
  }
  return edges;
}

/** Files of `src/` over MAX_LINES lines, generated files aside. */
export function longFiles(files = sourceFiles()): { file: string; lines: number }[] {
  return files
    .filter((rel) => !isGenerated(rel))
    .map((file) => ({ file, lines: readFileSync(path.join(ROOT, file), "utf8").replace(/\n$/, "").split("\n").length }))
    .filter((f) => f.lines > MAX_LINES);
}

/** `src/domains/<name>/…` → name; null outside the domains. */
export function domainOf(rel: string): string | null {
  const m = /^src\/domains\/([^/]+)\/./.exec(rel);
  return m ? m[1] : null;
}

/** What a file imports; the counts take it as a parameter so a test can hand them a made-up graph. */
export type EdgesOf = (rel: string) => Edge[];

/**
 * Imports that break the floors. A domain file names another domain's file only when that is its
 * `service.ts` (a `tables.ts` may name another `tables.ts`, for foreign keys). Outside the
 * domains, the kernel (`src/core/`) names no domain, an adapter (`src/adapters/`) only a
 * `service.ts`, and the rest (the app, the command table, the domain list) a domain's `service.ts`,
 * its module (`index.ts`) or its commands (`commands.ts`).
 */
export function crossDomainImports(files = sourceFiles(), edgesOf: EdgesOf = importsOf): Edge[] {
  const bad: Edge[] = [];
  for (const rel of files) {
    for (const e of edgesOf(rel)) {
      const to = domainOf(e.to);
      if (!to) continue;
      const from = domainOf(rel);
      if (from === to) continue;
      const entry = e.to.slice(`src/domains/${to}/`.length);
      if (from === null) {
        if (rel.startsWith("src/core/")) bad.push(e);
        else if (rel.startsWith("src/adapters/")) {
          if (entry !== "service.ts") bad.push(e);
        } else if (!["service.ts", "index.ts", "commands.ts"].includes(entry)) bad.push(e);
        continue;
      }
      if (entry === "service.ts") continue;
      if (path.basename(rel) === "tables.ts" && path.basename(e.to) === "tables.ts") continue;
      bad.push(e);
    }
  }
  return bad;
}

/** Imports of anything under `test/` from a source file of `src/`. */
export function testImports(files = sourceFiles()): Edge[] {
  return files.flatMap((rel) => importsOf(rel).filter((e) => e.to.startsWith("test/")));
}

/**
 * The import circles among source files: strongly connected components of more than one file
 * (or a file importing itself), over every static, type-only and dynamic import.
 */
export function importCircles(files = sourceFiles(), edgesOf: EdgesOf = importsOf): string[][] {
  const set = new Set(files);
  const graph = new Map<string, string[]>();
  for (const rel of files) graph.set(rel, [...new Set(edgesOf(rel).map((e) => e.to).filter((to) => set.has(to)))]);
  // Tarjan's algorithm, iterative so a deep chain does not overflow the stack.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  for (const start of files) {
    if (idx.has(start)) continue;
    const work: { node: string; next: number }[] = [{ node: start, next: 0 }];
    idx.set(start, index);
    low.set(start, index++);
    stack.push(start);
    onStack.add(start);
    while (work.length) {
      const frame = work[work.length - 1];
      const succ = graph.get(frame.node)!;
      if (frame.next < succ.length) {
        const w = succ[frame.next++];
        if (!idx.has(w)) {
          idx.set(w, index);
          low.set(w, index++);
          stack.push(w);
          onStack.add(w);
          work.push({ node: w, next: 0 });
        } else if (onStack.has(w)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, idx.get(w)!));
        }
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) === idx.get(frame.node)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== frame.node);
        if (comp.length > 1 || graph.get(frame.node)!.includes(frame.node)) out.push(comp.sort());
      }
    }
  }
  return out;
}

/** Console screens importing another screen (only `sections.tsx` picks screens). */
export function screenImports(files = sourceFiles()): Edge[] {
  return files
    .filter((rel) => rel.startsWith("src/console/screens/"))
    .flatMap((rel) => importsOf(rel).filter((e) => e.to.startsWith("src/console/screens/")));
}

/** Lines of `docs/decisions.md`, the index of the decision records (0 when there is none). */
export function decisionsIndexLines(): number {
  const p = path.join(ROOT, "docs/decisions.md");
  return existsSync(p) ? readFileSync(p, "utf8").split("\n").length : 0;
}

if (import.meta.main) {
  const files = sourceFiles();
  const show = (title: string, items: string[]) => {
    console.log(`${title}: ${items.length}`);
    for (const i of items) console.log(`  ${i}`);
  };
  show("files over 400 lines", longFiles(files).map((f) => `${f.file} ${f.lines}`));
  show("cross-domain imports", crossDomainImports(files).map((e) => `${e.from} -> ${e.to}${e.typeOnly ? " (type)" : ""}${e.dynamic ? " (dynamic)" : ""}`));
  show("imports of test/", testImports(files).map((e) => `${e.from} -> ${e.to}`));
  show("import circles", importCircles(files).map((c) => `${c.length}: ${c.join(" ")}`));
  show("screen imports", screenImports(files).map((e) => `${e.from} -> ${e.to}`));
  console.log(`docs/decisions.md lines: ${decisionsIndexLines()}`);
}
