/**
 * The command table: every `ops` command. Each definition names its side (server, client or
 * local; docs/decisions/0418-command-sides.md) and `ops --help` groups by it, in this order within
 * a side; the README's command table follows (scripts/readme-commands.ts). Server-side commands
 * live with the kernel and the domains; client commands in src/cli/.
 */
import type { Command } from "./commands/types";
import { serveCommand, migrateCommand, versionCommand } from "./commands/server";
import { doctorCommand } from "./commands/doctor";
import { installCommand, uninstallCommand } from "./commands/install";
import { restartCommand } from "./commands/restart";
import { dataPlaneCommand, ingressCommand } from "./commands/data-plane";
import { rotateSecretsKeyCommand, sealCommand, unsealCommand } from "./commands/secrets";
import { adminCreateOperatorCommand, adminCreateProjectCommand } from "./domains/access/commands";
import { publishCliCommand } from "./domains/cli/commands";
import { BACKUP_COMMANDS } from "./domains/backups/commands";
import { selfUpdateCommand } from "./domains/appliance/commands";
import { CLIENT_COMMANDS } from "./cli";

export const COMMANDS: readonly Command[] = [
  serveCommand,
  migrateCommand,
  versionCommand,
  doctorCommand,
  restartCommand,
  dataPlaneCommand,
  ingressCommand,
  installCommand,
  uninstallCommand,
  rotateSecretsKeyCommand,
  sealCommand,
  unsealCommand,
  adminCreateOperatorCommand,
  adminCreateProjectCommand,
  publishCliCommand,
  ...BACKUP_COMMANDS,
  selfUpdateCommand,
  ...CLIENT_COMMANDS,
];
