/**
 * `ops install` and `ops uninstall`: ops as a system service on a VM (docs/decisions/0386). As
 * root: a system user `ops`, `/var/lib/ops` (0700, its data dir), `/etc/ops/ops.env` for the
 * OPS_* variables (written once, never overwritten), the binary at `/usr/local/bin/ops` (replaced
 * atomically) and the systemd unit `ops.service`, enabled. `--dry-run --root DIR` writes the same
 * files under DIR and changes nothing else, so `systemd-analyze verify --root=DIR` can check them.
 * `ops uninstall` stops and removes the unit and keeps the data, the configuration and the binary.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { EXIT, type Command, type CommandContext } from "./types";
import { compiledSelf } from "../reexec";

export const UNIT_NAME = "ops.service";
const BIN = "/usr/local/bin/ops";
const DATA = "/var/lib/ops";
const ENV_FILE = "/etc/ops/ops.env";
const UNIT = `/etc/systemd/system/${UNIT_NAME}`;

/**
 * The unit. Hardening that leaves the sandbox working (bubblewrap needs user, mount, pid and net
 * namespaces, a /proc it can mount, /dev/net/tun for pasta, and cgroups it can write); see
 * docs/decisions/0386 for what is left out and why.
 */
export function unitText(): string {
  return `[Unit]
Description=ops, a self-hosted operations platform
Documentation=https://github.com/ops/ops#readme
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
# Root, as DESIGN §6 assumes: each project's sandboxes drop to that project's own host uid, which
# only root can give (docs/decisions/0389). The sandbox, not the service, is the boundary.
User=root
EnvironmentFile=${ENV_FILE}
ExecStart=${BIN} serve
# \`systemctl reload ops\` re-executes the binary on the same ports (SIGHUP; docs/decisions/0387).
ExecReload=${BIN} restart --data-dir ${DATA}
Restart=on-failure
RestartSec=2
TimeoutStopSec=30
# Only ops itself gets the signals: its data plane (replicas and the ingress, docs/decisions/0600)
# outlives a crash or restart of ops, and ops stops it on a stop (SIGTERM) itself.
KillMode=process
LimitNOFILE=65536
WorkingDirectory=${DATA}
StateDirectory=ops
StateDirectoryMode=0700
# The network namespaces' resolv.conf and hosts (src/adapters/sandbox/index.ts).
RuntimeDirectory=ops-sandbox
RuntimeDirectoryMode=0755
# Kept across a restart of ops: the data plane's replicas keep using it.
RuntimeDirectoryPreserve=yes
# Sandboxes put their processes in cgroups of their own under this unit's.
Delegate=yes
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=${DATA}
ProtectHome=yes
PrivateTmp=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
UMask=0077

[Install]
WantedBy=multi-user.target
`;
}

export function envText(): string {
  return `# ops reads its settings from OPS_* variables; every one is listed in the README's
# Configuration table. systemd passes this file to \`ops serve\` (EnvironmentFile=).
OPS_DATA_DIR=${DATA}
OPS_LISTEN=127.0.0.1:8080
# OPS_PUBLIC_URL=https://ops.example.com
# OPS_INGRESS_LISTEN=0.0.0.0:80
# OPS_BACKUP_TO=s3://my-bucket/ops
# OPS_UPDATE_URL=https://example.com/ops/release.json
`;
}


function run(ctx: CommandContext, argv: string[], okCodes = [0]): number {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (!okCodes.includes(r.exitCode)) throw new Error(`${argv.join(" ")} failed: ${r.stderr.toString().trim()}`);
  ctx.stdout(`ran: ${argv.join(" ")}\n`);
  return r.exitCode;
}

function write(file: string, text: string, mode: number): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}

export const installCommand: Command = {
  name: "install",
  side: "server",
  summary: "Install ops as a systemd service (as root)",
  usage: "[--dry-run --root DIR] [--binary PATH]",
  description: `Creates the system user ops, ${DATA} (0700), ${ENV_FILE} (kept when it exists), the binary at ${BIN} and ${UNIT}, then enables the unit; start it with 'systemctl start ops'. --dry-run --root DIR writes the same files under DIR and nothing else (no user, no systemctl), e.g. for 'systemd-analyze verify --root=DIR ${UNIT_NAME}'.`,
  flags: {
    "dry-run": { type: "boolean", description: "Write the files under --root only; no user, no systemctl" },
    root: { type: "string", value: "DIR", description: "Install under DIR instead of / (needs --dry-run)" },
    binary: { type: "string", value: "PATH", description: "The ops binary to install (default: this one, when compiled)" },
  },
  async run(ctx) {
    const dry = ctx.flags["dry-run"] === true;
    const rootFlag = typeof ctx.flags.root === "string" ? path.resolve(ctx.cwd, ctx.flags.root) : null;
    if (rootFlag !== null && !dry) {
      ctx.stderr("ops install: --root needs --dry-run (a real install goes to /).\n");
      return EXIT.usage;
    }
    const root = rootFlag ?? "/";
    if (dry && rootFlag === null) {
      ctx.stderr("ops install: --dry-run needs --root DIR.\n");
      return EXIT.usage;
    }
    if (!dry && process.getuid?.() !== 0) {
      ctx.stderr("ops install: run it as root (sudo ops install), or try --dry-run --root DIR.\n");
      return EXIT.denied;
    }
    const binary = typeof ctx.flags.binary === "string" ? path.resolve(ctx.cwd, ctx.flags.binary) : compiledSelf();
    if (binary === null || !existsSync(binary)) {
      ctx.stderr("ops install: this ops runs from a checkout; name the compiled binary with --binary dist/ops.\n");
      return EXIT.usage;
    }
    const at = (p: string) => path.join(root, p);
    if (!dry) {
      const known = Bun.spawnSync(["id", "-u", "ops"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
      if (!known) run(ctx, ["useradd", "--system", "--user-group", "--home-dir", DATA, "--no-create-home", "--shell", "/usr/sbin/nologin", "ops"]);
    }
    mkdirSync(at(DATA), { recursive: true, mode: 0o700 });
    chmodSync(at(DATA), 0o700);
    if (!dry) run(ctx, ["chown", "ops:ops", DATA]);
    ctx.stdout(`data dir: ${at(DATA)} (0700)\n`);

    mkdirSync(path.dirname(at(BIN)), { recursive: true, mode: 0o755 });
    const tmp = `${at(BIN)}.new-${process.pid}`;
    copyFileSync(binary, tmp);
    chmodSync(tmp, 0o755);
    renameSync(tmp, at(BIN));
    ctx.stdout(`binary: ${at(BIN)}\n`);

    if (existsSync(at(ENV_FILE))) {
      ctx.stdout(`configuration: ${at(ENV_FILE)} (kept as it was)\n`);
    } else {
      write(at(ENV_FILE), envText(), 0o640);
      if (!dry) run(ctx, ["chown", "root:ops", ENV_FILE]);
      ctx.stdout(`configuration: ${at(ENV_FILE)} (new)\n`);
    }
    write(at(UNIT), unitText(), 0o644);
    ctx.stdout(`unit: ${at(UNIT)}\n`);
    if (!dry) {
      run(ctx, ["systemctl", "daemon-reload"]);
      run(ctx, ["systemctl", "enable", UNIT_NAME]);
      ctx.stdout("installed. Start it with: systemctl start ops\n");
    } else {
      ctx.stdout(`dry run: no user, no systemctl. Check the unit with: systemd-analyze verify --root=${root} ${UNIT_NAME}\n`);
    }
    return EXIT.ok;
  },
};

export const uninstallCommand: Command = {
  name: "uninstall",
  side: "server",
  summary: "Remove the ops systemd unit; keep the data, configuration and binary",
  usage: "[--dry-run --root DIR]",
  description: `Stops and disables ${UNIT_NAME} and removes ${UNIT}. ${DATA}, ${ENV_FILE}, ${BIN} and the user ops stay.`,
  flags: {
    "dry-run": { type: "boolean", description: "Remove the unit under --root only; no systemctl" },
    root: { type: "string", value: "DIR", description: "The root a dry-run install wrote to" },
  },
  async run(ctx) {
    const dry = ctx.flags["dry-run"] === true;
    const root = typeof ctx.flags.root === "string" ? path.resolve(ctx.cwd, ctx.flags.root) : "/";
    if (dry !== (root !== "/")) {
      ctx.stderr("ops uninstall: --dry-run and --root go together.\n");
      return EXIT.usage;
    }
    if (!dry && process.getuid?.() !== 0) {
      ctx.stderr("ops uninstall: run it as root.\n");
      return EXIT.denied;
    }
    if (!dry) run(ctx, ["systemctl", "disable", "--now", UNIT_NAME], [0, 1, 5]);
    rmSync(path.join(root, UNIT), { force: true });
    if (!dry) run(ctx, ["systemctl", "daemon-reload"]);
    ctx.stdout(`removed ${path.join(root, UNIT)}; kept ${path.join(root, DATA)}, ${path.join(root, ENV_FILE)} and ${path.join(root, BIN)}\n`);
    return EXIT.ok;
  },
};
