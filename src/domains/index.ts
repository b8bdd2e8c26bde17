/**
 * Every domain module, in installation order. The access domain comes first: it installs the
 * authentication hooks the others rely on.
 */
import type { DomainModule } from "../core/core";
import { accessModule } from "./access";
import { notificationsModule } from "./notifications";
import { resourcesModule } from "./resources";
import { secretsModule } from "./secrets";
import { deviceModule } from "./device";
import { cliModule } from "./cli";
import { statusModule } from "./status";
import { registriesModule } from "./registries";
import { sourcesModule } from "./sources";
import { buildsModule } from "./builds";
import { deploymentsModule } from "./deployments";
import { certificatesModule } from "./certificates";
import { translationsModule } from "./translations";
import { observabilityModule } from "./observability";
import { alertsModule } from "./alerts";
import { modulesModule } from "./modules";
import { mcpModule } from "./mcp";
import { backupsModule } from "./backups";
import { applianceModule } from "./appliance";
import { consoleModule } from "../console/module";

export const DOMAINS: readonly DomainModule[] = [
  accessModule,
  notificationsModule,
  resourcesModule,
  secretsModule,
  deviceModule,
  cliModule,
  statusModule,
  registriesModule,
  sourcesModule,
  buildsModule,
  deploymentsModule,
  certificatesModule,
  translationsModule,
  observabilityModule,
  alertsModule,
  modulesModule,
  mcpModule,
  backupsModule,
  applianceModule,
  consoleModule,
];
