/**
 * `ops login` run as a person at a terminal runs it: the real binary with only the environment
 * given, its stderr read until it prints the one-time code and waits for approval; the test then
 * approves (or denies) the code and awaits the end, or stops it there.
 */

export interface LoginRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface StartedLogin {
  /** The one-time code it printed (XXXX-XXXX). */
  userCode: string;
  /** Its stderr up to and including "Waiting for approval". */
  stderrSoFar: string;
  /** Its exit code and whole output, once it ends. */
  finished: Promise<LoginRun>;
  /** End it now (SIGTERM) and wait for it. */
  stop(): Promise<void>;
}

/** Start `<binary> login --server <server> [args]` with `env`, in `/`, and read it up to its one-time code. */
export async function startLogin(binary: string, server: string, env: Record<string, string>, args: string[] = []): Promise<StartedLogin> {
  const proc = Bun.spawn([binary, "login", "--server", server, ...args], { env, cwd: "/", stdout: "pipe", stderr: "pipe" });
  const reader = proc.stderr.getReader();
  const decoder = new TextDecoder();
  let stderr = "";
  let code: string | null = null;
  try {
    while (code === null || !stderr.includes("Waiting for approval")) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`ops login ended before printing a code:\n${stderr}`);
      stderr += decoder.decode(value);
      code = /one-time code: ([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1] ?? null;
    }
  } catch (e) {
    proc.kill("SIGTERM");
    await proc.exited;
    throw e;
  }
  const stderrSoFar = stderr;
  const rest = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      stderr += decoder.decode(value);
    }
    return stderr;
  })();
  const finished = (async () => {
    const [stdout, err, exit] = await Promise.all([new Response(proc.stdout).text(), rest, proc.exited]);
    return { code: exit, stdout, stderr: err };
  })();
  return {
    userCode: code,
    stderrSoFar,
    finished,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
