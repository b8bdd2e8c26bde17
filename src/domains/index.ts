/**
 * Every domain module, in installation order. The access domain comes first: it installs the
 * authentication hooks the others rely on.
 */
import type { DomainModule } from "../core/core";
import { accessModule } from "./access";
import { resourcesModule } from "./resources";
import { secretsModule } from "./secrets";
import { registriesModule } from "./registries";

export const DOMAINS: readonly DomainModule[] = [accessModule, resourcesModule, secretsModule, registriesModule];
