/**
 * The root wrapper's staging (decision 0204): with ops as root, every folder a sandbox binds is
 * mounted by root first, so a host path with a symbolic link in it must never be bound — root
 * would follow it where the sandbox user could not. Run as root, as CI runs it.
 */
import { describe, test, expect, afterAll } from "bun:test";
import { mkdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { tempDir } from "../harness";
import { sandboxArgv } from "../../src/adapters/sandbox/bwrap";
import { findSandboxTools } from "../../src/adapters/sandbox/users";
import { rootOnlyFolder } from "./files-support";

const vault = rootOnlyFolder();
afterAll(() => vault.remove());

async function run(argv: string[]): Promise<{ code: number; out: string }> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin" } });
  const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code, out: out + err };
}

describe("a root ops staging a sandbox's folders", () => {
  test("binds a plain folder, and refuses one whose path holds a link (to a root-only folder): nothing of it is read", async () => {
    expect(process.getuid?.()).toBe(0);
    const tools = findSandboxTools();
    if (typeof tools === "string") throw new Error(tools);
    const base = tempDir("ops-staging-");
    const plain = path.join(base, "plain");
    mkdirSync(plain);
    await Bun.write(path.join(plain, "hello.txt"), "hello\n");
    symlinkSync(vault.dir, path.join(base, "lnk"));
    const ids = { uid: 65534, gid: 65534 };

    const ok = await run(sandboxArgv(tools, { mounts: [{ host: plain, inside: "/w", readOnly: true }], chdir: "/w", user: "host", hostUser: ids }, ["/bin/cat", "/w/hello.txt"]));
    expect(ok).toEqual({ code: 0, out: "hello\n" });

    for (const host of [path.join(base, "lnk"), path.join(base, "lnk", "x")]) {
      const refused = await run(sandboxArgv(tools, { mounts: [{ host, inside: "/w" }], chdir: "/", user: "host", hostUser: ids }, ["/bin/cat", "/w/x/secret.txt", "/w/secret.txt"]));
      expect(refused.code).toBe(125);
      expect(refused.out).toContain(`ops: ${host} is not a plain path: not bound into the sandbox`);
      expect(refused.out).not.toContain(vault.secret);
    }
  });
});
