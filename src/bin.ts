/**
 * The compiled binary's entry: `ops data-plane` and `ops ingress` load only the data plane's own
 * bundle (src/dataplane/main.ts); every other command loads the control plane's (src/main.ts).
 * Each is an entry point of its own in the binary (scripts/compile.ts), reached here by path, so
 * a data plane process never parses the control plane's code: less memory per process, a faster
 * start (decision 0600).
 */
export {};

const here = import.meta.url;
const compiled = here.includes("$bunfs") || here.includes("~BUN");
/** An entry point beside this one: the bundled `.js` in the binary, the `.ts` in a checkout. */
const entry = (name: string) => new URL(`./${name}.${compiled ? "js" : "ts"}`, here).href;

const argv = process.argv.slice(2);
if (argv[0] === "data-plane" || argv[0] === "ingress") {
  const { runPlaneCommand } = (await import(entry("dataplane/main"))) as typeof import("./dataplane/main");
  process.exit(await runPlaneCommand(argv));
} else {
  const { runCli } = (await import(entry("main"))) as typeof import("./main");
  const code = await runCli(argv, {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env: process.env,
    cwd: process.cwd(),
  });
  // `serve` never returns; every other command ends here.
  process.exit(code);
}
