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
  consoleModule,
];
