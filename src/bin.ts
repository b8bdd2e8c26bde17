export {};
/**
 * The compiled binary's entry: `ops data-plane` and `ops ingress` load only the data plane
 * (src/dataplane/main.ts); every other command goes through the command table (src/main.ts). The
 * modules behind a dynamic import are evaluated only when it runs, so the data plane's processes
 * start without the control plane's code (decision 0600).
 */
const argv = process.argv.slice(2);
if (argv[0] === "data-plane" || argv[0] === "ingress") {
  const { runPlaneCommand } = await import("./dataplane/main");
  process.exit(await runPlaneCommand(argv));
} else {
  const { runCli } = await import("./main");
  const code = await runCli(argv, {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env: process.env,
    cwd: process.cwd(),
  });
  // `serve` never returns; every other command ends here.
  process.exit(code);
}
