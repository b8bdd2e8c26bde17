/**
 * `ops update`: replace this binary with the server's current release for its target.
 *
 * The download goes to a file beside the executable (same filesystem, so the final rename is
 * atomic), hashed while it streams; the digest and size must match what the server published,
 * and the new binary must run and report the release's version, before it is fsynced and renamed
 * over `process.execPath`. Anything failing leaves the old executable untouched and removes the
 * partial file.
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import path from "node:path";
import { EXIT, type Command } from "../commands/types";
import { VERSION } from "../version";
import { api, CliError, send } from "./http";
import { requireClient } from "./config";

interface Release {
  digest: string;
  download: string;
  published_at: string;
  size_bytes: number;
  target: string;
  version: string;
}

export function thisTarget(): string {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  return `${platform}-${process.arch}`;
}

function mb(n: number): string {
  return (n / (1024 * 1024)).toFixed(1);
}

export const updateCommand: Command = {
  name: "update",
  side: "client",
  summary: "Replace this ops binary with the server's current release",
  usage: "[--check]",
  description:
    "Fetches the current release for this platform (the one published last on the server, whatever its version), downloads it with a progress line, verifies its SHA-256 and replaces this executable atomically. On any failure the current binary stays as it is.",
  flags: { check: { type: "boolean", description: "Only say whether an update is available" } },
  async run(ctx) {
    const { server, token } = requireClient(ctx.env);
    const target = thisTarget();
    const release = (await api<Release>(server, token, "GET", `/api/v1/cli/release?target=${encodeURIComponent(target)}`)).body;
    if (release.version === VERSION) {
      ctx.stdout(`ops ${VERSION} is the current release for ${target}; nothing to do.\n`);
      return EXIT.ok;
    }
    if (ctx.flags.check) {
      ctx.stdout(`ops ${release.version} is available (this is ${VERSION}); run 'ops update'.\n`);
      return EXIT.ok;
    }
    if (!Bun.isStandaloneExecutable) throw new CliError("ops update replaces a compiled ops binary; this one runs from source.", EXIT.failure);
    if (!/^[0-9a-f]{64}$/.test(release.digest)) throw new CliError("the server's release has no valid digest; not updating.", EXIT.failure);

    const exe = process.execPath;
    const dir = path.dirname(exe);
    const staged = path.join(dir, `.${path.basename(exe)}.update-${process.pid}`);
    const res = await send(server, release.download, { token });
    if (!res.ok || !res.body) {
      if (res.status === 401) throw new CliError("the server refused the token (expired or revoked). Run 'ops login'.", EXIT.auth);
      throw new CliError(`the download of ops ${release.version} failed (${res.status}).`, EXIT.failure);
    }
    let fh;
    try {
      fh = await open(staged, "wx", 0o755);
    } catch (e) {
      throw new CliError(`cannot write next to ${exe} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); update it as the user who installed it.`, EXIT.failure);
    }
    let ok = false;
    try {
      const hasher = new Bun.CryptoHasher("sha256");
      const total = release.size_bytes;
      let got = 0;
      let lastPct = -1;
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        got += value.byteLength;
        if (got > total) throw new CliError(`the download is larger than the published ${total} bytes; kept ops ${VERSION}.`, EXIT.failure);
        hasher.update(value);
        let off = 0;
        while (off < value.byteLength) off += (await fh.write(value, off, value.byteLength - off)).bytesWritten;
        const pct = total > 0 ? Math.floor((got / total) * 100) : 100;
        if (pct !== lastPct && (pct % 5 === 0 || pct === 100)) {
          lastPct = pct;
          ctx.stderr(`\rdownloading ops ${release.version}: ${String(pct).padStart(3)}% (${mb(got)}/${mb(total)} MB)`);
        }
      }
      ctx.stderr("\n");
      const digest = hasher.digest("hex");
      if (got !== total || digest !== release.digest) {
        throw new CliError(`digest mismatch: the server published sha256 ${release.digest} but the download is ${digest} (${got} bytes). Kept ops ${VERSION}.`, EXIT.failure);
      }
      await fh.sync();
      await fh.close();
      fh = null;
      const check = Bun.spawnSync([staged, "--version"], { stdout: "pipe", stderr: "pipe", env: { PATH: ctx.env.PATH ?? "" } });
      const reported = check.stdout.toString().trim();
      if (check.exitCode !== 0 || reported !== `ops ${release.version}`) {
        throw new CliError(`the downloaded binary does not run as ops ${release.version} (it said "${reported.slice(0, 80)}"). Kept ops ${VERSION}.`, EXIT.failure);
      }
      renameSync(staged, exe);
      ok = true;
      try {
        const d = openSync(dir, "r");
        fsyncSync(d);
        closeSync(d);
      } catch {
        // Some filesystems cannot fsync a directory; the rename itself has happened.
      }
    } finally {
      if (fh) await fh.close().catch(() => {});
      if (!ok) rmSync(staged, { force: true });
    }
    ctx.stdout(`Updated ops ${VERSION} → ${release.version} (${target}, sha256 ${release.digest.slice(0, 12)}…) at ${exe}\n`);
    return EXIT.ok;
  },
};
